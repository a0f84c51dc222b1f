"""Note tools: search_notes, get_note_details (read); create_note (write)."""

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
from shared.tools.builtin.outputs import Note, NoteSummary
from shared.tools.builtin.paging import Page, PageArgs, fetch_page, page_of
from shared.tools.tool_registry import DatabaseTool
from shared.tools.values import ToolArgs

SEARCH = TextSearch(
    expression="n.title || ' ' || n.content",  # as in the notes_search_idx trigram index
    id_column="n.id",
    candidates="parley_private.notes_matching",
)
NOTE = columns(Note, "n")


class SearchNotesArgs(PageArgs):
    query: str | None = Field(
        default=None,
        max_length=200,
        description="Words that must all appear in the title or content.",
    )
    project_id: UUID | None = None
    category: str | None = Field(default=None, max_length=100)
    limit: int = Field(default=20, ge=1, le=50)


class NoteList(Page):
    notes: list[NoteSummary]


def search_query(args: SearchNotesArgs) -> tuple[sql.Composed, dict[str, Any]]:
    """The SQL `search_notes` runs, and its parameters."""
    filters = [
        Filter("n.project_id", "uuid", args.project_id),
        Filter("n.category", "text", args.category),
    ]
    return search_page(
        SEARCH,
        args.query,
        select="n.id, n.title, n.category, n.project_id, n.tags, n.created_at, "
        "left(n.content, {chars}) AS preview",
        source="notes n",
        title="n.title",
        then="n.created_at DESC, n.id",
        filters=filters,
        page=(args.limit, args.offset),
    )


async def search_notes(conn: Connection, args: SearchNotesArgs) -> NoteList:
    notes, total = await fetch_page(conn, NoteSummary, *search_query(args))
    paging = page_of("search_notes", offset=args.offset, count=len(notes), total=total)
    return NoteList(notes=notes, **paging)


class GetNoteDetailsArgs(ToolArgs):
    note_id: UUID


async def get_note_details(conn: Connection, args: GetNoteDetailsArgs) -> Note:
    return await require(conn, Note, _note_query(), {"id": args.note_id}, f"note {args.note_id}")


class CreateNoteArgs(ToolArgs):
    content: str = Field(min_length=1, max_length=100_000)
    title: str = Field(default="", max_length=300)
    project_id: UUID | None = None
    category: str | None = Field(default=None, max_length=100)
    tags: list[str] = Field(default_factory=list, max_length=50)


async def create_note(conn: Connection, args: CreateNoteArgs) -> Note:
    if args.project_id is not None:
        await ensure_visible(conn, "projects", args.project_id, "project")
    cur = await conn.execute(
        """INSERT INTO notes (user_id, project_id, title, content, category, tags)
           VALUES ((SELECT auth.uid()), %(project_id)s, %(title)s, %(content)s, %(category)s,
                   %(tags)s)
           RETURNING id""",
        args.model_dump(),
    )
    row = await cur.fetchone()
    assert row is not None
    return await require(conn, Note, _note_query(), {"id": row["id"]}, "new note")


def _note_query() -> sql.Composed:
    return sql.SQL("SELECT {} FROM notes n WHERE n.id = %(id)s").format(NOTE)


TOOLS = [
    DatabaseTool(
        "search_notes",
        "Find the user's notes by words in title/content, project or category. Compact rows "
        "with a preview; use get_note_details for the full text.",
        SearchNotesArgs,
        "read",
        search_notes,
    ),
    DatabaseTool(
        "get_note_details",
        "One note in full.",
        GetNoteDetailsArgs,
        "read",
        get_note_details,
    ),
    DatabaseTool(
        "create_note",
        "Write a note (optionally in a project, with a category and tags). Returns the note.",
        CreateNoteArgs,
        "write",
        create_note,
    ),
]
"""The note tools, in the order they are offered."""
