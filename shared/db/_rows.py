"""Fetch rows straight into record dataclasses."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields
from datetime import datetime
from decimal import Decimal
from functools import cache
from typing import Any, LiteralString, TypeVar, get_args, get_type_hints
from uuid import UUID

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


def record_from_json(record: type[T], data: Mapping[str, Any]) -> T:
    """A record from `to_jsonb(row)` (how one statement returns rows of several tables):
    uuids, timestamps and numerics typed as the record's fields say (a numeric's JSON number
    has at most 14 significant digits here — money is `numeric(14,6)` — so its float prints
    back exactly)."""
    hints = _hints(record)  # type: ignore[arg-type]  # classes are hashable
    return record(**{name: _typed(hint, data.get(name)) for name, hint in hints.items()})


def records_from_json(record: type[T], items: Sequence[Mapping[str, Any]] | None) -> list[T]:
    """Records from `jsonb_agg(row)` (none for SQL NULL)."""
    return [record_from_json(record, item) for item in items or ()]


@cache
def _hints(record: type[Any]) -> dict[str, Any]:
    names = {f.name for f in fields(record)}
    return {k: v for k, v in get_type_hints(record).items() if k in names}


def _typed(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    kinds = {a for a in get_args(hint) if a is not type(None)} or {hint}
    if UUID in kinds:
        return UUID(value)
    if datetime in kinds:
        return datetime.fromisoformat(value)
    if Decimal in kinds:
        return Decimal(str(value))
    return value
