"""Brain dump tools: search_brain_dumps, get_brain_dump_details (read); create_brain_dump."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from psycopg import sql
from pydantic import Field

from shared.db.database import Connection
from shared.tools.builtin.common import (
    Filter,
    TextSearch,
    columns,
    ensure_visible,
    require,
    search_page,
)
from shared.tools.builtin.outputs import BrainDump, BrainDumpStatus, BrainDumpSummary
from shared.tools.builtin.paging import Page, PageArgs, fetch_page, page_of
from shared.tools.tool_registry import DatabaseTool
from shared.tools.values import ToolArgs

SEARCH = TextSearch(
    expression="b.title || ' ' || b.content",  # as in the brain_dumps_search_idx trigram index
    id_column="b.id",
    candidates="parley_private.brain_dumps_matching",
)
BRAIN_DUMP = columns(BrainDump, "b")


class SearchBrainDumpsArgs(PageArgs):
    query: str | None = Field(
        default=None,
        max_length=200,
        description="Words that must all appear in the title or content.",
    )
    project_id: UUID | None = None
    status: BrainDumpStatus | None = None
    limit: int = Field(default=20, ge=1, le=50)


class BrainDumpList(Page):
    brain_dumps: list[BrainDumpSummary]


def search_query(args: SearchBrainDumpsArgs) -> tuple[sql.Composed, dict[str, Any]]:
    """The SQL `search_brain_dumps` runs, and its parameters."""
    filters = [
        Filter("b.project_id", "uuid", args.project_id),
        Filter("b.status", "text", args.status),
    ]
    return search_page(
        SEARCH,
        args.query,
        select="b.id, b.title, b.status, b.project_id, b.created_at, "
        "left(b.content, {chars}) AS preview",
        source="brain_dumps b",
        title="b.title",
        then="b.created_at DESC, b.id",
        filters=filters,
        page=(args.limit, args.offset),
    )


async def search_brain_dumps(conn: Connection, args: SearchBrainDumpsArgs) -> BrainDumpList:
    dumps, total = await fetch_page(conn, BrainDumpSummary, *search_query(args))
    paging = page_of("search_brain_dumps", offset=args.offset, count=len(dumps), total=total)
    return BrainDumpList(brain_dumps=dumps, **paging)


class GetBrainDumpDetailsArgs(ToolArgs):
    brain_dump_id: UUID


async def get_brain_dump_details(conn: Connection, args: GetBrainDumpDetailsArgs) -> BrainDump:
    return await require(
        conn, BrainDump, _query(), {"id": args.brain_dump_id}, f"brain dump {args.brain_dump_id}"
    )


class CreateBrainDumpArgs(ToolArgs):
    content: str = Field(
        min_length=1,
        max_length=100_000,
        description="The raw thoughts, as the user gave them.",
    )
    project_id: UUID | None = None
    title: str = Field(default="", max_length=300)


async def create_brain_dump(conn: Connection, args: CreateBrainDumpArgs) -> BrainDump:
    if args.project_id is not None:
        await ensure_visible(conn, "projects", args.project_id, "project")
    cur = await conn.execute(
        """INSERT INTO brain_dumps (user_id, project_id, title, content)
           VALUES ((SELECT auth.uid()), %(project_id)s, %(title)s, %(content)s)
           RETURNING id""",
        args.model_dump(),
    )
    row = await cur.fetchone()
    assert row is not None
    return await require(conn, BrainDump, _query(), {"id": row["id"]}, "new brain dump")


def _query() -> sql.Composed:
    return sql.SQL("SELECT {} FROM brain_dumps b WHERE b.id = %(id)s").format(BRAIN_DUMP)


TOOLS = [
    DatabaseTool(
        "search_brain_dumps",
        "Find the user's brain dumps by words in title/content, project or processing status. "
        "Compact rows with a preview; use get_brain_dump_details for the full text.",
        SearchBrainDumpsArgs,
        "read",
        search_brain_dumps,
    ),
    DatabaseTool(
        "get_brain_dump_details",
        "One brain dump in full.",
        GetBrainDumpDetailsArgs,
        "read",
        get_brain_dump_details,
    ),
    DatabaseTool(
        "create_brain_dump",
        "Save a brain dump (free-form thoughts to process later), status pending. Returns it.",
        CreateBrainDumpArgs,
        "write",
        create_brain_dump,
    ),
]
"""The brain dump tools, in the order they are offered."""
