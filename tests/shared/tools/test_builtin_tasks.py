"""Task tools against the real database: filters, details, create, update, isolation."""

from __future__ import annotations

from uuid import uuid4

from shared.db import Database
from shared.tools import ToolExecutor
from tests.support.domain_rows import (
    Crew,
    at,
    call,
    fetch_row,
    make_crew,
    make_project,
    make_task,
    snapshot,
)


async def test_list_tasks_filters_sorts_and_counts(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    user = crew.user_id
    launch = await make_project(db, user, name="Launch")
    await make_task(db, user, title="Draft launch post", project_id=launch, priority="low")
    await make_task(
        db,
        user,
        title="Book venue",
        project_id=launch,
        priority="high",
        status="in_progress",
        start_date=at(1, 9),
    )
    await make_task(db, user, title="Old chore", status="done")
    other = await make_crew(db)
    await make_task(db, other.user_id, title="Book venue for someone else", priority="high")
    me = crew.as_planner()

    everything = await call(executor, me, "list_tasks")
    in_launch = await call(executor, me, "list_tasks", project_id=launch, sort_by="priority")
    open_high = await call(
        executor, me, "list_tasks", status=["in_progress", "backlog"], priority=["high"]
    )
    dated = await call(executor, me, "list_tasks", has_date=True)
    found = await call(executor, me, "list_tasks", query="VENUE book")
    first = await call(executor, me, "list_tasks", limit=1)

    assert everything.payload["count"] == 3
    assert [t["title"] for t in in_launch.payload["tasks"]] == ["Book venue", "Draft launch post"]
    assert in_launch.payload["tasks"][0]["project_name"] == "Launch"
    assert [t["title"] for t in open_high.payload["tasks"]] == ["Book venue"]
    assert [t["title"] for t in dated.payload["tasks"]] == ["Book venue"]
    assert dated.payload["tasks"][0]["start_date"] == "2030-06-04T09:00:00+00:00"
    assert [t["title"] for t in found.payload["tasks"]] == ["Book venue"]
    assert (first.payload["count"], first.payload["total"]) == (1, 3)


async def test_list_tasks_rejects_an_unknown_sort(executor: ToolExecutor, crew: Crew) -> None:
    result = await call(executor, crew.as_planner(), "list_tasks", sort_by="random")
    assert result.error == "invalid_arguments"


async def test_list_tasks_treats_like_wildcards_literally(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    await make_task(db, crew.user_id, title="100% done")
    await make_task(db, crew.user_id, title="1000 things")
    result = await call(executor, crew.as_planner(), "list_tasks", query="100%")
    assert [t["title"] for t in result.payload["tasks"]] == ["100% done"]


async def test_get_task_details_with_subtasks_and_project(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    project = await make_project(db, crew.user_id, name="House", context="Renovation in May")
    parent = await make_task(db, crew.user_id, title="Paint", project_id=project, details="Blue")
    await make_task(db, crew.user_id, title="Buy paint", parent_task_id=parent)

    result = await call(
        executor,
        crew.as_executor(),
        "get_task_details",
        task_id=parent,
        include_project_context=True,
    )

    assert result.payload["task"]["details"] == "Blue"
    assert [t["title"] for t in result.payload["subtasks"]] == ["Buy paint"]
    assert result.payload["project"]["context"] == "Renovation in May"


async def test_get_task_details_never_shows_another_users_task(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    other = await make_crew(db)
    theirs = await make_task(db, other.user_id, title="Private")

    result = await call(executor, crew.as_executor(), "get_task_details", task_id=theirs)
    bad = await call(executor, crew.as_executor(), "get_task_details", task_id="not-a-uuid")

    assert result.error == "not_found"
    assert "Private" not in result.content()
    assert bad.error == "invalid_arguments"


async def test_create_task_in_a_project(db: Database, executor: ToolExecutor, crew: Crew) -> None:
    project = await make_project(db, crew.user_id)
    result = await call(
        executor,
        crew.as_planner(),
        "create_task",
        title="Call the printer",
        project_id=project,
        priority="high",
        start_date="2030-06-05T14:00:00",
    )

    assert result.ok, result.payload
    stored = await fetch_row(db, "tasks", result.payload["id"])
    assert (stored["user_id"], stored["project_id"], stored["priority"]) == (
        crew.user_id,
        project,
        "high",
    )
    assert stored["start_date"] == at(2, 14)  # no offset given: read as UTC


async def test_create_task_cannot_use_another_users_project(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    other = await make_crew(db)
    theirs = await make_project(db, other.user_id)
    before = await snapshot(db)

    result = await call(executor, crew.as_planner(), "create_task", title="x", project_id=theirs)
    empty = await call(executor, crew.as_planner(), "create_task", title="")

    assert result.error == "not_found"
    assert empty.error == "invalid_arguments"
    assert await snapshot(db) == before


async def test_update_task_status_stamps_and_clears_completion(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    task = await make_task(db, crew.user_id, title="Ship", start_date=at(0, 9))
    me = crew.as_planner()

    done = await call(executor, me, "update_task", task_id=task, updates={"status": "done"})
    reopened = await call(
        executor,
        me,
        "update_task",
        task_id=task,
        updates={"status": "backlog", "start_date": None, "title": "Ship it"},
    )

    assert done.payload["status"] == "done" and done.payload["completed_at"] is not None
    assert reopened.payload["completed_at"] is None
    assert (reopened.payload["title"], reopened.payload["start_date"]) == ("Ship it", None)


async def test_update_task_rejects_empty_or_null_updates_and_foreign_tasks(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    mine = await make_task(db, crew.user_id)
    other = await make_crew(db)
    theirs = await make_task(db, other.user_id, title="Theirs")
    me = crew.as_planner()

    empty = await call(executor, me, "update_task", task_id=mine, updates={})
    nulled = await call(executor, me, "update_task", task_id=mine, updates={"title": None})
    foreign = await call(executor, me, "update_task", task_id=theirs, updates={"title": "Mine"})
    missing = await call(executor, me, "update_task", task_id=uuid4(), updates={"title": "x"})

    assert (empty.error, nulled.error) == ("invalid_arguments", "invalid_arguments")
    assert "title cannot be null" in str(nulled.payload["message"])
    assert (foreign.error, missing.error) == ("not_found", "not_found")
    assert (await fetch_row(db, "tasks", theirs))["title"] == "Theirs"
