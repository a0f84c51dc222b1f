"""Helpers the built-in tool families share: row fetching, text search, partial updates.

Every query runs on the connection the executor opened as the user, so RLS limits it to that
user's rows; the queries themselves never filter by user and never see a user id. New rows take
their owner from the JWT claims (`auth.uid()`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, LiteralString, NamedTuple, Self, TypeVar

from psycopg import sql
from pydantic import BaseModel, model_validator

from shared.db.database import Connection
from shared.kernel.errors import NotFound
from shared.tools.builtin.outputs import PREVIEW_CHARS
from shared.tools.schema import is_nullable
from shared.tools.values import ToolArgs

M = TypeVar("M", bound=BaseModel)

MAX_SEARCH_WORDS = 8


def columns(model: type[BaseModel], table: str) -> sql.Composed:
    """`table.field, ...` for every field of `model` (fields are named after columns)."""
    return sql.SQL(", ").join(sql.Identifier(table, name) for name in model.model_fields)


async def fetch_models(
    conn: Connection, model: type[M], query: sql.Composed | sql.SQL, params: Mapping[str, Any]
) -> list[M]:
    """Every row of `query` validated into `model`."""
    cur = await conn.execute(query, params)
    return [model.model_validate(row) for row in await cur.fetchall()]


async def fetch_model(
    conn: Connection, model: type[M], query: sql.Composed | sql.SQL, params: Mapping[str, Any]
) -> M | None:
    """The first row of `query` as `model`, or None."""
    found = await fetch_models(conn, model, query, params)
    return found[0] if found else None


async def require(
    conn: Connection,
    model: type[M],
    query: sql.Composed | sql.SQL,
    params: Mapping[str, Any],
    what: str,
) -> M:
    """The row of `query`, or `NotFound` naming `what` (missing and not-yours look the same)."""
    found = await fetch_model(conn, model, query, params)
    if found is None:
        raise NotFound(f"{what} not found")
    return found


async def ensure_visible(conn: Connection, table: LiteralString, row_id: Any, what: str) -> None:
    """Raise `NotFound` unless the user can see row `row_id` of `table`."""
    query = sql.SQL("SELECT 1 FROM {} WHERE id = %(id)s").format(sql.Identifier(table))
    cur = await conn.execute(query, {"id": row_id})
    if await cur.fetchone() is None:
        raise NotFound(f"{what} {row_id} not found")


@dataclass(frozen=True, slots=True)
class TextSearch:
    """How one table is searched: its trigram-indexed text and its id-lookup function.

    Under RLS a non-LEAKPROOF predicate such as `ILIKE` is never an index condition, so the
    trigram index is reached through `candidates`, a SECURITY DEFINER function in the private
    schema (migrations 5e7a2b9c0101, 9b1e6c4d0401) that returns the ids of the caller's rows
    matching one pattern, using the index. The query itself still reads the rows under RLS and
    checks every word.
    """

    expression: LiteralString
    """The searched text, spelled exactly like the table's trigram index expression."""
    id_column: LiteralString
    candidates: LiteralString
    """The `<table>_matching(pattern)` function."""

    def predicate(self, query: str | None) -> tuple[sql.Composable, dict[str, str]]:
        """A predicate matching every word of `query` (case-insensitively), and its parameters."""
        words = (query or "").split()[:MAX_SEARCH_WORDS]
        if not words:
            return sql.SQL("TRUE"), {}
        params = {f"word{i}": f"%{_escape(word)}%" for i, word in enumerate(words)}
        anchor = max(params, key=lambda name: len(params[name]))  # the most selective word
        # `= ANY(ARRAY(...))` makes the ids one array, looked up through the primary key
        # (uuid equality is LEAKPROOF, so RLS lets it be an index condition).
        lookup = sql.SQL("{} = ANY(ARRAY(SELECT {}({})))").format(
            sql.SQL(self.id_column), sql.SQL(self.candidates), sql.Placeholder(anchor)
        )
        every_word = [
            sql.SQL("({}) ILIKE {}").format(sql.SQL(self.expression), sql.Placeholder(name))
            for name in params
        ]
        return sql.SQL(" AND ").join([lookup, *every_word]), params


class Filter(NamedTuple):
    """An optional equality filter of a search: `column = value`, unless `value` is None."""

    column: LiteralString
    sql_type: LiteralString
    """The value's type for Postgres (a None parameter must be typed: `uuid`, `text`)."""
    value: object


def search_page(
    search: TextSearch,
    query: str | None,
    *,
    select: LiteralString,
    source: LiteralString,
    title: LiteralString,
    then: LiteralString,
    filters: Sequence[Filter],
    page: tuple[int, int],
) -> tuple[sql.Composed, dict[str, Any]]:
    """A page of search results: the rows of `source` matching every word of `query`, under
    each filter, those whose `title` holds the whole query first, then by `then`; `select`
    holds the columns and may use `{chars}` for the preview's length. `page` is (limit,
    offset). The SQL and its parameters."""
    matches, params = search.predicate(query)
    where = [
        sql.SQL("({value}::{type} IS NULL OR {column} = {value})").format(
            value=sql.Placeholder(f"filter{i}"), type=sql.SQL(f.sql_type), column=sql.SQL(f.column)
        )
        for i, f in enumerate(filters)
    ]
    statement = sql.SQL(
        "SELECT " + select + ", count(*) OVER () AS total FROM " + source + " WHERE {matches} "
        "ORDER BY (" + title + " ILIKE %(phrase)s) IS TRUE DESC, " + then + " "
        "LIMIT %(limit)s OFFSET %(offset)s"
    ).format(chars=PREVIEW_CHARS, matches=sql.SQL(" AND ").join([matches, *where]))
    limit, offset = page
    found = {f"filter{i}": f.value for i, f in enumerate(filters)}
    return statement, {
        **params,
        **found,
        "phrase": like_pattern(query),
        "limit": limit,
        "offset": offset,
    }


def _escape(word: str) -> str:
    return word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def like_pattern(query: str | None) -> str | None:
    """The whole query as one ILIKE pattern (for ranking exact phrase hits first)."""
    return f"%{_escape(query.strip())}%" if query and query.strip() else None


class Updates(ToolArgs):
    """A partial update: only the fields present change; fields declared `nullable()` may be
    set to null (clearing them), the others may not."""

    @model_validator(mode="after")
    def _meaningful(self) -> Self:
        if not self.model_fields_set:
            raise ValueError("give at least one field to change")
        refused = sorted(
            name
            for name in self.model_fields_set
            if getattr(self, name) is None and not is_nullable(type(self), name)
        )
        if refused:
            raise ValueError(f"{', '.join(refused)} cannot be null")
        return self

    def changes(self) -> dict[str, Any]:
        """The fields to set, by column name."""
        return {name: getattr(self, name) for name in sorted(self.model_fields_set)}


def set_clause(changes: Mapping[str, Any], *, allowed: Sequence[str]) -> sql.Composed:
    """`col = %(col)s, ...` for `changes`, whose keys must all be in `allowed` columns."""
    unknown = set(changes) - set(allowed)
    if unknown:  # the models define the whitelist; this guards the SQL against a model slip
        raise ValueError(f"not updatable: {sorted(unknown)}")
    return sql.SQL(", ").join(
        sql.SQL("{} = {}").format(sql.Identifier(name), sql.Placeholder(name)) for name in changes
    )
