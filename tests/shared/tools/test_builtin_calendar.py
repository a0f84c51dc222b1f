"""Calendar tools against the real database (the local `calendar_events` table)."""

from __future__ import annotations

from datetime import date

from shared.db import Database
from shared.tools import ToolExecutor
from tests.support.domain_rows import (
    Crew,
    at,
    call,
    fetch_row,
    make_crew,
    make_event,
    make_task,
)


async def test_get_calendar_events_in_a_window_with_recurrences(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    user = crew.user_id
    await make_event(db, user, at(0, 10), title="Dentist")
    await make_event(db, user, at(-3, 8), 15, title="Standup", recurrence_pattern="daily")
    await make_event(db, user, at(0, 15), title="Cancelled", deleted_at=at(-1, 0))
    await make_event(db, user, at(5, 10), title="Later")
    other = await make_crew(db)
    await make_event(db, other.user_id, at(0, 11), title="Not yours")

    result = await call(
        executor,
        crew.as_executor(),
        "get_calendar_events",
        time_min=at(0, 0).isoformat(),
        time_max=at(2, 0).isoformat(),
    )

    events = [(e["title"], e["start_at"]) for e in result.payload["events"]]
    assert events == [
        ("Standup", "2030-06-03T08:00:00+00:00"),
        ("Dentist", "2030-06-03T10:00:00+00:00"),
        ("Standup", "2030-06-04T08:00:00+00:00"),
    ]
    assert (result.payload["total"], "next_offset" in result.payload) == (3, False)


async def test_get_calendar_events_reads_and_renders_a_time_zone(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    await make_event(db, crew.user_id, at(0, 7), title="Breakfast")  # 09:00 in Berlin (CEST)
    result = await call(
        executor,
        crew.as_executor(),
        "get_calendar_events",
        time_min="2030-06-03T08:30:00",
        time_max="2030-06-03T10:00:00",
        timezone="Europe/Berlin",
        limit=1,
    )

    [event] = result.payload["events"]
    assert (event["start_at"], event["end_at"]) == (
        "2030-06-03T09:00:00+02:00",
        "2030-06-03T10:00:00+02:00",
    )
    assert result.payload["window"]["start"] == "2030-06-03T08:30:00+02:00"


async def test_get_calendar_events_rejects_backwards_windows_and_unknown_zones(
    executor: ToolExecutor, crew: Crew
) -> None:
    me = crew.as_executor()
    backwards = await call(
        executor,
        me,
        "get_calendar_events",
        time_min=at(1, 0).isoformat(),
        time_max=at(0, 0).isoformat(),
    )
    zone = await call(executor, me, "get_calendar_events", timezone="Mars/Olympus")
    assert (backwards.error, zone.error) == ("invalid_arguments", "invalid_arguments")
    assert "unknown time zone" in str(zone.payload["message"])


async def test_get_task_calendar_events_hides_deleted_unless_asked(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    task = await make_task(db, crew.user_id)
    await make_event(db, crew.user_id, at(1, 9), task_id=task, title="Now")
    await make_event(db, crew.user_id, at(0, 9), task_id=task, title="Was", deleted_at=at(0, 0))
    me = crew.as_executor()

    live = await call(executor, me, "get_task_calendar_events", task_id=task)
    every = await call(executor, me, "get_task_calendar_events", task_id=task, include_deleted=True)
    bad = await call(executor, me, "get_task_calendar_events")

    assert [e["title"] for e in live.payload["events"]] == ["Now"]
    assert [e["title"] for e in every.payload["events"]] == ["Was", "Now"]
    assert every.payload["events"][0]["deleted_at"] is not None
    assert bad.error == "invalid_arguments"


async def test_task_calendar_tools_do_not_reach_other_users_tasks(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    other = await make_crew(db)
    theirs = await make_task(db, other.user_id)
    await make_event(db, other.user_id, at(1, 9), task_id=theirs)
    me = crew.as_executor()

    events = await call(executor, me, "get_task_calendar_events", task_id=theirs)
    check = await call(executor, me, "check_task_has_calendar_event", task_id=theirs)

    assert (events.error, check.error) == ("not_found", "not_found")


async def test_check_task_has_calendar_event(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    scheduled = await make_task(db, crew.user_id)
    unscheduled = await make_task(db, crew.user_id)
    event = await make_event(db, crew.user_id, at(1, 9), task_id=scheduled)
    me = crew.as_executor()

    yes = await call(executor, me, "check_task_has_calendar_event", task_id=scheduled)
    no = await call(executor, me, "check_task_has_calendar_event", task_id=unscheduled)
    bad = await call(executor, me, "check_task_has_calendar_event", task_id=[scheduled])

    assert (yes.payload["has_event"], yes.payload["event_count"]) == (True, 1)
    assert yes.payload["next_event"]["id"] == str(event)
    assert (no.payload["has_event"], no.payload["next_event"]) == (False, None)
    assert bad.error == "invalid_arguments"


async def test_update_calendar_event_moves_it_and_its_task(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    task = await make_task(db, crew.user_id, start_date=at(1, 9))
    event = await make_event(db, crew.user_id, at(1, 9), 30, task_id=task)

    result = await call(
        executor,
        crew.as_planner(),
        "update_calendar_event",
        event_id=event,
        updates={"start_time": "2030-06-04T14:00:00", "title": "Moved"},
        timezone="Europe/Berlin",
    )

    assert result.ok, result.payload
    assert (result.payload["start_at"], result.payload["end_at"]) == (
        "2030-06-04T14:00:00+02:00",
        "2030-06-04T14:30:00+02:00",
    )
    stored = await fetch_row(db, "calendar_events", event)
    assert (stored["title"], stored["start_at"]) == ("Moved", at(1, 12))
    assert (await fetch_row(db, "tasks", task))["start_date"] == at(1, 12)


async def test_update_calendar_event_refuses_bad_updates_and_other_users_events(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    mine = await make_event(db, crew.user_id, at(1, 9))
    other = await make_crew(db)
    theirs = await make_event(db, other.user_id, at(1, 9), title="Theirs")
    me = crew.as_planner()

    empty = await call(executor, me, "update_calendar_event", event_id=mine, updates={})
    backwards = await call(
        executor,
        me,
        "update_calendar_event",
        event_id=mine,
        updates={"end_time": at(1, 8).isoformat()},
    )
    foreign = await call(
        executor, me, "update_calendar_event", event_id=theirs, updates={"title": "Mine"}
    )

    assert (empty.error, backwards.error, foreign.error) == (
        "invalid_arguments",
        "invalid_arguments",
        "not_found",
    )
    assert (await fetch_row(db, "calendar_events", theirs))["title"] == "Theirs"


async def test_delete_calendar_event_is_soft_and_only_once(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    event = await make_event(db, crew.user_id, at(1, 9))
    me = crew.as_planner()

    deleted = await call(executor, me, "delete_calendar_event", event_id=event)
    again = await call(executor, me, "delete_calendar_event", event_id=event)
    listed = await call(
        executor,
        me,
        "get_calendar_events",
        time_min=at(1, 0).isoformat(),
        time_max=at(2, 0).isoformat(),
    )
    bad = await call(executor, me, "delete_calendar_event", event_id=event, calendar_id="x")

    assert deleted.payload["deleted"] is True
    assert (await fetch_row(db, "calendar_events", event))["deleted_at"] is not None
    assert (again.error, listed.payload["count"], bad.error) == (
        "not_found",
        0,
        "invalid_arguments",
    )


async def test_delete_calendar_event_cannot_touch_other_users_events(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    other = await make_crew(db)
    theirs = await make_event(db, other.user_id, at(1, 9))
    result = await call(executor, crew.as_planner(), "delete_calendar_event", event_id=theirs)
    assert result.error == "not_found"
    assert (await fetch_row(db, "calendar_events", theirs))["deleted_at"] is None


def test_base_day_is_a_monday() -> None:
    assert date(2030, 6, 3).weekday() == 0  # the builders' BASE; the slot tests rely on it
