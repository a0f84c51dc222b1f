"""Writes that happen once: a run killed between a write tool's commit and its result row.

The write commits in its own transaction (as the user); the kill strikes the next write, the
tool result row. The resumed run finds the call without a result and answers it again — from
the idempotency key recorded with the write, not by writing a second time.
"""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

import psycopg
import pytest

from local.deepseek import FakeModelServer, reply, tool_call
from shared.agents.changes import changes_note
from shared.db import Database, receipts
from shared.db.receipts import CallKey
from shared.dispatch.in_process import InProcessInvoker, run_turn
from shared.services import Services
from tests.shared.agents.test_resume import FIND, WRITE, script_garden
from tests.support.domain_rows import make_task
from tests.support.factories import make_user
from tests.support.holds import scalar
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.kills import Kill
from tests.support.scripting import Script, requests_of
from tests.support.stored_rows import stored

RECEIPTS = "parley_private.tool_call_receipts"
RESULT_ROW = "NEW.message_type = 'tool_result' AND NEW.tool_name = 'create_task'"


async def count_tasks(db: Database, user: UUID, title: str) -> int:
    query = "SELECT count(*) FROM tasks WHERE user_id = %s AND title = %s"
    return int(await scalar(db, query, user, title))


async def test_a_step_killed_after_its_write_committed_does_not_write_again(
    db: Database, services: Services, script: Script, fake: FakeModelServer
) -> None:
    user = await make_user(db)
    await make_task(db, user, title="Weed the garden")
    script_garden(script)
    async with Kill(db, "agent_chat_messages", RESULT_ROW, on="UPDATE") as kill:
        with pytest.raises(psycopg.OperationalError):
            await run_turn(
                services,
                user_id=user,
                session_id=None,
                message="garden plan",
                publisher=InMemoryPublisher(),
            )
        assert await kill.fired() == 1
    assert await count_tasks(db, user, "Buy seeds") == 1  # the write committed before the kill
    plan_id = await scalar(
        db, "SELECT id FROM agent_plans WHERE user_id = %s AND status = 'executing'", user
    )

    outcome = await InProcessInvoker(services, InMemoryPublisher()).run_plan(plan_id=plan_id)

    assert outcome.status == "completed"
    assert await count_tasks(db, user, "Buy seeds") == 1
    after = await stored(db, plan_id)
    assert after.types_of(2) == ["delegation", "tool_result", "completion"]
    (result,) = [
        m
        for m in after.dialogue[after.thread_of(2).id]
        if m.message_type == "tool_result" and m.tool_name == "create_task"
    ]
    assert json.loads(result.content)["title"] == "Buy seeds"
    receipt = await one(db, f"SELECT result FROM {RECEIPTS} WHERE plan_id = %s", plan_id)
    assert receipt["result"] is None  # the step's row holds it now, once
    assert len(requests_of(fake, "planner_step", WRITE)) == 2  # no model call was repeated
    assert len(requests_of(fake, "executor", FIND)) == 2


async def test_a_planner_tool_call_killed_after_its_write_does_not_write_again(
    db: Database, services: Services, script: Script
) -> None:
    user = await make_user(db)
    script.planner(
        reply(tool_call("create_task", title="Call the plumber")),
        reply("Done: the task is on your list."),
    )
    async with Kill(db, "chat_messages", "NEW.role = 'tool' AND NEW.tool_name = 'create_task'"):
        with pytest.raises(psycopg.OperationalError):
            await run_turn(
                services,
                user_id=user,
                session_id=None,
                message="remind me",
                publisher=InMemoryPublisher(),
            )
    plan_id = await scalar(db, "SELECT id FROM agent_plans WHERE user_id = %s", user)

    outcome = await InProcessInvoker(services, InMemoryPublisher()).run_plan(plan_id=plan_id)

    assert (outcome.status, outcome.strategy) == ("completed", "tool")
    assert await count_tasks(db, user, "Call the plumber") == 1
    # The resumed run stored the result's row: the receipt names it instead of a copy.
    receipt = await one(db, f"SELECT result FROM {RECEIPTS} WHERE plan_id = %s", plan_id)
    assert receipt["result"] is None


async def one(db: Database, query: str, *params: Any) -> dict[str, Any]:
    async with db.service() as conn:
        found = await (await conn.execute(query, params)).fetchall()
    assert len(found) == 1, found
    return dict(found[0])


async def test_a_receipt_keeps_its_result_until_the_row_holds_it_then_reads_it_there(
    db: Database, services: Services, script: Script
) -> None:
    """A write's result is kept once: on its receipt while no row answers the call (a run
    that dies then resumes from it, above), then on the row alone, where readers of the
    receipt — a call made again, the note of what a failed turn changed — find it."""
    user = await make_user(db)
    script.planner(
        reply(tool_call("create_task", title="Call the plumber")),
        reply("Done: the task is on your list."),
    )
    publisher = InMemoryPublisher()
    await run_turn(services, user_id=user, session_id=None, message="remind", publisher=publisher)
    plan_id = await scalar(db, "SELECT id FROM agent_plans WHERE user_id = %s", user)
    tool_row = (
        "SELECT content, tool_call_id FROM chat_messages WHERE plan_id = %s AND role = 'tool'"
    )
    row = await one(db, tool_row, plan_id)
    copy = await one(db, f"SELECT result, call_hash FROM {RECEIPTS} WHERE plan_id = %s", plan_id)
    assert copy["result"] is None
    async with db.service() as conn:
        key = CallKey(plan_id, row["tool_call_id"], copy["call_hash"])
        receipt = await receipts.find(conn, key)
        note = await changes_note(conn, plan_id=plan_id, who="this turn")
    assert receipt is not None and receipt.result == json.loads(row["content"])
    assert 'create_task ("Call the plumber")' in note
