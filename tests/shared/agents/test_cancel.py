"""Cancelling mid-plan: agents stop at their next check; nothing more is asked of the model."""

from __future__ import annotations

import asyncio
import threading

from local.deepseek import FakeModelServer, RecordedRequest, Reply, reply, tool_call
from shared.agents import request_cancel, start_turn
from shared.db import Database
from shared.dispatch.in_process import InProcessInvoker
from shared.services import Services
from tests.shared.agents.test_limits import LOOKUP, ONE_STEP
from tests.support.factories import make_user
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.plan_calls import plan_call, synthesis
from tests.support.scripting import Script
from tests.support.stored_rows import of_type, stored


async def test_a_cancel_mid_plan_stops_every_agent_before_its_next_model_call(
    db: Database, services: Services, script: Script, fake: FakeModelServer
) -> None:
    in_flight = threading.Event()

    def hold_executor(request: RecordedRequest) -> Reply:
        in_flight.set()  # the executor's first call is here; it is answered after the cancel
        return reply(tool_call("list_tasks")).stalled(after=0)

    script.planner(plan_call(ONE_STEP), synthesis)
    script.step(LOOKUP, hold_executor, reply(tool_call("complete", result="never asked")))
    user = await make_user(db)
    started = await start_turn(services, user_id=user, session_id=None, message="tasks?")
    memory = InMemoryPublisher()

    async def cancel_when_the_executor_is_mid_call() -> int:
        await asyncio.wait_for(asyncio.to_thread(in_flight.wait, 10), 15)
        await request_cancel(services, plan_id=started.plan_id, user_id=user)
        seen = len(fake.requests)
        fake.release()
        return seen

    outcome, requests_at_cancel = await asyncio.gather(
        InProcessInvoker(services, memory).run_plan(plan_id=started.plan_id),
        cancel_when_the_executor_is_mid_call(),
    )

    assert requests_at_cancel == 2 and len(fake.requests) == 2  # no call after the flag
    assert outcome.status == "cancelled" and outcome.answer is None
    rows = await stored(db, started.plan_id)
    assert rows.plan.status == "cancelled" and rows.plan.cancel_requested_at is not None
    assert [s.status for s in rows.steps] == ["cancelled"]
    assert rows.thread_of(1).status == "abandoned"
    assert {e.status for e in rows.executions} == {"cancelled"}
    assert rows.types_of(1) == ["delegation", "tool_call"]  # partial output kept, tool not run
    spent = sum(e.cost_usd for e in rows.executions)
    assert rows.plan.cost_usd == spent > 0  # usage of both calls made is kept
    assert [e.type for e in memory.events].count("done") == 1
    assert memory.events[-1].type == "done" and memory.events[-1].data["status"] == "cancelled"
    assert of_type(memory, "step_completed")[0].data["status"] == "cancelled"
