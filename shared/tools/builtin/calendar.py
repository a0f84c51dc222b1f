"""Calendar tools over the local `calendar_events` table.

Read: get_calendar_events, get_task_calendar_events, check_task_has_calendar_event.
Write: update_calendar_event, delete_calendar_event (destructive, soft: sets `deleted_at`).
Recurring events are expanded into their occurrences wherever a time window is asked about.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo
from uuid import UUID

from psycopg import sql
from pydantic import Field

from shared.db.database import Connection
from shared.kernel.errors import InvalidInput, NotFound
from shared.tools.builtin.common import Updates, columns, ensure_visible, fetch_models, require
from shared.tools.builtin.outputs import CalendarEvent, Occurrence, Recurrence
from shared.tools.builtin.paging import Page, PageArgs, fetch_page, page_of
from shared.tools.builtin.timeslots import Interval, occurrences
from shared.tools.schema import nullable
from shared.tools.tool_registry import DatabaseTool
from shared.tools.values import Instant, ToolArgs, ToolOutput, ZonedArgs

EVENT = columns(CalendarEvent, "e")
DEFAULT_WINDOW = timedelta(days=7)
MAX_WINDOW = timedelta(days=366)
MAX_EVENT_ROWS = 1000


def window_of(args: ZonedArgs, start: datetime | None, end: datetime | None) -> Interval:
    """The asked-for window: [now, +7 days] by default; at most a year, end after start."""
    first = args.aware(start) if start is not None else datetime.now(UTC)
    last = args.aware(end) if end is not None else first + DEFAULT_WINDOW
    if last <= first:
        raise InvalidInput("time_max must be after time_min")
    if last - first > MAX_WINDOW:
        raise InvalidInput("the window may span at most 366 days")
    return Interval(first, last)


async def occurrences_in(conn: Connection, window: Interval, zone: tzinfo) -> list[Occurrence]:
    """Every occurrence of the user's (not deleted) events meeting `window`, in time order."""
    cur = await conn.execute(
        """SELECT e.id, e.title, e.start_at, e.end_at, e.task_id, e.recurrence_pattern,
                  t.recurrence_ends
           FROM calendar_events e LEFT JOIN tasks t ON t.id = e.task_id
           WHERE e.deleted_at IS NULL AND e.start_at < %(end)s
             AND (e.recurrence_pattern IS NOT NULL OR e.end_at > %(start)s)
           ORDER BY e.start_at LIMIT %(rows)s""",
        {"start": window.start, "end": window.end, "rows": MAX_EVENT_ROWS + 1},
    )
    rows = await cur.fetchall()
    if len(rows) > MAX_EVENT_ROWS:  # never a silently partial calendar
        raise InvalidInput(
            f"the window holds more than {MAX_EVENT_ROWS} events: ask for a shorter window "
            "(time_min/time_max) and page through it"
        )
    found = []
    for row in rows:
        fields = {k: row[k] for k in ("title", "task_id", "recurrence_pattern")}
        spans = occurrences(
            Interval(row["start_at"], row["end_at"]),
            row["recurrence_pattern"],
            window=window,
            zone=zone,
            until=row["recurrence_ends"],
        )
        found += [
            Occurrence(event_id=row["id"], start_at=span.start, end_at=span.end, **fields)
            for span in spans
        ]
    return sorted(found, key=lambda o: (o.start_at, o.end_at, str(o.event_id)))


class GetCalendarEventsArgs(ZonedArgs, PageArgs):
    time_min: datetime | None = Field(
        default=None,
        description="Window start (ISO 8601). Default: now.",
    )
    time_max: datetime | None = Field(
        default=None,
        description="Window end. Default: 7 days after time_min.",
    )
    limit: int = Field(default=50, ge=1, le=200)


class Window(ToolOutput):
    start: Instant
    end: Instant


class EventList(Page):
    events: list[Occurrence]
    window: Window


async def get_calendar_events(conn: Connection, args: GetCalendarEventsArgs) -> EventList:
    window = window_of(args, args.time_min, args.time_max)
    found = await occurrences_in(conn, window, args.zone())
    shown = found[args.offset : args.offset + args.limit]
    paging = page_of("get_calendar_events", offset=args.offset, count=len(shown), total=len(found))
    return EventList(events=shown, window=Window(start=window.start, end=window.end), **paging)


class TaskEventsArgs(PageArgs):
    task_id: UUID
    include_deleted: bool = Field(
        default=False,
        description="Also return events that were deleted (they have deleted_at set).",
    )
    limit: int = Field(default=50, ge=1, le=200)


class TaskEvents(Page):
    task_id: UUID
    events: list[CalendarEvent]


async def get_task_calendar_events(conn: Connection, args: TaskEventsArgs) -> TaskEvents:
    await ensure_visible(conn, "tasks", args.task_id, "task")
    query = sql.SQL(
        """SELECT {}, count(*) OVER () AS total FROM calendar_events e
           WHERE e.task_id = %(task)s AND (%(deleted)s OR e.deleted_at IS NULL)
           ORDER BY e.start_at, e.id LIMIT %(limit)s OFFSET %(offset)s"""
    ).format(EVENT)
    params = {
        "task": args.task_id,
        "deleted": args.include_deleted,
        "limit": args.limit,
        "offset": args.offset,
    }
    events, total = await fetch_page(conn, CalendarEvent, query, params)
    paging = page_of("get_task_calendar_events", offset=args.offset, count=len(events), total=total)
    return TaskEvents(task_id=args.task_id, events=events, **paging)


async def _task_events(
    conn: Connection, task_id: UUID, *, include_deleted: bool
) -> list[CalendarEvent]:
    query = sql.SQL(
        """SELECT {} FROM calendar_events e
           WHERE e.task_id = %(task)s AND (%(deleted)s OR e.deleted_at IS NULL)
           ORDER BY e.start_at, e.id"""
    ).format(EVENT)
    return await fetch_models(
        conn, CalendarEvent, query, {"task": task_id, "deleted": include_deleted}
    )


class CheckTaskEventArgs(ToolArgs):
    task_id: UUID


class TaskEventCheck(ToolOutput):
    task_id: UUID
    has_event: bool
    event_count: int
    next_event: CalendarEvent | None
    """The first (not deleted) event that has not ended yet, if any."""


async def check_task_has_calendar_event(
    conn: Connection, args: CheckTaskEventArgs
) -> TaskEventCheck:
    await ensure_visible(conn, "tasks", args.task_id, "task")
    events = await _task_events(conn, args.task_id, include_deleted=False)
    now = datetime.now(UTC)
    upcoming = [e for e in events if e.end_at > now or e.recurrence_pattern is not None]
    return TaskEventCheck(
        task_id=args.task_id,
        has_event=bool(events),
        event_count=len(events),
        next_event=upcoming[0] if upcoming else None,
    )


class EventUpdates(Updates):
    title: str | None = Field(default=None, min_length=1, max_length=300)
    description: str | None = Field(default=None, max_length=20_000)
    start_time: datetime | None = Field(
        default=None,
        description="New start; without end_time the event keeps its length.",
    )
    end_time: datetime | None = None
    recurrence_pattern: Recurrence | None = nullable(description="null makes the event one-off.")


class UpdateCalendarEventArgs(ZonedArgs):
    event_id: UUID
    updates: EventUpdates = Field(description="Only the fields to change.")


async def update_calendar_event(conn: Connection, args: UpdateCalendarEventArgs) -> CalendarEvent:
    event = await live_event(conn, args.event_id)
    changes = args.updates.changes()
    start = args.aware(changes.pop("start_time", None) or event.start_at)
    end = args.aware(changes.pop("end_time", None) or start + (event.end_at - event.start_at))
    if end <= start:
        raise InvalidInput("the event would end before it starts")
    cur = await conn.execute(
        sql.SQL(
            """UPDATE calendar_events SET start_at = %(start)s, end_at = %(end)s {more}
               WHERE id = %(id)s RETURNING {cols}"""
        ).format(
            more=sql.SQL("").join(
                sql.SQL(", {} = {}").format(sql.Identifier(k), sql.Placeholder(k)) for k in changes
            ),
            cols=sql.SQL(", ").join(sql.Identifier(n) for n in CalendarEvent.model_fields),
        ),
        {**changes, "start": start, "end": end, "id": event.id},
    )
    updated = CalendarEvent.model_validate(await cur.fetchone())
    if updated.task_id is not None:
        await sync_task_time(conn, updated.task_id, Interval(start, end))
    return updated


async def live_event(conn: Connection, event_id: UUID) -> CalendarEvent:
    """The event `event_id` unless it is deleted (then, like a missing one, `NotFound`)."""
    query = sql.SQL("SELECT {} FROM calendar_events e WHERE e.id = %(id)s").format(EVENT)
    event = await require(conn, CalendarEvent, query, {"id": event_id}, f"event {event_id}")
    if event.deleted_at is not None:
        raise NotFound(f"event {event_id} was deleted")
    return event


async def sync_task_time(conn: Connection, task_id: UUID, span: Interval) -> None:
    """Keep a task's start date (and duration, when it fits a task) in step with its event."""
    minutes = int(span.length.total_seconds() // 60)
    await conn.execute(
        """UPDATE tasks SET start_date = %(start)s,
               duration_minutes = CASE WHEN %(minutes)s BETWEEN 1 AND 1440
                                       THEN %(minutes)s ELSE duration_minutes END
           WHERE id = %(id)s""",
        {"start": span.start, "minutes": minutes, "id": task_id},
    )


class DeleteCalendarEventArgs(ToolArgs):
    event_id: UUID


class DeletedEvent(ToolOutput):
    event_id: UUID
    deleted: bool
    deleted_at: Instant


async def delete_calendar_event(conn: Connection, args: DeleteCalendarEventArgs) -> DeletedEvent:
    cur = await conn.execute(
        """UPDATE calendar_events SET deleted_at = now()
           WHERE id = %(id)s AND deleted_at IS NULL RETURNING deleted_at""",
        {"id": args.event_id},
    )
    row = await cur.fetchone()
    if row is None:
        raise NotFound(f"event {args.event_id} not found (or already deleted)")
    return DeletedEvent(event_id=args.event_id, deleted=True, deleted_at=row["deleted_at"])


TOOLS = [
    DatabaseTool(
        "get_calendar_events",
        "The user's calendar events (recurring ones expanded) in a time window, default the "
        "next 7 days. Times are ISO 8601; pass timezone (IANA) to read and show local times.",
        GetCalendarEventsArgs,
        "read",
        get_calendar_events,
    ),
    DatabaseTool(
        "get_task_calendar_events",
        "The calendar events linked to a task (optionally including deleted ones).",
        TaskEventsArgs,
        "read",
        get_task_calendar_events,
    ),
    DatabaseTool(
        "check_task_has_calendar_event",
        "Whether a task is on the calendar: count of its events and the next one.",
        CheckTaskEventArgs,
        "read",
        check_task_has_calendar_event,
    ),
    DatabaseTool(
        "update_calendar_event",
        "Change a calendar event (title, description, start_time, end_time, recurrence). A "
        "task linked to it follows its new start. Returns the event.",
        UpdateCalendarEventArgs,
        "write",
        update_calendar_event,
    ),
    DatabaseTool(
        "delete_calendar_event",
        "Delete a calendar event (it stays visible to get_task_calendar_events with "
        "include_deleted). Destructive.",
        DeleteCalendarEventArgs,
        "write",
        delete_calendar_event,
        destructive=True,
    ),
]
"""The calendar tools, in the order they are offered."""
