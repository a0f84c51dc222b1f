"""Paged, compact lists: a read tool never shortens a list without saying so.

Every list a built-in read tool returns is one page: `limit` rows from `offset`, with `total`
(how many match in all) and — when rows are left — `next_offset` and a plain `more` line
("25 more — ask for the next page: call list_tasks again with offset=20."), so a model that
needs the rest knows exactly how to get it. Rows are compact: fields that are null are left
out rather than sent as `null` (an absent `start_date` is an unscheduled task).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from psycopg import sql
from pydantic import (
    BaseModel,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from shared.db.database import Connection
from shared.tools.values import ToolArgs, ToolOutput

M = TypeVar("M", bound=BaseModel)

MORE = "{left} more — ask for the next page: call {tool} again with offset={next} (same filters)."


class PageArgs(ToolArgs):
    """`offset` for a paged list tool (each tool declares its own `limit`)."""

    offset: int = Field(
        default=0,
        ge=0,
        le=100_000,
        description="Rows to skip: the `next_offset` of the previous page.",
    )


class Compact(ToolOutput):
    """A tool output whose null fields are left out of what the model is shown."""

    @model_serializer(mode="wrap")
    def _without_nulls(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {key: value for key, value in data.items() if value is not None}


class Page(Compact):
    """The paging fields of a list output (declare them after the list itself)."""

    count: int
    """Rows in this page."""
    total: int
    """Rows that match in all."""
    next_offset: int | None = None
    """Where the next page starts; absent on the last page."""
    more: str | None = None
    """How many rows are left and how to get them; absent on the last page."""


def page_of(tool: str, *, offset: int, count: int, total: int) -> dict[str, Any]:
    """The paging fields for a page of `count` rows from `offset` out of `total`."""
    fields: dict[str, Any] = {"count": count, "total": total}
    following = offset + count
    if following < total:
        fields["next_offset"] = following
        fields["more"] = MORE.format(left=total - following, tool=tool, next=following)
    return fields


async def fetch_page(
    conn: Connection, model: type[M], query: sql.Composed, params: Mapping[str, Any]
) -> tuple[list[M], int]:
    """The rows of a paged `query` and the total that match.

    `query` selects `count(*) OVER () AS total` beside the model's fields and ends in
    `LIMIT %(limit)s OFFSET %(offset)s`. A page past the end has no rows to carry the total:
    it is counted again from the first row.
    """
    cur = await conn.execute(query, params)
    rows = await cur.fetchall()
    if rows:
        return [model.model_validate(row) for row in rows], int(rows[0]["total"])
    if not params.get("offset"):
        return [], 0
    cur = await conn.execute(query, {**params, "offset": 0, "limit": 1})
    first = await cur.fetchone()
    return [], int(first["total"]) if first else 0
