"""Kill anywhere: a runner killed at any point of a complex plan with a write step.

The week plan runs through the queues (two executor steps, one asking the planner a question,
then the planner's own write step and the answer). At each kill point one write is made to
fail inside its transaction — the runner "dies" there, with everything before committed and
nothing after done — or, at the queue seams, a message is lost the way a kill loses it.
Redelivery (the failed message comes back) or the sweeper (a dead runner's lease left live,
its redelivery dropped, the lease expiring) must then complete the plan, with:

* the plan completed, answered, and announced `done` exactly once;
* no step that had finished before the kill run again (no model call for it afterwards);
* the write — "Weekly review" — made exactly once, also when the kill falls between the
  write's commit and its result row.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal
from uuid import UUID

import pytest

from local.deepseek import FakeModelServer, reply
from shared.db import Database
from tests.aws.test_queues import a_user_with_a_week, done_events, send
from tests.aws.test_sweeper import expire_plan_lease, sweep
from tests.support.cloud import Cloud, Delivery, Function
from tests.support.holds import plan_row, scalar, set_plan_lease
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.kills import Kill
from tests.support.plan_calls import CALENDAR_STEP, TASKS_STEP, WRITE_STEP, week_script
from tests.support.scripting import Script, requests_of
from tests.support.stored_rows import stored

Functions = dict[str, Function]
MARKERS = {
    1: ("executor", TASKS_STEP),
    2: ("executor", CALENDAR_STEP),
    3: ("planner_step", WRITE_STEP),
}


@dataclass(frozen=True)
class KillPoint:
    name: str
    table: str
    when: str
    on: Literal["INSERT", "UPDATE"] = "INSERT"


DIALOGUE, PLANS, STEPS, MESSAGES = (
    "agent_chat_messages",
    "agent_plans",
    "agent_plan_steps",
    "chat_messages",
)
WRITE_COMMITTED = KillPoint(
    "write committed, its result not stored",
    DIALOGUE,
    "NEW.message_type = 'tool_result' AND NEW.tool_name = 'create_task'",
    "UPDATE",  # the result is stored in its call's row
)
POINTS = [
    KillPoint(
        "plan starts executing",
        PLANS,
        "NEW.status = 'executing' AND OLD.status = 'pending'",
        "UPDATE",
    ),
    KillPoint("plan written", MESSAGES, "NEW.role = 'assistant' AND NEW.tool_calls IS NOT NULL"),
    KillPoint(
        "steps queued, not yet marked",
        STEPS,
        "NEW.dispatched_at IS NOT NULL AND OLD.dispatched_at IS NULL",
        "UPDATE",
    ),
    KillPoint(
        "executor step opening", STEPS, "NEW.status = 'running' AND NEW.step_number = 1", "UPDATE"
    ),
    KillPoint(
        "executor's tool call stored",
        DIALOGUE,
        "NEW.message_type = 'tool_call' AND NEW.tool_name = 'list_tasks'",
    ),
    KillPoint("planner's answer to the question", DIALOGUE, "NEW.message_type = 'answer'"),
    KillPoint(
        "write call stored",
        DIALOGUE,
        "NEW.message_type = 'tool_call' AND NEW.tool_name = 'create_task'",
    ),
    WRITE_COMMITTED,
    KillPoint(
        "write step completing",
        STEPS,
        "NEW.status = 'completed' AND NOT NEW.executor_required",
        "UPDATE",
    ),
    KillPoint(
        "step results stored",
        MESSAGES,
        "NEW.role = 'tool' AND NEW.metadata ->> 'kind' = 'plan_results'",
    ),
    KillPoint("answer stored", MESSAGES, "NEW.role = 'assistant' AND NEW.tool_calls IS NULL"),
    KillPoint("plan completing", PLANS, "NEW.status = 'completed'", "UPDATE"),
]


@dataclass
class AtKill:
    """What had finished when the kill struck, and how many model calls each step had made."""

    finished: set[int]
    calls: dict[int, int]


def script_week(script: Script, fake: FakeModelServer) -> None:
    """The week plan, one step at a time; the planner's answer to the executor's question may
    be asked for twice (a kill before it was stored loses it, and it is asked again)."""
    week_script(script, fake, prove_overlap=False)
    script.answers(reply("No: only open tasks."), reply("No: only open tasks."))


async def snapshot(db: Database, fake: FakeModelServer, plan_id: UUID) -> AtKill:
    steps = (await stored(db, plan_id)).steps
    calls = {n: len(requests_of(fake, kind, marker)) for n, (kind, marker) in MARKERS.items()}
    return AtKill({s.step_number for s in steps if s.status == "completed"}, calls)


async def run_with(
    db: Database,
    cloud: Cloud,
    functions: Functions,
    fake: FakeModelServer,
    user: UUID,
    on_failure: Callable[[Delivery, UUID], Awaitable[None]] | None = None,
    **body: Any,
) -> tuple[UUID, AtKill | None]:
    """The week plan through the queues (`body`: more of the chat request); the state at the
    first failed delivery."""
    plan_id = UUID((await send(functions, user, **body))["plan_id"])
    seen: list[AtKill] = []

    async def after(delivery: Delivery) -> None:
        if delivery.failed and not seen:
            seen.append(await snapshot(db, fake, plan_id))
            if on_failure is not None:
                await on_failure(delivery, plan_id)

    await cloud.drain(functions, after=after)
    return plan_id, (seen[0] if seen else None)


async def assert_completed_once(
    db: Database,
    fake: FakeModelServer,
    events: InMemoryPublisher,
    user: UUID,
    plan_id: UUID,
    at_kill: AtKill,
) -> None:
    after = await stored(db, plan_id)
    assert after.plan.status == "completed", after.plan.error
    assert after.answer.content.startswith("Your week.")
    assert [s.status for s in after.steps] == ["completed", "completed", "completed"]
    assert len(done_events(events, plan_id)) == 1
    assert (
        await scalar(
            db,
            "SELECT count(*) FROM tasks WHERE user_id = %s AND title = %s",
            user,
            "Weekly review",
        )
        == 1
    )
    for number, (kind, marker) in MARKERS.items():
        calls = len(requests_of(fake, kind, marker))
        if number in at_kill.finished:
            assert calls == at_kill.calls[number], f"step {number} ran again"
    assert [len([e for e in after.executions if e.step_id == s.id]) for s in after.steps] == [
        1,
        1,
        1,
    ]


@pytest.mark.parametrize("point", POINTS, ids=[p.name for p in POINTS])
async def test_killed_at_a_write_then_redelivered(
    point: KillPoint,
    db: Database,
    cloud: Cloud,
    functions: Functions,
    script: Script,
    fake: FakeModelServer,
    events: InMemoryPublisher,
) -> None:
    user = await a_user_with_a_week(db)
    script_week(script, fake)
    async with Kill(db, point.table, point.when, on=point.on) as kill:
        plan_id, at_kill = await run_with(db, cloud, functions, fake, user)
        assert await kill.fired() == 1
    assert at_kill is not None
    await assert_completed_once(db, fake, events, user, plan_id, at_kill)


async def test_killed_after_a_step_settled_before_its_resume_was_sent(
    db: Database,
    cloud: Cloud,
    functions: Functions,
    script: Script,
    fake: FakeModelServer,
    events: InMemoryPublisher,
) -> None:
    """The executor dies between committing its step and queueing the plan's resume: its
    message comes back, finds the step settled, and queues the resume then."""
    user = await a_user_with_a_week(db)
    script_week(script, fake)
    plan_id = UUID((await send(functions, user))["plan_id"])
    await cloud.deliver("planner", functions["agent_planner"])
    first = await cloud.deliver("executor", functions["agent_executor"])
    assert first is not None
    lost = cloud.take("planner")  # the resume it sent never was: the kill came first
    assert lost == {
        "type": "resume_plan",
        "plan_id": str(plan_id),
        "step_id": first.body["step_id"],
    }
    cloud.send("executor", first.body)  # ... and its message was not deleted: back it comes
    at_kill = await snapshot(db, fake, plan_id)

    await cloud.drain(functions)

    await assert_completed_once(db, fake, events, user, plan_id, at_kill)


SWEPT = [WRITE_COMMITTED, next(p for p in POINTS if p.name == "answer stored")]


@pytest.mark.parametrize("point", SWEPT, ids=[p.name for p in SWEPT])
async def test_killed_at_a_write_and_finished_by_the_sweeper(
    point: KillPoint,
    db: Database,
    cloud: Cloud,
    functions: Functions,
    script: Script,
    fake: FakeModelServer,
    events: InMemoryPublisher,
) -> None:
    """A real kill leaves the runner's lease live: the redelivery finds it taken and leaves;
    once the lease expires, the sweeper hands the plan to the planner again."""
    user = await a_user_with_a_week(db)
    script_week(script, fake)

    async def dead_runner(delivery: Delivery, plan_id: UUID) -> None:
        await set_plan_lease(db, plan_id, seconds=60)

    async with Kill(db, point.table, point.when, on=point.on):
        plan_id, at_kill = await run_with(db, cloud, functions, fake, user, dead_runner)
    assert at_kill is not None
    assert (await plan_row(db, plan_id))["status"] == "executing"
    await expire_plan_lease(db, plan_id)
    assert (await sweep(functions))["plans_redriven"] == [str(plan_id)]
    await cloud.drain(functions)
    await assert_completed_once(db, fake, events, user, plan_id, at_kill)
