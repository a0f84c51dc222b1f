"""Note and brain dump tools against the real database."""

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
    snapshot,
)


async def test_search_notes_by_words_project_and_category(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    user = crew.user_id
    project = await make_project(db, user)
    await make_note(db, user, title="Recipe", content="Tomato soup with basil", category="food")
    await make_note(
        db, user, title="Ideas", content="basil garden " + "x" * 500, project_id=project
    )
    other = await make_crew(db)
    await make_note(db, other.user_id, title="Basil secrets", content="not yours")
    me = crew.as_executor()

    basil = await call(executor, me, "search_notes", query="basil")
    in_project = await call(executor, me, "search_notes", project_id=project)
    food = await call(executor, me, "search_notes", category="food")

    assert sorted(n["title"] for n in basil.payload["notes"]) == ["Ideas", "Recipe"]
    assert [n["title"] for n in in_project.payload["notes"]] == ["Ideas"]
    assert len(in_project.payload["notes"][0]["preview"]) == 200
    assert [n["title"] for n in food.payload["notes"]] == ["Recipe"]


async def test_search_notes_rejects_a_non_integer_limit(executor: ToolExecutor, crew: Crew) -> None:
    result = await call(executor, crew.as_executor(), "search_notes", limit="many")
    assert result.error == "invalid_arguments"


async def test_get_note_details_returns_the_full_text_of_own_notes_only(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    mine = await make_note(db, crew.user_id, content="long " * 200)
    other = await make_crew(db)
    theirs = await make_note(db, other.user_id, content="secret")

    full = await call(executor, crew.as_executor(), "get_note_details", note_id=mine)
    hidden = await call(executor, crew.as_executor(), "get_note_details", note_id=theirs)
    bad = await call(executor, crew.as_executor(), "get_note_details", note="x")

    assert full.payload["content"] == "long " * 200
    assert (hidden.error, bad.error) == ("not_found", "invalid_arguments")


async def test_create_note(db: Database, executor: ToolExecutor, crew: Crew) -> None:
    project = await make_project(db, crew.user_id)
    result = await call(
        executor,
        crew.as_planner(),
        "create_note",
        content="Remember milk",
        title="Shopping",
        project_id=project,
        tags=["errand"],
    )
    empty = await call(executor, crew.as_planner(), "create_note", content="")
    other = await make_crew(db)
    theirs = await make_project(db, other.user_id)
    foreign = await call(executor, crew.as_planner(), "create_note", content="x", project_id=theirs)

    stored = await fetch_row(db, "notes", result.payload["id"])
    assert (stored["user_id"], stored["title"], stored["tags"]) == (
        crew.user_id,
        "Shopping",
        ["errand"],
    )
    assert (empty.error, foreign.error) == ("invalid_arguments", "not_found")


async def test_search_brain_dumps_by_words_and_status(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    await make_brain_dump(db, crew.user_id, content="Start a podcast about birds")
    await make_brain_dump(db, crew.user_id, content="Birds again", status="completed")
    other = await make_crew(db)
    await make_brain_dump(db, other.user_id, content="birds birds")
    me = crew.as_executor()

    birds = await call(executor, me, "search_brain_dumps", query="birds")
    done = await call(executor, me, "search_brain_dumps", status="completed")
    bad = await call(executor, me, "search_brain_dumps", status="archived")

    assert birds.payload["count"] == 2
    assert [b["preview"] for b in done.payload["brain_dumps"]] == ["Birds again"]
    assert bad.error == "invalid_arguments"


async def test_get_brain_dump_details_own_only(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    mine = await make_brain_dump(db, crew.user_id, content="All of it", title="Dump")
    other = await make_crew(db)
    theirs = await make_brain_dump(db, other.user_id)

    found = await call(executor, crew.as_executor(), "get_brain_dump_details", brain_dump_id=mine)
    hidden = await call(
        executor, crew.as_executor(), "get_brain_dump_details", brain_dump_id=theirs
    )
    bad = await call(executor, crew.as_executor(), "get_brain_dump_details", brain_dump_id=7)

    assert (found.payload["title"], found.payload["content"]) == ("Dump", "All of it")
    assert (hidden.error, bad.error) == ("not_found", "invalid_arguments")


async def test_create_brain_dump_is_pending_and_checks_the_project(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    other = await make_crew(db)
    theirs = await make_project(db, other.user_id)
    created = await call(executor, crew.as_planner(), "create_brain_dump", content="ideas...")
    before = await snapshot(db)
    empty = await call(executor, crew.as_planner(), "create_brain_dump", content="")
    foreign = await call(
        executor, crew.as_planner(), "create_brain_dump", content="x", project_id=theirs
    )

    assert created.payload["status"] == "pending"
    assert (foreign.error, empty.error) == ("not_found", "invalid_arguments")
    assert await snapshot(db) == before
