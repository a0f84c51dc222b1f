"""Fetch rows straight into records (`shared.db.records`: named tuples)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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
    converters = _converters(record)  # type: ignore[arg-type]  # classes are hashable
    return record(
        **{
            name: None if (value := data.get(name)) is None else convert(value)
            for name, convert in converters.items()
        }
    )


def records_from_json(record: type[T], items: Sequence[Mapping[str, Any]] | None) -> list[T]:
    """Records from `jsonb_agg(row)` (none for SQL NULL)."""
    return [record_from_json(record, item) for item in items or ()]


@cache
def _converters(record: type[Any]) -> dict[str, Callable[[Any], Any]]:
    """How each field of `record` is made from its JSON value (not None)."""
    names = set(record._fields)
    return {k: _converter(v) for k, v in get_type_hints(record).items() if k in names}


def _converter(hint: Any) -> Callable[[Any], Any]:
    kinds = {a for a in get_args(hint) if a is not type(None)} or {hint}
    if UUID in kinds:
        return UUID
    if datetime in kinds:
        return datetime.fromisoformat
    if Decimal in kinds:
        return lambda value: Decimal(str(value))
    return lambda value: value
