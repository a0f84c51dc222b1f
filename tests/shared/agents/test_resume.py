"""A planner that dies mid-plan is re-invoked and continues from the tables.

Deaths are injected at seams the production code has anyway — the invoker (after a step is
stored) and the publisher (right after a row is stored, before it is announced) — never by
patching internals.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any
from uuid import UUID

import pytest

from local.deepseek import FakeModelServer, reply, tool_call
from shared.agents import StepOutcome, run_executor_step, run_plan, start_turn
from shared.db import Database
from shared.dispatch.in_process import InProcessInvoker, run_turn
from shared.events import Event, EventEmitter
from shared.kernel.errors import InvalidInput
from shared.services import Services
from tests.support.domain_rows import make_task
from tests.support.factories import make_user
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.plan_calls import complete_with_results, plan_call, synthesis
from tests.support.scripting import Script, requests_of
from tests.support.stored_rows import of_type, stored

FIND = "Find the user's tasks about the garden"
WRITE = "Create a task titled Buy seeds"
TWO_STEPS: dict[str, Any] = {
    "goal": "Garden",
    "steps": [
        {"step_number": 1, "description": FIND, "assignee": "executor", "tools": ["list_tasks"]},
        {
            "step_number": 2,
            "description": WRITE,
            "assignee": "planner",
            "depends_on": [1],
            "tools": ["create_task"],
        },
    ],
}


class Crash(BaseException):
    """The process died here (nothing in it handles that, hence not an `Exception`)."""


class CrashAfterStep:
    """An invoker that runs a step, then dies before telling the planner (a lost response)."""

    hands_off = False

    def __init__(self, inner: InProcessInvoker) -> None:
        self.inner = inner

    async def run_plan(self, *, plan_id: UUID) -> Any:
        return await self.inner.run_plan(plan_id=plan_id)

    async def run_step(self, *, step_id: UUID, attempt: int) -> StepOutcome:
        await self.inner.run_step(step_id=step_id, attempt=attempt)
        raise Crash("the planner's process died after step 1 was stored")

    async def start_step(self, *, plan_id: UUID, step_id: UUID, attempt: int) -> None:
        raise AssertionError("this invoker waits for its steps")


class CrashOnEvent(InMemoryPublisher):
    """Dies once, publishing the first event `when` picks: the row is stored, not announced."""

    def __init__(self, when: Callable[[Event], bool]) -> None:
        super().__init__()
        self.when = when
        self.crashed = False

    async def publish(self, events: Sequence[Event]) -> None:
        if not self.crashed and any(self.when(e) for e in events):
            self.crashed = True
            raise Crash("died right after storing a tool result")
        await super().publish(events)


def script_garden(script: Script) -> None:
    script.planner(plan_call(TWO_STEPS), synthesis)
    script.step(
        FIND, reply(tool_call("list_tasks", query="garden")), complete_with_results("Garden tasks")
    )
    script.step(
        WRITE,
        reply(tool_call("create_task", title="Buy seeds")),
        reply(tool_call("complete", result="Created Buy seeds")),
        kind="planner_step",
    )


async def test_a_plan_that_died_after_step_1_resumes_without_repeating_step_1(
    db: Database, services: Services, script: Script, fake: FakeModelServer
) -> None:
    user = await make_user(db)
    await make_task(db, user, title="Weed the garden")
    script_garden(script)
    first_run = InMemoryPublisher()
    dying = CrashAfterStep(InProcessInvoker(services, first_run))
    started = await start_turn(services, user_id=user, session_id=None, message="garden plan")
    emitter = EventEmitter(db, first_run, session_id=started.session_id)
    with pytest.raises(Crash):
        await run_plan(services, plan_id=started.plan_id, emitter=emitter, invoker=dying)

    middle = await stored(db, started.plan_id)
    assert middle.plan.status == "executing"
    assert [s.status for s in middle.steps] == ["completed", "pending"]
    assert of_type(first_run, "done") == []
    executor_calls = len(requests_of(fake, "executor", FIND))
    assert executor_calls == 2  # list_tasks, then complete

    second_run = InMemoryPublisher()
    outcome = await InProcessInvoker(services, second_run).run_plan(plan_id=started.plan_id)

    assert outcome.status == "completed"
    assert "Garden tasks: Weed the garden" in (outcome.answer or "")
    assert len(requests_of(fake, "executor", FIND)) == executor_calls  # step 1 was not re-run
    assert len(requests_of(fake, "planner")) == 2  # the plan was not written again
    after = await stored(db, started.plan_id)
    assert [s.status for s in after.steps] == ["completed", "completed"]
    assert after.types_of(1).count("tool_result") == 1  # the call, answered in its row
    assert len([e for e in after.executions if e.step_id == after.steps[0].id]) == 1
    assert [e.type for e in second_run.events].count("done") == 1
    assert second_run.events[-1].type == "done"

    redelivered = await run_executor_step(
        services, step_id=after.steps[0].id, attempt=1, publisher=InMemoryPublisher()
    )
    assert (redelivered.status, redelivered.result) == ("completed", after.steps[0].result)
    assert len(requests_of(fake, "executor", FIND)) == executor_calls  # nothing re-run
    with pytest.raises(InvalidInput, match="planner's own step"):
        await run_executor_step(
            services, step_id=after.steps[1].id, attempt=1, publisher=InMemoryPublisher()
        )


async def test_a_step_that_died_mid_thread_resumes_in_its_thread_without_repeating_its_tool_call(
    db: Database, services: Services, script: Script, fake: FakeModelServer
) -> None:
    user = await make_user(db)
    await make_task(db, user, title="Weed the garden")
    script_garden(script)
    crashing = CrashOnEvent(
        lambda e: e.type == "agent_message" and e.data["message_type"] == "tool_result"
    )

    with pytest.raises(Crash):
        await run_turn(
            services, user_id=user, session_id=None, message="garden plan", publisher=crashing
        )
    plan_id = next(e.plan_id for e in crashing.events if e.plan_id is not None)
    assert plan_id is not None
    middle = await stored(db, plan_id)
    assert middle.steps[0].status == "running"
    assert middle.types_of(1) == ["delegation", "tool_result"]  # the call, answered
    assert len(requests_of(fake, "executor", FIND)) == 1

    outcome = await InProcessInvoker(services, InMemoryPublisher()).run_plan(plan_id=plan_id)

    assert outcome.status == "completed"
    resumed = requests_of(fake, "executor", FIND)
    assert len(resumed) == 2  # one more call, which already holds the stored tool result
    assert resumed[1].messages[-1]["role"] == "tool"
    assert "Weed the garden" in str(resumed[1].messages[-1]["content"])
    after = await stored(db, plan_id)
    assert after.types_of(1) == ["delegation", "tool_result", "completion"]
    (execution,) = [e for e in after.executions if e.step_id == after.steps[0].id]
    assert (execution.status, execution.llm_calls, execution.tool_call_count) == ("completed", 2, 1)
