"""Calls are Parley's: its own ids, unique within a plan, and approvals bound to the exact call.

The fake model here behaves like OpenAI-compatible servers that number calls per response
(`call_0`, `call_1`, ... in every reply).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from local.deepseek import FakeModelServer, ScriptedCall, reply, tool_call
from shared.db import Database
from shared.dispatch.in_process import InProcessInvoker, run_turn
from shared.services import Services
from shared.usecases.approval_decisions import decide_approval, list_approvals
from tests.shared.agents.test_human_approvals import DELETE_STEP, WHERE
from tests.shared.agents.test_limits import LOOKUP, ONE_STEP
from tests.support.domain_rows import fetch_row, make_event, make_task
from tests.support.factories import make_user
from tests.support.holds import as_user
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.scripting import Script, requests_of, tool_results
from tests.support.stored_rows import stored


def delete(event: object) -> ScriptedCall:
    return tool_call("delete_calendar_event", event_id=str(event)).with_id("call_0")


@pytest.mark.parametrize("where", WHERE)
async def test_an_approval_never_covers_a_later_call_that_reuses_its_id(
    db: Database, services: Services, script: Script, where: str
) -> None:
    user = await make_user(db)
    soon = datetime.now(UTC) + timedelta(days=1)
    dentist = await make_event(db, user, soon, title="Dentist")
    party = await make_event(db, user, soon + timedelta(hours=3), title="Party")
    first, second = reply(delete(dentist)), reply(delete(party))  # both `call_0`
    if where == "planner_loop":
        script.planner(first, second, reply("Both handled."))
    else:
        step = {
            "step_number": 1,
            "description": DELETE_STEP,
            "assignee": "planner",
            "tools": ["delete_calendar_event"],
        }
        plan = tool_call("create_plan", goal="Clear the evening", steps=[step])
        script.planner(reply(plan), reply("Both handled."))
        script.step(
            DELETE_STEP,
            first,
            second,
            reply(tool_call("complete", result="ok")),
            kind="planner_step",
        )
    turn = await run_turn(
        services,
        user_id=user,
        session_id=None,
        message="clear my evening",
        publisher=InMemoryPublisher(),
    )
    plan_id = turn.started.plan_id
    (asked,) = await list_approvals(services, as_user(user), plan_id)
    await decide_approval(
        services, as_user(user), plan_id=plan_id, approval_id=asked.id, decision="approve"
    )

    resumed = await InProcessInvoker(services, InMemoryPublisher()).run_plan(plan_id=plan_id)

    assert resumed.status == "awaiting_approval"  # the second delete waits for its own yes
    assert (await fetch_row(db, "calendar_events", dentist))["deleted_at"] is not None
    assert (await fetch_row(db, "calendar_events", party))["deleted_at"] is None
    approvals = await list_approvals(services, as_user(user), plan_id)
    assert [(a.status, a.tool_args) for a in approvals] == [
        ("approved", {"event_id": str(dentist)}),
        ("pending", {"event_id": str(party)}),
    ]
    assert approvals[0].tool_call_id != approvals[1].tool_call_id
    assert "call_0" not in {a.tool_call_id for a in approvals}


async def test_calls_get_ids_unique_within_the_plan_whatever_the_provider_sends(
    db: Database, services: Services, script: Script, fake: FakeModelServer
) -> None:
    """Two rounds whose calls are both `call_0`: each runs, each result answers its own call,
    and the history the model gets back pairs them correctly."""
    user = await make_user(db)
    await make_task(db, user, title="Water the plants")
    script.planner(
        reply(tool_call("list_tasks").with_id("call_0")),
        reply(tool_call("list_projects").with_id("call_0")),
        reply("You have one task and no projects."),
    )
    turn = await run_turn(
        services,
        user_id=user,
        session_id=None,
        message="what do I have?",
        publisher=InMemoryPublisher(),
    )

    assert turn.plan.status == "completed"
    rows = await stored(db, turn.started.plan_id)
    calls = [c["id"] for m in rows.messages if m.tool_calls for c in m.tool_calls]
    results = [(m.tool_call_id, m.tool_name) for m in rows.messages if m.role == "tool"]
    assert len(calls) == len(set(calls)) == 2 and "call_0" not in calls
    assert results == [(calls[0], "list_tasks"), (calls[1], "list_projects")]
    last = requests_of(fake, "planner")[-1]
    answered = [m["tool_call_id"] for m in last.messages if m.get("role") == "tool"]
    assert answered == calls
    assert "Water the plants" in tool_results(last)[0]


async def test_executor_calls_get_parleys_ids_too(
    db: Database, services: Services, script: Script
) -> None:
    user = await make_user(db)
    script.planner(reply(tool_call("create_plan", **ONE_STEP)), reply("Done."))
    script.step(
        LOOKUP,
        reply(tool_call("list_tasks").with_id("call_0")),
        reply(tool_call("complete", result="No tasks.").with_id("call_0")),
    )
    turn = await run_turn(
        services, user_id=user, session_id=None, message="tasks?", publisher=InMemoryPublisher()
    )
    rows = await stored(db, turn.started.plan_id)
    said = rows.dialogue[rows.threads[0].id]
    ids = [m.tool_call_id for m in said if m.tool_call_id is not None]
    assert turn.plan.status == "completed"
    assert ids and "call_0" not in ids
