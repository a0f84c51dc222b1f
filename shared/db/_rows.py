"""Fetch rows straight into record dataclasses."""

from __future__ import annotations

from typing import Any, LiteralString, TypeVar

from psycopg import AsyncConnection
from psycopg.rows import class_row

T = TypeVar("T")


async def fetch_optional(
    conn: AsyncConnection[Any], record: type[T], query: LiteralString, params: Any = None
) -> T | None:
    """The first row of `query` as a `record`, or None."""
    async with conn.cursor(row_factory=class_row(record)) as cur:
        await cur.execute(query, params)
        return await cur.fetchone()


async def fetch_one(
    conn: AsyncConnection[Any], record: type[T], query: LiteralString, params: Any = None
) -> T:
    """Exactly one row of `query` as a `record` (for INSERT … RETURNING and known keys)."""
    row = await fetch_optional(conn, record, query, params)
    if row is None:
        raise LookupError(f"query returned no {record.__name__} row")
    return row


async def fetch_all(
    conn: AsyncConnection[Any], record: type[T], query: LiteralString, params: Any = None
) -> list[T]:
    """Every row of `query` as `record`s."""
    async with conn.cursor(row_factory=class_row(record)) as cur:
        await cur.execute(query, params)
        return await cur.fetchall()
