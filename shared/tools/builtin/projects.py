"""Project tools: search_projects, get_project_details (read); update_project (write)."""

from __future__ import annotations

from datetime import date
from typing import Any, Self
from uuid import UUID

from psycopg import sql
from pydantic import Field, model_validator

from shared.db.database import Connection
from shared.kernel.errors import NotFound
from shared.tools.builtin.common import (
    TextSearch,
    Updates,
    columns,
    like_pattern,
    require,
    set_clause,
)
from shared.tools.builtin.outputs import (
    PREVIEW_CHARS,
    BrainDumpSummary,
    NoteSummary,
    Project,
    ProjectStatus,
    ProjectSummary,
    TaskStatus,
    TaskSummary,
)
from shared.tools.builtin.paging import Compact, Page, PageArgs, fetch_page, page_of
from shared.tools.builtin.tasks import ListTasksArgs, list_query
from shared.tools.schema import nullable
from shared.tools.tool_registry import DatabaseTool
from shared.tools.values import ToolArgs

SEARCH = TextSearch(
    # as in the projects_search_idx trigram index:
    expression="p.name || ' ' || p.description || ' ' || p.executive_summary",
    id_column="p.id",
    candidates="parley_private.projects_matching",
)
PROJECT = columns(Project, "p")


TASKS_SHOWN = 50
LISTED_SHOWN = 20
"""Notes and brain dumps get_project_details lists (newest first)."""


class SearchProjectsArgs(PageArgs):
    query: str | None = Field(
        default=None,
        max_length=200,
        description="Words that must all appear in the name, description or executive summary.",
    )
    status: ProjectStatus | None = None
    has_active_tasks: bool | None = Field(
        default=None,
        description="true: only projects with at least one task not done; false: only those "
        "without.",
    )
    limit: int = Field(default=20, ge=1, le=50)


class ProjectList(Page):
    projects: list[ProjectSummary]


def search_query(args: SearchProjectsArgs) -> tuple[sql.Composed, dict[str, Any]]:
    """The SQL `search_projects` runs, and its parameters."""
    matches, params = SEARCH.predicate(args.query)
    query = sql.SQL(
        """SELECT p.id, p.name, p.status, p.start_date, p.end_date, p.tags, p.updated_at,
                  left(coalesce(nullif(p.description, ''), p.executive_summary), {chars})
                      AS preview,
                  counts.task_count, counts.active_task_count, count(*) OVER () AS total
           FROM projects p
           CROSS JOIN LATERAL (
               SELECT count(*) AS task_count,
                      count(*) FILTER (WHERE t.status <> 'done') AS active_task_count
               FROM tasks t WHERE t.project_id = p.id) counts
           WHERE {matches}
             AND (%(status)s::text IS NULL OR p.status = %(status)s)
             AND (%(active)s::boolean IS NULL OR (counts.active_task_count > 0) = %(active)s)
           ORDER BY (p.name ILIKE %(phrase)s) IS TRUE DESC, p.updated_at DESC, p.id
           LIMIT %(limit)s OFFSET %(offset)s"""
    ).format(chars=PREVIEW_CHARS, matches=matches)
    return query, {
        **params,
        "status": args.status,
        "active": args.has_active_tasks,
        "phrase": like_pattern(args.query),
        "limit": args.limit,
        "offset": args.offset,
    }


async def search_projects(conn: Connection, args: SearchProjectsArgs) -> ProjectList:
    projects, total = await fetch_page(conn, ProjectSummary, *search_query(args))
    paging = page_of("search_projects", offset=args.offset, count=len(projects), total=total)
    return ProjectList(projects=projects, **paging)


class GetProjectDetailsArgs(ToolArgs):
    project_id: UUID
    include_tasks: bool = Field(
        default=False,
        description="Also list the project's tasks (compact, the first 50, open ones first: "
        "list_tasks with sort_by=open_first pages on).",
    )
    include_notes: bool = Field(
        default=False,
        description="Also list the project's notes (compact, the newest 20).",
    )
    include_brain_dumps: bool = Field(
        default=False,
        description="Also list the project's brain dumps (compact, the newest 20).",
    )


class ProjectDetails(Compact):
    project: Project
    task_counts: dict[TaskStatus, int]
    """How many of its tasks are in each status."""
    tasks: list[TaskSummary] | None = None
    notes: list[NoteSummary] | None = None
    brain_dumps: list[BrainDumpSummary] | None = None
    more: list[str] | None = None
    """What the lists above leave out, and how to get it."""


async def get_project_details(conn: Connection, args: GetProjectDetailsArgs) -> ProjectDetails:
    key = {"id": args.project_id}
    project = await require(conn, Project, _project_query(), key, f"project {args.project_id}")
    cur = await conn.execute(
        "SELECT status, count(*) AS n FROM tasks WHERE project_id = %(id)s GROUP BY status", key
    )
    counts = dict.fromkeys(("backlog", "in_progress", "done", "blocked"), 0)
    counts |= {row["status"]: row["n"] for row in await cur.fetchall()}
    details: dict[str, Any] = {"project": project, "task_counts": counts}
    more: list[str] = []
    page = {"id": args.project_id, "offset": 0}
    if args.include_tasks:
        wanted = ListTasksArgs(project_id=args.project_id, sort_by="open_first", limit=TASKS_SHOWN)
        tasks, total = await fetch_page(conn, TaskSummary, *list_query(wanted))
        details["tasks"] = tasks
        if total > len(tasks):
            more.append(
                f"{total - len(tasks)} more tasks — call list_tasks with project_id="
                f"{args.project_id}, sort_by=open_first and offset={len(tasks)}."
            )
    for included, table, model, tool in (
        (args.include_notes, "notes", NoteSummary, "search_notes"),
        (args.include_brain_dumps, "brain_dumps", BrainDumpSummary, "search_brain_dumps"),
    ):
        if not included:
            continue
        shown = {**page, "limit": LISTED_SHOWN}
        listed, total = await fetch_page(conn, model, _listing(table), shown)
        details[table] = listed
        if total > len(listed):
            what = table.replace("_", " ")
            more.append(
                f"{total - len(listed)} more {what} — call {tool} with "
                f"project_id={args.project_id} and offset={len(listed)}."
            )
    return ProjectDetails.model_validate({**details, "more": more or None})


def _listing(table: str) -> sql.Composed:
    extra = "category, tags" if table == "notes" else "status"
    return sql.SQL(
        """SELECT id, title, project_id, created_at, {extra}, left(content, {chars}) AS preview,
                  count(*) OVER () AS total
           FROM {table} WHERE project_id = %(id)s ORDER BY created_at DESC, id
           LIMIT %(limit)s OFFSET %(offset)s"""
    ).format(extra=sql.SQL(extra), chars=PREVIEW_CHARS, table=sql.Identifier(table))


class ProjectUpdates(Updates):
    name: str | None = Field(default=None, min_length=1, max_length=200)
    description: str | None = Field(default=None, max_length=20_000)
    executive_summary: str | None = Field(default=None, max_length=20_000)
    context: str | None = Field(default=None, max_length=50_000)
    status: ProjectStatus | None = None
    start_date: date | None = nullable(description="null clears it.")
    end_date: date | None = nullable(description="On or after start_date; null clears it.")
    tags: list[str] | None = Field(default=None, max_length=50, description="Replaces the tags.")

    @model_validator(mode="after")
    def _ordered_dates(self) -> Self:
        if self.start_date and self.end_date and self.end_date < self.start_date:
            raise ValueError("end_date must not be before start_date")
        return self


class UpdateProjectArgs(ToolArgs):
    project_id: UUID
    updates: ProjectUpdates = Field(description="Only the fields to change.")


async def update_project(conn: Connection, args: UpdateProjectArgs) -> Project:
    changes = args.updates.changes()
    query = sql.SQL("UPDATE projects SET {} WHERE id = %(project_id)s RETURNING id").format(
        set_clause(changes, allowed=list(ProjectUpdates.model_fields))
    )
    cur = await conn.execute(query, {**changes, "project_id": args.project_id})
    if await cur.fetchone() is None:
        raise NotFound(f"project {args.project_id} not found")
    return await require(conn, Project, _project_query(), {"id": args.project_id}, "project")


def _project_query() -> sql.Composed:
    return sql.SQL("SELECT {} FROM projects p WHERE p.id = %(id)s").format(PROJECT)


TOOLS = [
    DatabaseTool(
        "search_projects",
        "Find the user's projects by words in name/description/summary, status, or whether "
        "they have open tasks. Compact rows with task counts, one page at a time; "
        "get_project_details shows one in full.",
        SearchProjectsArgs,
        "read",
        search_projects,
    ),
    DatabaseTool(
        "get_project_details",
        "One project in full with task counts by status, optionally with its tasks, notes and "
        "brain dumps (compact).",
        GetProjectDetailsArgs,
        "read",
        get_project_details,
    ),
    DatabaseTool(
        "update_project",
        "Change a project's fields; returns the project.",
        UpdateProjectArgs,
        "write",
        update_project,
    ),
]
"""The project tools, in the order they are offered."""
