"""Scheduling tools against the real database: free slots, schedule, update-or-schedule."""

from __future__ import annotations

from typing import Any

from shared.db import Database
from shared.tools import ToolExecutor
from tests.support.domain_rows import (
    Crew,
    at,
    call,
    fetch_row,
    make_crew,
    make_event,
    make_project,
    make_task,
    snapshot,
)


def spans(result: Any) -> list[tuple[str, str]]:
    return [(s["start_at"][11:16], s["end_at"][11:16]) for s in result.payload["slots"]]


async def test_find_available_slots_between_events(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    user = crew.user_id
    await make_event(db, user, at(0, 10), title="Meeting")
    await make_event(db, user, at(0, 13), title="Lunch")
    await make_event(db, user, at(-7, 16), 30, title="Weekly", recurrence_pattern="weekly")
    other = await make_crew(db)
    await make_event(db, other.user_id, at(0, 9), 480, title="Someone else's day")
    me = crew.as_executor()
    window: dict[str, Any] = {"time_min": at(0, 9).isoformat(), "time_max": at(0, 17).isoformat()}

    hour = await call(executor, me, "find_available_slots", **window)
    long = await call(executor, me, "find_available_slots", duration_minutes=90, **window)
    mornings = await call(
        executor, me, "find_available_slots", preferred_hours=[9, 10, 11], **window
    )

    assert spans(hour) == [("09:00", "10:00"), ("11:00", "13:00"), ("14:00", "16:00")]
    assert hour.payload["busy_count"] == 3
    assert spans(long) == [("11:00", "13:00"), ("14:00", "16:00")]
    assert spans(mornings) == [("09:00", "10:00"), ("11:00", "12:00")]


async def test_find_available_slots_preferred_hours_are_local(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    result = await call(
        executor,
        crew.as_executor(),
        "find_available_slots",
        time_min="2030-06-03T00:00:00",
        time_max="2030-06-04T00:00:00",
        preferred_hours=[9, 10],
        timezone="Europe/Berlin",
    )
    [slot] = result.payload["slots"]
    assert (slot["start_at"], slot["end_at"], slot["minutes"]) == (
        "2030-06-03T09:00:00+02:00",
        "2030-06-03T11:00:00+02:00",
        120,
    )


async def test_find_available_slots_needs_a_window_and_real_hours(
    executor: ToolExecutor, crew: Crew
) -> None:
    me = crew.as_executor()
    missing = await call(executor, me, "find_available_slots", time_max=at(1, 0).isoformat())
    hour_24 = await call(
        executor,
        me,
        "find_available_slots",
        time_min=at(0, 0).isoformat(),
        time_max=at(1, 0).isoformat(),
        preferred_hours=[24],
    )
    assert (missing.error, hour_24.error) == ("invalid_arguments", "invalid_arguments")


async def test_schedule_task_creates_its_event_and_reports_clashes(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    task = await make_task(db, crew.user_id, title="Write report", duration_minutes=90)
    await make_event(db, crew.user_id, at(1, 10), title="Standup")
    me = crew.as_planner()

    result = await call(
        executor,
        me,
        "schedule_task",
        task_id=task,
        start_time=at(1, 9).isoformat(),
        recurrence_pattern="weekly",
    )
    twice = await call(executor, me, "schedule_task", task_id=task, start_time=at(2, 9).isoformat())

    assert result.ok, result.payload
    event = result.payload["event"]
    assert (event["title"], event["task_id"], event["end_at"]) == (
        "Write report",
        str(task),
        "2030-06-04T10:30:00+00:00",
    )
    assert [c["title"] for c in result.payload["conflicts"]] == ["Standup"]
    stored = await fetch_row(db, "tasks", task)
    assert (stored["start_date"], stored["task_type"], stored["recurrence_pattern"]) == (
        at(1, 9),
        "recurring",
        "weekly",
    )
    assert twice.error == "conflict"
    assert "update_or_schedule_task" in str(twice.payload["message"])


async def test_schedule_task_refuses_foreign_tasks_and_vague_times(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    other = await make_crew(db)
    theirs = await make_task(db, other.user_id)
    before = await snapshot(db)
    foreign = await call(
        executor,
        crew.as_planner(),
        "schedule_task",
        task_id=theirs,
        start_time=at(1, 9).isoformat(),
    )
    vague = await call(
        executor, crew.as_planner(), "schedule_task", task_id=theirs, start_time="tomorrow morning"
    )
    assert (foreign.error, vague.error) == ("not_found", "invalid_arguments")
    assert await snapshot(db) == before


async def test_update_or_schedule_task_creates_then_moves_then_recreates(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    project = await make_project(db, crew.user_id)
    task = await make_task(db, crew.user_id, project_id=project, title="Gym")
    me = crew.as_planner()
    base: dict[str, Any] = {"project_id": project, "task_id": task}

    created = await call(
        executor,
        me,
        "update_or_schedule_task",
        **base,
        start_time=at(1, 7).isoformat(),
        recurrence_pattern="weekdays",
        recurrence_ends="2030-12-31",
    )
    moved = await call(
        executor,
        me,
        "update_or_schedule_task",
        **base,
        start_time=at(1, 18).isoformat(),
        duration_minutes=45,
    )
    recreated = await call(
        executor,
        me,
        "update_or_schedule_task",
        **base,
        start_time=at(2, 6).isoformat(),
        force_recreate=True,
        recurrence_pattern=None,
    )

    assert [r.payload.get("action") for r in (created, moved, recreated)] == [
        "created",
        "updated",
        "recreated",
    ]
    assert moved.payload["event"]["id"] == created.payload["event"]["id"]
    assert moved.payload["event"]["recurrence_pattern"] == "weekdays"  # kept when omitted
    assert moved.payload["task"]["duration_minutes"] == 45
    assert str(moved.payload["task"]["recurrence_ends"]) == "2030-12-31"
    old = await fetch_row(db, "calendar_events", created.payload["event"]["id"])
    assert old["deleted_at"] is not None
    assert recreated.payload["event"]["recurrence_pattern"] is None
    assert recreated.payload["task"]["task_type"] == "one_off"


async def test_update_or_schedule_task_checks_project_and_recurrence(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    project = await make_project(db, crew.user_id)
    elsewhere = await make_project(db, crew.user_id)
    task = await make_task(db, crew.user_id, project_id=project)
    me = crew.as_planner()
    when = at(1, 9).isoformat()

    wrong_project = await call(
        executor, me, "update_or_schedule_task", project_id=elsewhere, task_id=task, start_time=when
    )
    ends_alone = await call(
        executor,
        me,
        "update_or_schedule_task",
        project_id=project,
        task_id=task,
        start_time=when,
        recurrence_ends="2031-01-01",
    )

    other = await make_crew(db)
    their_project = await make_project(db, other.user_id)
    theirs = await make_task(db, other.user_id, project_id=their_project)
    foreign = await call(
        executor,
        me,
        "update_or_schedule_task",
        project_id=their_project,
        task_id=theirs,
        start_time=when,
    )

    assert wrong_project.error == "not_found"
    assert ends_alone.error == "invalid_arguments"
    assert foreign.error == "not_found"
    assert (await fetch_row(db, "tasks", theirs))["start_date"] is None
