"""Postgres: pool and units of work (`database`), row records, one repository per aggregate.

`Database` and `Connection` load psycopg on first use, so modules that only need the record
types (the events' schema, the wire models) do not pay for the driver at import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shared.db.database import Connection, Database

__all__ = ["Connection", "Database"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from shared.db import database  # psycopg on first use

        return getattr(database, name)
    raise AttributeError(f"module 'shared.db' has no attribute {name!r}")
