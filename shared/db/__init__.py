"""Postgres: pool and units of work (`database`), row records, one repository per aggregate."""

from shared.db.database import Connection, Database

__all__ = ["Connection", "Database"]
