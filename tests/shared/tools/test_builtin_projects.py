"""Project tools against the real database."""

from __future__ import annotations

from shared.db import Database
from shared.tools import ToolExecutor
from tests.support.domain_rows import (
    Crew,
    call,
    fetch_row,
    make_brain_dump,
    make_crew,
    make_note,
    make_project,
    make_task,
)


async def test_search_projects_by_words_status_and_open_tasks(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    user = crew.user_id
    garden = await make_project(db, user, name="Garden", description="Plant tomatoes " * 40)
    await make_project(
        db, user, name="Taxes", executive_summary="tomatoes receipts", status="paused"
    )
    await make_project(db, user, name="Empty")
    await make_task(db, user, project_id=garden, status="done")
    await make_task(db, user, project_id=garden)
    other = await make_crew(db)
    await make_project(db, other.user_id, name="Garden of someone else")
    me = crew.as_executor()

    tomatoes = await call(executor, me, "search_projects", query="tomatoes")
    paused = await call(executor, me, "search_projects", status="paused")
    busy = await call(executor, me, "search_projects", has_active_tasks=True)
    garden_hit = await call(executor, me, "search_projects", query="garden")

    assert sorted(p["name"] for p in tomatoes.payload["projects"]) == ["Garden", "Taxes"]
    assert [p["name"] for p in paused.payload["projects"]] == ["Taxes"]
    [found] = busy.payload["projects"]
    assert (found["name"], found["task_count"], found["active_task_count"]) == ("Garden", 2, 1)
    assert len(found["preview"]) == 200
    assert [p["name"] for p in garden_hit.payload["projects"]] == ["Garden"]


async def test_search_projects_limit_is_bounded(executor: ToolExecutor, crew: Crew) -> None:
    result = await call(executor, crew.as_executor(), "search_projects", limit=51)
    assert result.error == "invalid_arguments"


async def test_get_project_details_with_everything(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    user = crew.user_id
    project = await make_project(db, user, name="Book", context="A novel")
    await make_task(db, user, project_id=project, title="Outline", status="done")
    await make_task(db, user, project_id=project, title="Chapter 1")
    await make_note(db, user, project_id=project, title="Characters", content="Ann, Bo")
    await make_brain_dump(db, user, project_id=project, content="Maybe a sequel")

    result = await call(
        executor,
        crew.as_executor(),
        "get_project_details",
        project_id=project,
        include_tasks=True,
        include_notes=True,
        include_brain_dumps=True,
    )
    bare = await call(executor, crew.as_executor(), "get_project_details", project_id=project)

    details = result.payload
    assert details["project"]["context"] == "A novel"
    assert details["task_counts"] == {"backlog": 1, "in_progress": 0, "done": 1, "blocked": 0}
    assert [t["title"] for t in details["tasks"]] == ["Chapter 1", "Outline"]  # open first
    assert [n["title"] for n in details["notes"]] == ["Characters"]
    assert [b["preview"] for b in details["brain_dumps"]] == ["Maybe a sequel"]
    assert "tasks" not in bare.payload and "notes" not in bare.payload  # not asked for
    assert "more" not in details  # everything was shown


async def test_get_project_details_of_another_user_is_not_found(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    other = await make_crew(db)
    theirs = await make_project(db, other.user_id)
    result = await call(executor, crew.as_executor(), "get_project_details", project_id=theirs)
    missing_arg = await call(executor, crew.as_executor(), "get_project_details")
    assert (result.error, missing_arg.error) == ("not_found", "invalid_arguments")


async def test_update_project_changes_only_given_fields(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    project = await make_project(db, crew.user_id, name="Old", description="keep me")
    result = await call(
        executor,
        crew.as_planner(),
        "update_project",
        project_id=project,
        updates={
            "name": "New",
            "tags": ["home"],
            "start_date": "2030-01-01",
            "end_date": "2030-02-01",
        },
    )
    cleared = await call(
        executor,
        crew.as_planner(),
        "update_project",
        project_id=project,
        updates={"end_date": None},
    )

    assert result.ok, result.payload
    stored = await fetch_row(db, "projects", project)
    assert (stored["name"], stored["description"], stored["tags"]) == ("New", "keep me", ["home"])
    assert cleared.payload["end_date"] is None


async def test_update_project_refuses_bad_dates_and_foreign_projects(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    mine = await make_project(db, crew.user_id, start_date="2030-03-01")
    other = await make_crew(db)
    theirs = await make_project(db, other.user_id, name="Theirs")
    me = crew.as_planner()

    backwards = await call(
        executor,
        me,
        "update_project",
        project_id=mine,
        updates={"start_date": "2030-02-01", "end_date": "2030-01-01"},
    )
    before_start = await call(
        executor, me, "update_project", project_id=mine, updates={"end_date": "2030-01-01"}
    )
    foreign = await call(
        executor, me, "update_project", project_id=theirs, updates={"name": "Mine"}
    )

    assert backwards.error == "invalid_arguments"
    assert before_start.error == "invalid_arguments"  # caught by the table's CHECK
    assert foreign.error == "not_found"
    assert (await fetch_row(db, "projects", theirs))["name"] == "Theirs"
