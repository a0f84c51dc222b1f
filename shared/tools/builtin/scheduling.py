"""Scheduling tools: find_available_slots (read); schedule_task, update_or_schedule_task (write).

A scheduled task has a `calendar_events` row linked to it, and its own `start_date`,
`duration_minutes` and recurrence follow that event.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Annotated, Literal
from uuid import UUID

from psycopg import sql
from pydantic import Field

from shared.db.database import Connection
from shared.kernel.errors import Conflict, InvalidInput, NotFound
from shared.tools.builtin.calendar import EVENT, occurrences_in, window_of
from shared.tools.builtin.common import fetch_models, require
from shared.tools.builtin.outputs import CalendarEvent, Occurrence, Recurrence, Task
from shared.tools.builtin.paging import Page, PageArgs, page_of
from shared.tools.builtin.tasks import task_query
from shared.tools.builtin.timeslots import Interval, free_slots
from shared.tools.schema import nullable
from shared.tools.tool_registry import DatabaseTool
from shared.tools.values import Instant, ToolOutput, ZonedArgs

Hour = Annotated[int, Field(ge=0, le=23)]


class FindAvailableSlotsArgs(ZonedArgs, PageArgs):
    time_min: datetime = Field(description="Start of the window to search (ISO 8601).")
    time_max: datetime = Field(description="End of the window (at most 366 days after time_min).")
    duration_minutes: int = Field(
        default=60,
        ge=5,
        le=1440,
        description="The least free time a slot must offer.",
    )
    preferred_hours: list[Hour] | None = Field(
        default=None,
        max_length=24,
        description="Hours of the day (0-23, in `timezone`) a slot may use, e.g. "
        "[9,10,11,14,15,16]; consecutive hours join. Default: any time in the window.",
    )
    limit: int = Field(default=20, ge=1, le=100)


class Slot(ToolOutput):
    start_at: Instant
    end_at: Instant
    minutes: int
    """How long the slot is free (at least duration_minutes)."""


class SlotList(Page):
    slots: list[Slot]
    busy_count: int
    """How many event occurrences in the window were avoided."""


async def find_available_slots(conn: Connection, args: FindAvailableSlotsArgs) -> SlotList:
    window = window_of(args, args.time_min, args.time_max)
    busy = await occurrences_in(conn, window, args.zone())
    spans = free_slots(
        [Interval(o.start_at, o.end_at) for o in busy],
        window,
        duration=timedelta(minutes=args.duration_minutes),
        zone=args.zone(),
        preferred_hours=args.preferred_hours,
    )
    slots = [
        Slot(start_at=s.start, end_at=s.end, minutes=int(s.length.total_seconds() // 60))
        for s in spans[args.offset : args.offset + args.limit]
    ]
    paging = page_of("find_available_slots", offset=args.offset, count=len(slots), total=len(spans))
    return SlotList(slots=slots, busy_count=len(busy), **paging)


class Scheduled(ToolOutput):
    action: Literal["created", "updated", "recreated"]
    event: CalendarEvent
    task: Task
    conflicts: list[Occurrence]
    """Other events overlapping the (first) scheduled time — a warning, not an error."""


TaskStart = Annotated[
    datetime,
    Field(description="When the task starts (ISO 8601; no offset means `timezone`, default UTC)."),
]
TaskMinutes = Annotated[
    int | None, Field(ge=1, le=1440, description="Default: the task's own duration.")
]


class ScheduleTaskArgs(ZonedArgs):
    task_id: UUID
    start_time: TaskStart
    duration_minutes: TaskMinutes = None
    recurrence_pattern: Recurrence | None = Field(
        default=None,
        description="Repeat the event (the task becomes recurring). Default: the task's own "
        "recurrence.",
    )


async def schedule_task(conn: Connection, args: ScheduleTaskArgs) -> Scheduled:
    task = await _task(conn, args.task_id)
    existing = await _live_events(conn, task.id)
    if existing:
        raise Conflict(
            f"task {task.id} is already on the calendar (event {existing[0].id}); "
            "use update_or_schedule_task to move it"
        )
    span = _span(args, args.start_time, args.duration_minutes, task)
    pattern = args.recurrence_pattern or task.recurrence_pattern
    event = await _insert_event(conn, task, span, pattern)
    return await _finish(conn, args, "created", event, span, pattern, None)


class UpdateOrScheduleTaskArgs(ZonedArgs):
    project_id: UUID = Field(description="The task's project.")
    task_id: UUID
    start_time: TaskStart
    duration_minutes: TaskMinutes = None
    force_recreate: bool = Field(
        default=False,
        description="Delete the task's existing events and create a new one instead of moving it.",
    )
    recurrence_pattern: Recurrence | None = nullable(
        description="Omitted: keep the current recurrence; null: make it one-off.",
    )
    recurrence_ends: date | None = Field(default=None, description="Last day of the recurrence.")


async def update_or_schedule_task(conn: Connection, args: UpdateOrScheduleTaskArgs) -> Scheduled:
    task = await _task(conn, args.task_id)
    if task.project_id != args.project_id:
        raise NotFound(f"task {args.task_id} not found in project {args.project_id}")
    existing = await _live_events(conn, task.id)
    pattern = (
        args.recurrence_pattern
        if "recurrence_pattern" in args.model_fields_set
        else (existing[-1].recurrence_pattern if existing else task.recurrence_pattern)
    )
    if args.recurrence_ends is not None and pattern is None:
        raise InvalidInput("recurrence_ends needs a recurrence_pattern")
    span = _span(args, args.start_time, args.duration_minutes, task)
    if existing and not args.force_recreate:
        event = await _move_event(conn, existing[-1].id, span, pattern)
        action: Literal["created", "updated", "recreated"] = "updated"
    else:
        if existing:
            await conn.execute(
                "UPDATE calendar_events SET deleted_at = now() "
                "WHERE task_id = %(task)s AND deleted_at IS NULL",
                {"task": task.id},
            )
        event = await _insert_event(conn, task, span, pattern)
        action = "recreated" if existing else "created"
    return await _finish(conn, args, action, event, span, pattern, args.recurrence_ends)


async def _task(conn: Connection, task_id: UUID) -> Task:
    return await require(conn, Task, task_query(), {"id": task_id}, f"task {task_id}")


async def _live_events(conn: Connection, task_id: UUID) -> list[CalendarEvent]:
    query = sql.SQL(
        """SELECT {} FROM calendar_events e WHERE e.task_id = %(task)s AND e.deleted_at IS NULL
           ORDER BY e.created_at"""
    ).format(EVENT)
    return await fetch_models(conn, CalendarEvent, query, {"task": task_id})


def _span(args: ZonedArgs, start: datetime, minutes: int | None, task: Task) -> Interval:
    first = args.aware(start)
    return Interval(first, first + timedelta(minutes=minutes or task.duration_minutes))


async def _insert_event(
    conn: Connection, task: Task, span: Interval, pattern: Recurrence | None
) -> CalendarEvent:
    query = sql.SQL(
        """INSERT INTO calendar_events AS e
               (user_id, task_id, title, description, start_at, end_at, recurrence_pattern)
           VALUES ((SELECT auth.uid()), %(task)s, %(title)s, %(description)s, %(start)s,
                   %(end)s, %(pattern)s)
           RETURNING {}"""
    ).format(EVENT)
    params = {
        "task": task.id,
        "title": task.title,
        "description": task.description,
        "start": span.start,
        "end": span.end,
        "pattern": pattern,
    }
    return await require(conn, CalendarEvent, query, params, "new event")


async def _move_event(
    conn: Connection, event_id: UUID, span: Interval, pattern: Recurrence | None
) -> CalendarEvent:
    query = sql.SQL(
        """UPDATE calendar_events AS e
           SET start_at = %(start)s, end_at = %(end)s, recurrence_pattern = %(pattern)s
           WHERE e.id = %(id)s RETURNING {}"""
    ).format(EVENT)
    params = {"start": span.start, "end": span.end, "pattern": pattern, "id": event_id}
    return await require(conn, CalendarEvent, query, params, f"event {event_id}")


async def _finish(
    conn: Connection,
    args: ZonedArgs,
    action: Literal["created", "updated", "recreated"],
    event: CalendarEvent,
    span: Interval,
    pattern: Recurrence | None,
    ends: date | None,
) -> Scheduled:
    """Bring the task in step with its event, and look for clashes."""
    await conn.execute(
        """UPDATE tasks SET start_date = %(start)s, duration_minutes = %(minutes)s,
               recurrence_pattern = %(pattern)s,
               task_type = CASE WHEN %(pattern)s::text IS NULL THEN 'one_off' ELSE 'recurring' END,
               recurrence_ends = CASE WHEN %(pattern)s::text IS NULL THEN NULL
                                      ELSE coalesce(%(ends)s, recurrence_ends) END
           WHERE id = %(id)s""",
        {
            "start": span.start,
            "minutes": int(span.length.total_seconds() // 60),
            "pattern": pattern,
            "ends": ends,
            "id": event.task_id,
        },
    )
    task = await _task(conn, event.task_id) if event.task_id else None
    if task is None:
        raise NotFound("the scheduled task disappeared")
    clashes = await occurrences_in(conn, span, args.zone())
    conflicts = [o for o in clashes if o.event_id != event.id]
    return Scheduled(action=action, event=event, task=task, conflicts=conflicts)


TOOLS = [
    DatabaseTool(
        "find_available_slots",
        "Free time in the user's calendar between time_min and time_max: spans of at least "
        "duration_minutes between existing events, optionally only within preferred_hours "
        "(local to timezone, e.g. working hours 9-17 = [9,...,16]).",
        FindAvailableSlotsArgs,
        "read",
        find_available_slots,
    ),
    DatabaseTool(
        "schedule_task",
        "Put a task on the calendar at start_time (creates its event; the task's start date, "
        "duration and recurrence follow). Fails with conflict if the task already has an "
        "event: then use update_or_schedule_task. Reports overlapping events.",
        ScheduleTaskArgs,
        "write",
        schedule_task,
    ),
    DatabaseTool(
        "update_or_schedule_task",
        "Move a task of a project to start_time: updates its calendar event, or creates one if "
        "it has none (force_recreate replaces existing events). Sets recurrence and its end.",
        UpdateOrScheduleTaskArgs,
        "write",
        update_or_schedule_task,
    ),
]
"""The scheduling tools, in the order they are offered."""
