"""A delegation is held by its run without its opening (`shared.db.delegations`), read back
whole.

The opening (goal, step, tools) is put back in SQL from the step and plan rows; it must be
exactly the text `prompts.delegation` wrote and the step's agent was sent, tricky text
included, for every reader: the thread (`dialogue`), a resumed step (`claim_step`), the
timeline view and the transcript."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest

from local.deepseek import FakeModelServer, reply, tool_call
from shared.db import Database, dialogue
from shared.db.step_claims import claim_step
from shared.dispatch.in_process import run_turn
from shared.services import Services
from tests.support.domain_rows import make_task
from tests.support.factories import make_user
from tests.support.holds import scalar
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.plan_calls import week_script
from tests.support.scripting import Script, requests_of
from tests.support.stored_rows import stored

TRICKY = "Find \"quoted\" and 'single', a \\ backslash, % signs %s %%, ünïcödé ✓ —\nline two"
TIMELINE = "session_timeline"
PLANS: dict[str, tuple[str, dict[str, Any]]] = {
    "a goal and tools": (
        "What's on?",
        {
            "goal": TRICKY,
            "steps": [
                {
                    "step_number": 1,
                    "description": TRICKY,
                    "assignee": "executor",
                    "tools": ["list_tasks", "search_projects"],
                }
            ],
        },
    ),
    "no goal (the request stands in), the planner's own step without tools": (
        "Note it: 'x' \\ y ✓",
        {"steps": [{"step_number": 1, "description": TRICKY, "assignee": "planner"}]},
    ),
}


async def readers(db: Database, thread_id: UUID, step_id: UUID) -> list[str]:
    """The delegation's text as each reader gets it."""
    async with db.service() as conn:
        (row,) = [
            m
            for m in await dialogue.list_thread_messages(conn, thread_id=thread_id)
            if m.message_type == "delegation"
        ]
        claimed = await claim_step(
            conn, step_id=step_id, attempt=1, owner="test", seconds=1, executor_only=False
        )
    assert claimed is not None
    (resumed,) = [m.content for m in claimed.messages if m.message_type == "delegation"]
    timeline = await scalar(
        db, "SELECT content FROM session_timeline WHERE message_id = %s", row.id
    )
    return [row.content, resumed, str(timeline)]


@pytest.mark.parametrize("case", PLANS)
async def test_a_delegation_is_held_by_its_run_without_its_opening_and_read_back_as_sent(
    db: Database, services: Services, script: Script, fake: FakeModelServer, case: str
) -> None:
    message, plan = PLANS[case]
    script.planner(reply(tool_call("create_plan", **plan)), reply("Done."))
    kind = plan["steps"][0]["assignee"].replace("planner", "planner_step")
    script.step("line two", reply(tool_call("complete", result="Nothing there.")), kind=kind)
    user = await make_user(db)

    turn = await run_turn(
        services, user_id=user, session_id=None, message=message, publisher=InMemoryPublisher()
    )

    assert turn.plan.status == "completed" and script.unscripted == []
    rows = await stored(db, turn.started.plan_id)
    thread = rows.thread_of(1)
    rows_stored = await scalar(
        db, "SELECT count(*) FROM agent_chat_messages WHERE agent_session_id = %s", thread.id
    )
    held = await scalar(
        db,
        "SELECT delegation_rest FROM agent_executions WHERE id = %s AND delegation_seq > 0",
        thread.id,
    )
    assert rows_stored == 1  # the completion: the run holds the delegation,
    assert held is None  # and the step and plan rows all it says
    sent = requests_of(fake, kind, "line two")[0].messages[1]["content"]
    assert sent.startswith("Goal of the plan: ") and TRICKY in sent
    assert await readers(db, thread.id, rows.steps[0].id) == [sent, sent, sent]


async def test_a_delegation_stores_the_results_it_was_given_and_reads_back_as_sent(
    db: Database, services: Services, script: Script, fake: FakeModelServer
) -> None:
    """The write step of the week plan depends on two lookups: their results are stored."""
    user = await make_user(db)
    await make_task(db, user, title="Write report")
    week_script(script, fake)

    turn = await run_turn(
        services, user_id=user, session_id=None, message="my week", publisher=InMemoryPublisher()
    )

    rows = await stored(db, turn.started.plan_id)
    thread = rows.thread_of(3)
    raw = str(
        await scalar(db, "SELECT delegation_rest FROM agent_executions WHERE id = %s", thread.id)
    )
    assert raw.startswith("\n\nResult of step 1 (") and "Result of step 2 (" in raw
    sent = requests_of(fake, "planner_step")[0].messages[1]["content"]
    assert sent.endswith(raw) and not sent.startswith(raw)
    assert await readers(db, thread.id, rows.steps[2].id) == [sent, sent, sent]
