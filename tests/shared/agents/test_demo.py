"""The offline demo model plays every agent: a whole complex turn runs with no API key."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from local.deepseek import NOTICE, FakeModelServer
from shared.auth.access_tokens import User
from shared.db import Database
from shared.dispatch.in_process import InProcessInvoker, run_turn
from shared.usecases.approval_decisions import decide_approval, list_approvals
from tests.support.agent_services import MakeServices
from tests.support.domain_rows import fetch_row, make_event, make_task
from tests.support.factories import make_user
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.stored_rows import stored, types

DEMO = {"llm_planner_model": "parley-demo", "llm_executor_model": "parley-demo"}


async def test_the_demo_model_plans_my_week_end_to_end(
    db: Database, make_services: MakeServices, fake: FakeModelServer
) -> None:
    services = make_services(**DEMO)
    user = await make_user(db)
    await make_task(db, user, title="Call the plumber")
    memory = InMemoryPublisher()

    turn = await run_turn(
        services,
        user_id=user,
        session_id=None,
        publisher=memory,
        message="plan my week: list my tasks and my calendar, then create a task",
    )

    rows = await stored(db, turn.started.plan_id)
    assert (rows.plan.strategy, rows.plan.status) == ("complex", "completed")
    assert [(s.executor_required, s.tools, s.status) for s in rows.steps] == [
        (True, ["list_tasks"], "completed"),
        (True, ["get_calendar_events"], "completed"),
        (False, ["create_task"], "completed"),
    ]
    assert rows.steps[2].depends_on == [1, 2]
    assert "Call the plumber" in (rows.steps[0].result or "")
    said = ["delegation", "status", "tool_result", "completion"]  # text + call (answered)
    assert rows.types_of(1) == said and rows.types_of(3) == said
    async with db.service() as conn:
        cur = await conn.execute(
            "SELECT title FROM tasks WHERE user_id = %s ORDER BY created_at", (user,)
        )
        titles = [row["title"] for row in await cur.fetchall()]
    assert titles == ["Call the plumber", "Demo task from Parley"]
    assert (turn.plan.answer or "").startswith("(demo)") and NOTICE in (turn.plan.answer or "")
    assert types(memory)[-1] == "done" and types(memory).count("step_completed") == 3


async def test_the_demo_model_answers_a_greeting_directly(
    db: Database, make_services: MakeServices, fake: FakeModelServer
) -> None:
    services = make_services(**DEMO)
    user = await make_user(db)

    turn = await run_turn(
        services, user_id=user, session_id=None, message="Hello!", publisher=InMemoryPublisher()
    )

    assert len(fake.requests) == 1
    assert turn.plan.strategy == "direct" and NOTICE in (turn.plan.answer or "")


async def test_the_demo_model_deletes_the_event_its_calendar_step_found_once_approved(
    db: Database, make_services: MakeServices, fake: FakeModelServer
) -> None:
    services = make_services(**DEMO)  # approvals on: the console's demo turn
    user = await make_user(db)
    event = await make_event(db, user, datetime.now(UTC) + timedelta(days=1), title="Dentist")

    turn = await run_turn(
        services,
        user_id=user,
        session_id=None,
        publisher=InMemoryPublisher(),
        message="plan my week: list my tasks and my calendar, then delete the first calendar event",
    )

    assert turn.plan.status == "awaiting_approval"
    [pending] = await list_approvals(services, User(user, {}), turn.started.plan_id)
    assert (pending.tool_name, pending.tool_args) == (
        "delete_calendar_event",
        {"event_id": str(event)},
    )
    await decide_approval(
        services,
        User(user, {}),
        plan_id=turn.started.plan_id,
        approval_id=pending.id,
        decision="approve",
    )
    resumed = await InProcessInvoker(services, InMemoryPublisher()).run_plan(
        plan_id=turn.started.plan_id
    )
    assert resumed.status == "completed"
    row = await fetch_row(db, "calendar_events", event)
    assert row["deleted_at"] is not None


async def test_on_an_empty_calendar_the_demo_says_so_instead_of_deleting_a_made_up_event(
    db: Database, make_services: MakeServices, fake: FakeModelServer
) -> None:
    """A new account with no events (issue 31): the demo turn asks no approval for an event
    that does not exist; its step says there was nothing to delete, and the turn completes."""
    services = make_services(**DEMO)
    user = await make_user(db)

    turn = await run_turn(
        services,
        user_id=user,
        session_id=None,
        publisher=InMemoryPublisher(),
        message="plan my week: list my tasks and my calendar, then delete the first calendar event",
    )

    assert turn.plan.status == "completed"
    assert await list_approvals(services, User(user, {}), turn.started.plan_id) == []
    rows = await stored(db, turn.started.plan_id)
    assert "Nothing for delete_calendar_event to act on" in (rows.steps[2].result or "")
