"""Project tools: search_projects, get_project_details (read); update_project (write)."""

from __future__ import annotations

from datetime import date
from typing import Any, Self
from uuid import UUID

from psycopg import sql
from pydantic import Field, model_validator

from shared.db.database import Connection
from shared.errors import NotFound
from shared.tools.builtin.common import (
    TextSearch,
    Updates,
    columns,
    fetch_models,
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
from shared.tools.builtin.tasks import SUMMARY as TASK_SUMMARY
from shared.tools.registry import DatabaseTool
from shared.tools.schema import nullable
from shared.tools.values import ToolArgs, ToolOutput

SEARCH = TextSearch(
    # as in the projects_search_idx trigram index:
    expression="p.name || ' ' || p.description || ' ' || p.executive_summary",
    id_column="p.id",
    candidates="parley_private.projects_matching",
)
PROJECT = columns(Project, "p")


class SearchProjectsArgs(ToolArgs):
    query: str | None = Field(default=None, max_length=200)
    """Words that must all appear in the name, description or executive summary."""
    status: ProjectStatus | None = None
    has_active_tasks: bool | None = None
    """true: only projects with at least one task not done; false: only those without."""
    limit: int = Field(default=10, ge=1, le=20)


class ProjectList(ToolOutput):
    projects: list[ProjectSummary]
    count: int


def search_query(args: SearchProjectsArgs) -> tuple[sql.Composed, dict[str, Any]]:
    """The SQL `search_projects` runs, and its parameters."""
    matches, params = SEARCH.predicate(args.query)
    query = sql.SQL(
        """SELECT p.id, p.name, p.status, p.start_date, p.end_date, p.tags, p.updated_at,
                  left(coalesce(nullif(p.description, ''), p.executive_summary), {chars})
                      AS preview,
                  counts.task_count, counts.active_task_count
           FROM projects p
           CROSS JOIN LATERAL (
               SELECT count(*) AS task_count,
                      count(*) FILTER (WHERE t.status <> 'done') AS active_task_count
               FROM tasks t WHERE t.project_id = p.id) counts
           WHERE {matches}
             AND (%(status)s::text IS NULL OR p.status = %(status)s)
             AND (%(active)s::boolean IS NULL OR (counts.active_task_count > 0) = %(active)s)
           ORDER BY (p.name ILIKE %(phrase)s) IS TRUE DESC, p.updated_at DESC
           LIMIT %(limit)s"""
    ).format(chars=PREVIEW_CHARS, matches=matches)
    return query, {
        **params,
        "status": args.status,
        "active": args.has_active_tasks,
        "phrase": like_pattern(args.query),
        "limit": args.limit,
    }


async def search_projects(conn: Connection, args: SearchProjectsArgs) -> ProjectList:
    projects = await fetch_models(conn, ProjectSummary, *search_query(args))
    return ProjectList(projects=projects, count=len(projects))


class GetProjectDetailsArgs(ToolArgs):
    project_id: UUID
    include_tasks: bool = False
    """Also list the project's tasks (compact, up to 50, open ones first)."""
    include_notes: bool = False
    """Also list the project's notes (compact, up to 20, newest first)."""
    include_brain_dumps: bool = False
    """Also list the project's brain dumps (compact, up to 20, newest first)."""


class ProjectDetails(ToolOutput):
    project: Project
    task_counts: dict[TaskStatus, int]
    """How many of its tasks are in each status."""
    tasks: list[TaskSummary] | None = None
    notes: list[NoteSummary] | None = None
    brain_dumps: list[BrainDumpSummary] | None = None


async def get_project_details(conn: Connection, args: GetProjectDetailsArgs) -> ProjectDetails:
    key = {"id": args.project_id}
    project = await require(conn, Project, _project_query(), key, f"project {args.project_id}")
    cur = await conn.execute(
        "SELECT status, count(*) AS n FROM tasks WHERE project_id = %(id)s GROUP BY status", key
    )
    counts = dict.fromkeys(("backlog", "in_progress", "done", "blocked"), 0)
    counts |= {row["status"]: row["n"] for row in await cur.fetchall()}
    details = ProjectDetails.model_validate({"project": project, "task_counts": counts})
    if args.include_tasks:
        details = details.model_copy(update={"tasks": await _tasks(conn, args.project_id)})
    if args.include_notes:
        notes = await fetch_models(conn, NoteSummary, _listing("notes"), key)
        details = details.model_copy(update={"notes": notes})
    if args.include_brain_dumps:
        dumps = await fetch_models(conn, BrainDumpSummary, _listing("brain_dumps"), key)
        details = details.model_copy(update={"brain_dumps": dumps})
    return details


async def _tasks(conn: Connection, project_id: UUID) -> list[TaskSummary]:
    query = sql.SQL(
        """SELECT {summary} FROM tasks t LEFT JOIN projects p ON p.id = t.project_id
           WHERE t.project_id = %(id)s
           ORDER BY t.status = 'done', t.start_date NULLS LAST, t.created_at DESC LIMIT 50"""
    ).format(summary=TASK_SUMMARY)
    return await fetch_models(conn, TaskSummary, query, {"id": project_id})


def _listing(table: str) -> sql.Composed:
    extra = "category, tags" if table == "notes" else "status"
    return sql.SQL(
        """SELECT id, title, project_id, created_at, {extra}, left(content, {chars}) AS preview
           FROM {table} WHERE project_id = %(id)s ORDER BY created_at DESC LIMIT 20"""
    ).format(extra=sql.SQL(extra), chars=PREVIEW_CHARS, table=sql.Identifier(table))


class ProjectUpdates(Updates):
    name: str | None = Field(default=None, min_length=1, max_length=200)
    description: str | None = Field(default=None, max_length=20_000)
    executive_summary: str | None = Field(default=None, max_length=20_000)
    context: str | None = Field(default=None, max_length=50_000)
    status: ProjectStatus | None = None
    start_date: date | None = nullable()
    """null clears it."""
    end_date: date | None = nullable()
    """On or after start_date; null clears it."""
    tags: list[str] | None = Field(default=None, max_length=50)
    """Replaces the tags."""

    @model_validator(mode="after")
    def _ordered_dates(self) -> Self:
        if self.start_date and self.end_date and self.end_date < self.start_date:
            raise ValueError("end_date must not be before start_date")
        return self


class UpdateProjectArgs(ToolArgs):
    project_id: UUID
    updates: ProjectUpdates
    """Only the fields to change."""


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
        "they have open tasks. Compact rows with task counts; use get_project_details for one.",
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
        "Change fields of a project (name, description, executive_summary, context, status, "
        "start_date, end_date, tags). Returns the updated project.",
        UpdateProjectArgs,
        "write",
        update_project,
    ),
]
"""The project tools, in the order they are offered."""
