"""Task tools: list_tasks, get_task_details (read); create_task, update_task (write)."""

from __future__ import annotations

from typing import Any, Literal
from uuid import UUID

from psycopg import sql
from pydantic import Field

from shared.db.database import Connection
from shared.kernel.errors import NotFound
from shared.tools.builtin.common import (
    TextSearch,
    Updates,
    columns,
    ensure_visible,
    fetch_model,
    require,
    set_clause,
)
from shared.tools.builtin.outputs import (
    Priority,
    Task,
    TaskStatus,
    TaskSummary,
    TaskType,
)
from shared.tools.builtin.paging import Page, PageArgs, fetch_page, page_of
from shared.tools.schema import nullable
from shared.tools.tool_registry import DatabaseTool
from shared.tools.values import ToolArgs, ToolOutput, UtcDatetime

SUMMARY = sql.SQL(
    "t.id, t.title, t.status, t.priority, t.start_date, t.duration_minutes, "
    "p.name AS project_name, t.parent_task_id"
)
TASK = columns(Task, "t")
SEARCH = TextSearch(
    expression="t.title || ' ' || t.description",  # as in the tasks_search_idx trigram index
    id_column="t.id",
    candidates="parley_private.tasks_matching",
)

COMPLETED_AT = (
    "completed_at = CASE WHEN %(status)s::text = 'done' THEN coalesce(completed_at, now()) END"
)
ORDER = {  # `t.id` last: a stable order, so pages neither repeat nor skip rows
    "priority": "CASE t.priority WHEN 'high' THEN 0 WHEN 'medium' THEN 1 ELSE 2 END, "
    "t.created_at DESC, t.id",
    "start_date": "t.start_date ASC NULLS LAST, t.created_at DESC, t.id",
    "created_at": "t.created_at DESC, t.id",
    "open_first": "t.status = 'done', t.start_date ASC NULLS LAST, t.created_at DESC, t.id",
}
SUBTASKS_SHOWN = 50


class ListTasksArgs(PageArgs):
    project_id: UUID | None = Field(default=None, description="Only tasks of this project.")
    parent_task_id: UUID | None = Field(default=None, description="Only subtasks of this task.")
    status: list[TaskStatus] | None = Field(
        default=None,
        description="Only tasks in one of these statuses.",
    )
    priority: list[Priority] | None = Field(
        default=None,
        description="Only tasks with one of these priorities.",
    )
    has_date: bool | None = Field(
        default=None,
        description="true: only scheduled tasks (with a start date); false: only unscheduled ones.",
    )
    query: str | None = Field(
        default=None,
        max_length=200,
        description="Words that must all appear in the title or description.",
    )
    sort_by: Literal["priority", "start_date", "created_at", "open_first"] = "created_at"
    limit: int = Field(default=25, ge=1, le=100)


class TaskList(Page):
    tasks: list[TaskSummary]


def list_query(args: ListTasksArgs) -> tuple[sql.Composed, dict[str, Any]]:
    """The SQL `list_tasks` runs, and its parameters."""
    matches, params = SEARCH.predicate(args.query)
    query = sql.SQL(
        """SELECT {summary}, count(*) OVER () AS total
           FROM tasks t LEFT JOIN projects p ON p.id = t.project_id
           WHERE {matches}
             AND (%(project)s::uuid IS NULL OR t.project_id = %(project)s)
             AND (%(parent)s::uuid IS NULL OR t.parent_task_id = %(parent)s)
             AND (%(statuses)s::text[] IS NULL OR t.status = ANY(%(statuses)s))
             AND (%(priorities)s::text[] IS NULL OR t.priority = ANY(%(priorities)s))
             AND (%(has_date)s::boolean IS NULL OR (t.start_date IS NOT NULL) = %(has_date)s)
           ORDER BY {order} LIMIT %(limit)s OFFSET %(offset)s"""
    ).format(summary=SUMMARY, matches=matches, order=sql.SQL(ORDER[args.sort_by]))
    return query, {
        **params,
        "project": args.project_id,
        "parent": args.parent_task_id,
        "statuses": args.status,
        "priorities": args.priority,
        "has_date": args.has_date,
        "limit": args.limit,
        "offset": args.offset,
    }


async def list_tasks(conn: Connection, args: ListTasksArgs) -> TaskList:
    tasks, total = await fetch_page(conn, TaskSummary, *list_query(args))
    return TaskList(
        tasks=tasks, **page_of("list_tasks", offset=args.offset, count=len(tasks), total=total)
    )


class GetTaskDetailsArgs(ToolArgs):
    task_id: UUID
    include_subtasks: bool = Field(
        default=True,
        description="Also list the task's subtasks (compact).",
    )
    include_project_context: bool = Field(
        default=False,
        description="Also return the task's project (name, status, description, summary, context).",
    )


class ProjectContext(ToolOutput):
    id: UUID
    name: str
    status: str
    description: str
    executive_summary: str
    context: str


class TaskDetails(ToolOutput):
    task: Task
    subtasks: list[TaskSummary] | None = None
    more_subtasks: str | None = None
    """Set when the task has more subtasks than shown, saying how to list them."""
    project: ProjectContext | None = None


async def get_task_details(conn: Connection, args: GetTaskDetailsArgs) -> TaskDetails:
    task = await require(conn, Task, task_query(), {"id": args.task_id}, f"task {args.task_id}")
    details = TaskDetails(task=task)
    if args.include_subtasks:
        listed = ListTasksArgs(parent_task_id=task.id, sort_by="created_at", limit=SUBTASKS_SHOWN)
        subtasks, total = await fetch_page(conn, TaskSummary, *list_query(listed))
        more = None
        if total > len(subtasks):
            more = (
                f"{total - len(subtasks)} more subtasks — call list_tasks with "
                f"parent_task_id={task.id} and offset={len(subtasks)}."
            )
        details = details.model_copy(update={"subtasks": subtasks, "more_subtasks": more})
    if args.include_project_context and task.project_id is not None:
        project = await fetch_model(
            conn,
            ProjectContext,
            sql.SQL(
                "SELECT id, name, status, description, executive_summary, context "
                "FROM projects WHERE id = %(id)s"
            ),
            {"id": task.project_id},
        )
        details = details.model_copy(update={"project": project})
    return details


class CreateTaskArgs(ToolArgs):
    title: str = Field(min_length=1, max_length=300)
    description: str = Field(default="", max_length=20_000)
    project_id: UUID | None = Field(
        default=None,
        description="The project the task belongs to (see search_projects).",
    )
    priority: Priority = "medium"
    task_type: TaskType = "one_off"
    duration_minutes: int = Field(default=60, ge=1, le=1440)
    start_date: UtcDatetime | None = Field(
        default=None,
        description="When the task is planned to start (ISO 8601; no offset means UTC).",
    )
    parent_task_id: UUID | None = Field(
        default=None,
        description="Make this a subtask of that task.",
    )


async def create_task(conn: Connection, args: CreateTaskArgs) -> Task:
    if args.project_id is not None:
        await ensure_visible(conn, "projects", args.project_id, "project")
    if args.parent_task_id is not None:
        await ensure_visible(conn, "tasks", args.parent_task_id, "parent task")
    cur = await conn.execute(
        """INSERT INTO tasks (user_id, project_id, parent_task_id, title, description, priority,
                              task_type, duration_minutes, start_date)
           VALUES ((SELECT auth.uid()), %(project_id)s, %(parent_task_id)s, %(title)s,
                   %(description)s, %(priority)s, %(task_type)s, %(duration_minutes)s,
                   %(start_date)s)
           RETURNING id""",
        args.model_dump(),
    )
    row = await cur.fetchone()
    assert row is not None
    return await require(conn, Task, task_query(), {"id": row["id"]}, "new task")


class TaskUpdates(Updates):
    title: str | None = Field(default=None, min_length=1, max_length=300)
    description: str | None = Field(default=None, max_length=20_000)
    details: str | None = Field(default=None, max_length=50_000)
    status: TaskStatus | None = Field(
        default=None,
        description="Setting `done` stamps completed_at; leaving `done` clears it.",
    )
    priority: Priority | None = None
    start_date: UtcDatetime | None = nullable(
        description="New start (ISO 8601; no offset means UTC); null unschedules the task.",
    )
    duration_minutes: int | None = Field(default=None, ge=1, le=1440)


class UpdateTaskArgs(ToolArgs):
    task_id: UUID
    updates: TaskUpdates = Field(description="Only the fields to change.")


async def update_task(conn: Connection, args: UpdateTaskArgs) -> Task:
    changes = args.updates.changes()
    assignments: list[sql.Composable] = [
        set_clause(changes, allowed=list(TaskUpdates.model_fields))
    ]
    if "status" in changes:
        assignments.append(sql.SQL(COMPLETED_AT))
    cur = await conn.execute(
        sql.SQL("UPDATE tasks SET {} WHERE id = %(task_id)s RETURNING id").format(
            sql.SQL(", ").join(assignments)
        ),
        {**changes, "task_id": args.task_id},
    )
    if await cur.fetchone() is None:
        raise NotFound(f"task {args.task_id} not found")
    return await require(conn, Task, task_query(), {"id": args.task_id}, f"task {args.task_id}")


def task_query() -> sql.Composed:
    """Select one task (all columns) by `%(id)s`."""
    return sql.SQL("SELECT {} FROM tasks t WHERE t.id = %(id)s").format(TASK)


TOOLS = [
    DatabaseTool(
        "list_tasks",
        "List the user's tasks, filtered by project, parent task, status, priority, whether "
        "they are scheduled, or words in title/description. Compact rows, one page at a time "
        "(`more` says how to get the next); get_task_details shows one task in full.",
        ListTasksArgs,
        "read",
        list_tasks,
    ),
    DatabaseTool(
        "get_task_details",
        "One task in full, optionally with its subtasks and its project's context.",
        GetTaskDetailsArgs,
        "read",
        get_task_details,
    ),
    DatabaseTool(
        "create_task",
        "Create a task (in a project or standalone); returns it.",
        CreateTaskArgs,
        "write",
        create_task,
    ),
    DatabaseTool(
        "update_task",
        "Change a task's fields; returns the task.",
        UpdateTaskArgs,
        "write",
        update_task,
    ),
]
"""The task tools, in the order they are offered."""
