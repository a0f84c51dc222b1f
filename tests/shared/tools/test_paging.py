"""No read tool shortens a list without saying so: every list is a page that says how many match
in all and how to ask for the rest, and the pages together hold every row exactly once."""

from __future__ import annotations

from typing import Any

from shared.db import Database
from shared.tools import ToolExecutor
from tests.support.domain_rows import (
    Crew,
    at,
    call,
    make_brain_dump,
    make_event,
    make_note,
    make_project,
    make_task,
)


async def every_page(
    executor: ToolExecutor, crew: Crew, tool: str, key: str, **arguments: Any
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Follow `next_offset` to the end; return the rows and each page's payload."""
    rows: list[dict[str, Any]] = []
    pages: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        result = await call(executor, crew.as_executor(), tool, offset=offset, **arguments)
        assert result.ok, result.payload
        pages.append(result.payload)
        rows += result.payload[key]
        offset = result.payload.get("next_offset")
    return rows, pages


async def test_list_tasks_pages_say_what_is_left_and_cover_every_task_once(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    for n in range(7):
        await make_task(db, crew.user_id, title=f"Task {n}")

    rows, pages = await every_page(executor, crew, "list_tasks", "tasks", limit=3)

    assert sorted(t["title"] for t in rows) == [f"Task {n}" for n in range(7)]
    assert [(p["count"], p["total"], p.get("next_offset")) for p in pages] == [
        (3, 7, 3),
        (3, 7, 6),
        (1, 7, None),
    ]
    assert pages[0]["more"] == (
        "4 more — ask for the next page: call list_tasks again with offset=3 (same filters)."
    )
    assert "more" not in pages[-1]


async def test_a_page_past_the_end_still_says_how_many_there_are(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    await make_task(db, crew.user_id, title="Only one")

    result = await call(executor, crew.as_executor(), "list_tasks", offset=5)

    assert (result.payload["tasks"], result.payload["count"], result.payload["total"]) == ([], 0, 1)


async def test_summaries_leave_nulls_out(db: Database, executor: ToolExecutor, crew: Crew) -> None:
    await make_task(db, crew.user_id, title="Unscheduled, no project")

    (task,) = (await call(executor, crew.as_executor(), "list_tasks")).payload["tasks"]

    assert set(task) == {"id", "title", "status", "priority", "duration_minutes"}


async def test_searches_of_projects_notes_and_dumps_page_too(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    for n in range(5):
        await make_project(db, crew.user_id, name=f"Project {n}")
        await make_note(db, crew.user_id, title=f"Note {n}", content="text")
        await make_brain_dump(db, crew.user_id, title=f"Dump {n}", content="text")

    for tool, key, label in (
        ("search_projects", "projects", "name"),
        ("search_notes", "notes", "title"),
        ("search_brain_dumps", "brain_dumps", "title"),
    ):
        rows, pages = await every_page(executor, crew, tool, key, limit=2)
        assert len({row[label] for row in rows}) == len(rows) == 5, tool
        assert [p["total"] for p in pages] == [5, 5, 5], tool
        assert f"call {tool} again with offset=2" in pages[0]["more"]


async def test_calendar_events_and_free_slots_page(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    for day in range(4):
        await make_event(db, crew.user_id, at(day, 9), title=f"Event {day}")
    window = {"time_min": at(0, 0).isoformat(), "time_max": at(4, 0).isoformat()}

    events, event_pages = await every_page(
        executor, crew, "get_calendar_events", "events", limit=3, **window
    )
    slots, slot_pages = await every_page(
        executor, crew, "find_available_slots", "slots", limit=2, **window
    )

    assert [e["title"] for e in events] == [f"Event {day}" for day in range(4)]
    assert [p["count"] for p in event_pages] == [3, 1]
    assert len(slots) == slot_pages[0]["total"] and len(slot_pages) > 1


async def test_project_details_say_how_to_get_what_they_leave_out(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    project = await make_project(db, crew.user_id, name="Big")
    for n in range(52):
        await make_task(db, crew.user_id, project_id=project, title=f"Task {n}")
    for n in range(21):
        await make_note(db, crew.user_id, project_id=project, title=f"Note {n}", content="x")

    result = await call(
        executor,
        crew.as_executor(),
        "get_project_details",
        project_id=project,
        include_tasks=True,
        include_notes=True,
    )

    details = result.payload
    assert (len(details["tasks"]), len(details["notes"])) == (50, 20)
    assert details["more"] == [
        f"2 more tasks — call list_tasks with project_id={project}, sort_by=open_first and "
        "offset=50.",
        f"1 more notes — call search_notes with project_id={project} and offset=20.",
    ]
    rest = await call(
        executor,
        crew.as_executor(),
        "list_tasks",
        project_id=project,
        offset=50,
        sort_by="open_first",
    )
    seen = {t["title"] for t in details["tasks"] + rest.payload["tasks"]}
    assert seen == {f"Task {n}" for n in range(52)}
