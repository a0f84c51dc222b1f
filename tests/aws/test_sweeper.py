"""The sweeper (EventBridge schedule → the planner function): dead letters and dead runners.

A message that fails on every delivery moves to its dead-letter queue after `MAX_RECEIVES`;
the next sweep fails what it was about, cleanly, and leaves it there for an operator. A plan
whose runner was killed — its lease left behind, its message consumed by a redelivery that
found the lease still live — is handed to the planner again once that lease has expired,
once, and completes; so is an executor step whose runner died (its message still in flight).
"""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID, uuid4

from local.deepseek import FakeModelServer, reply
from shared.db import Database
from shared.usecases.dead_letters import PLAN_DEAD, STEP_DEAD
from tests.aws.test_queues import a_user_with_a_week, done_events, send
from tests.support.cloud import MAX_RECEIVES, Cloud, Delivery, Function, lambda_event
from tests.support.holds import plan_row, scalar, set_plan_lease
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.kills import Kill
from tests.support.plan_calls import CALENDAR_STEP, WRITE_STEP, week_script
from tests.support.scripting import Script, requests_of
from tests.support.stored_rows import of_type, stored

Functions = dict[str, Function]


async def sweep(functions: Functions) -> dict[str, Any]:
    """One scheduled sweep, through the planner function's handler."""
    return await functions["agent_planner"].invoke(lambda_event("agent_planner_schedule.json"))


async def expire_plan_lease(db: Database, plan_id: UUID) -> None:
    """Time passes: whoever holds the plan's lease has not renewed it."""
    async with db.service() as conn:
        await conn.execute(
            "UPDATE agent_plans SET lease_expires_at = now() - interval '1 second' WHERE id = %s",
            (plan_id,),
        )


async def test_a_poison_plan_message_is_dead_lettered_and_its_plan_fails_cleanly(
    db: Database,
    cloud: Cloud,
    functions: Functions,
    script: Script,
    fake: FakeModelServer,
    events: InMemoryPublisher,
) -> None:
    user = await a_user_with_a_week(db)
    week_script(script, fake, prove_overlap=False)
    starts = "NEW.status = 'executing' AND OLD.status = 'pending'"
    async with Kill(db, "agent_plans", starts, on="UPDATE", times=None) as kill:
        plan_id = UUID((await send(functions, user))["plan_id"])
        deliveries = await cloud.drain(functions)
        assert [(d.receive_count, d.failed) for d in deliveries] == [
            (n, True) for n in range(1, MAX_RECEIVES + 1)
        ]
        assert await kill.fired() == MAX_RECEIVES
    assert (cloud.depth("planner"), cloud.depth("planner_dlq")) == (0, 1)
    assert (await plan_row(db, plan_id))["status"] == "pending"

    report = await sweep(functions)

    assert report["dead_plans"] == [str(plan_id)]
    after = await stored(db, plan_id)
    assert (after.plan.status, after.plan.error) == ("failed", PLAN_DEAD)
    errors = [e for e in of_type(events, "error") if e.plan_id == plan_id]
    assert [e.data["message"] for e in errors] == [PLAN_DEAD]
    (done,) = done_events(events, plan_id)
    assert (done.data["status"], done.data["error"]) == ("failed", PLAN_DEAD)
    assert fake.requests == []
    assert cloud.depth("planner_dlq") == 1  # kept for an operator (the depth alarm fires)

    await sweep(functions)  # the dead letter is seen again later: nothing more happens
    assert len(done_events(events, plan_id)) == 1


async def test_dead_letters_about_no_plan_or_step_are_not_reported_as_failed(
    cloud: Cloud, functions: Functions
) -> None:
    """Dead letters outlive their rows (a user deleted with their plans): they are kept for an
    operator, but nothing is failed, reported or resumed for them."""
    cloud.send("planner_dlq", {"type": "run_plan", "plan_id": str(uuid4())})
    cloud.send(
        "executor_dlq",
        {"type": "run_step", "plan_id": str(uuid4()), "step_id": str(uuid4()), "attempt": 1},
    )
    report = await sweep(functions)
    assert (report["dead_plans"], report["dead_steps"]) == ([], [])
    assert cloud.depth("planner") == 0  # no "resume plan" for a plan that does not exist
    assert (cloud.depth("planner_dlq"), cloud.depth("executor_dlq")) == (1, 1)


async def test_a_poison_step_message_fails_its_step_and_the_plan_goes_on_without_it(
    db: Database,
    cloud: Cloud,
    functions: Functions,
    script: Script,
    fake: FakeModelServer,
    events: InMemoryPublisher,
) -> None:
    user = await a_user_with_a_week(db)
    week_script(script, fake, prove_overlap=False)
    opens = "NEW.status = 'running' AND NEW.step_number = 2"
    async with Kill(db, "agent_plan_steps", opens, on="UPDATE", times=None):
        plan_id = UUID((await send(functions, user))["plan_id"])
        deliveries = await cloud.drain(functions)
    failed = [d for d in deliveries if d.failed]
    assert [d.body["type"] for d in failed] == ["run_step"] * MAX_RECEIVES
    assert cloud.depth("executor_dlq") == 1
    waiting = await stored(db, plan_id)
    assert [s.status for s in waiting.steps] == ["completed", "pending", "pending"]

    report = await sweep(functions)
    assert report["dead_steps"] == [str(waiting.steps[1].id)]
    await cloud.drain(functions)

    after = await stored(db, plan_id)
    assert after.plan.status == "completed"
    assert [(s.status, s.error) for s in after.steps] == [
        ("completed", None),
        ("failed", STEP_DEAD),
        ("skipped", "not run: step 2 did not complete"),
    ]
    assert requests_of(fake, "executor", CALENDAR_STEP) == []
    assert len(done_events(events, plan_id)) == 1
    assert (
        await scalar(
            db,
            "SELECT count(*) FROM tasks WHERE user_id = %s AND title = %s",
            user,
            "Weekly review",
        )
        == 0
    )


async def test_the_sweeper_completes_a_plan_whose_runner_was_killed_exactly_once(
    db: Database,
    cloud: Cloud,
    functions: Functions,
    script: Script,
    fake: FakeModelServer,
    events: InMemoryPublisher,
) -> None:
    user = await a_user_with_a_week(db)
    week_script(script, fake, prove_overlap=False)
    plan_id = UUID((await send(functions, user))["plan_id"])

    async def killed(delivery: Delivery) -> None:
        if delivery.failed:  # a real kill leaves the runner's lease behind, still live
            await set_plan_lease(db, plan_id, seconds=60)

    after_write = "NEW.message_type = 'tool_result' AND NEW.tool_name = 'create_task'"
    async with Kill(db, "agent_chat_messages", after_write, on="UPDATE") as kill:
        deliveries = await cloud.drain(functions, after=killed)
        assert await kill.fired() == 1
    # Its redelivery found the dead runner's lease live and left: nothing is queued any more.
    assert [d.body["type"] for d in deliveries if d.failed] == ["resume_plan"]
    assert [cloud.depth(q) for q in ("planner", "executor")] == [0, 0]
    stuck = await stored(db, plan_id)
    assert (stuck.plan.status, [s.status for s in stuck.steps]) == (
        "executing",
        ["completed", "completed", "running"],
    )
    writes = len(requests_of(fake, "planner_step", WRITE_STEP))

    assert (await sweep(functions))["plans_redriven"] == []  # its lease is still live
    await expire_plan_lease(db, plan_id)
    assert (await sweep(functions))["plans_redriven"] == [str(plan_id)]
    assert (await sweep(functions))["plans_redriven"] == []  # once per expired lease
    assert cloud.bodies("planner") == [{"type": "run_plan", "plan_id": str(plan_id)}]
    await cloud.drain(functions)

    after = await stored(db, plan_id)
    assert after.plan.status == "completed"
    assert (
        await scalar(
            db,
            "SELECT count(*) FROM tasks WHERE user_id = %s AND title = %s",
            user,
            "Weekly review",
        )
        == 1
    )
    assert len(requests_of(fake, "planner_step", WRITE_STEP)) == writes + 1  # only `complete`
    assert [len([e for e in after.executions if e.step_id == s.id]) for s in after.steps] == [
        1,
        1,
        1,
    ]
    assert len(done_events(events, plan_id)) == 1


async def test_the_sweeper_requeues_an_executor_step_whose_runner_died_once_per_lease(
    db: Database,
    cloud: Cloud,
    functions: Functions,
    script: Script,
    fake: FakeModelServer,
    events: InMemoryPublisher,
) -> None:
    """An executor invocation killed mid-step: its message is in flight (hidden for the queue's
    visibility timeout, 900 s) and its step lease is left live. Once the lease has expired the
    sweeper queues the step again — once — and the plan completes with one execution per step."""
    user = await a_user_with_a_week(db)
    week_script(script, fake, prove_overlap=False)
    script.answers(reply("No: only open tasks."), reply("No: only open tasks."))
    plan_id = UUID((await send(functions, user))["plan_id"])
    await cloud.deliver("planner", functions["agent_planner"])
    step_one = (await stored(db, plan_id)).steps[0]

    async def killed(delivery: Delivery) -> None:
        if delivery.failed:  # the runner died: its message stays hidden, its lease live
            hide(cloud, delivery)
            await set_step_lease(db, step_one.id, seconds=60)

    tool_call_stored = "NEW.message_type = 'tool_call' AND NEW.tool_name = 'list_tasks'"
    async with Kill(db, "agent_chat_messages", tool_call_stored) as kill:
        await cloud.drain(functions, after=killed)
        assert await kill.fired() == 1
    stuck = await stored(db, plan_id)
    assert [s.status for s in stuck.steps] == ["running", "completed", "pending"]
    assert [cloud.depth(q) for q in ("planner", "executor")] == [0, 0]

    assert (await sweep(functions))["steps_redriven"] == []  # its lease is still live
    await set_step_lease(db, step_one.id, seconds=-1)
    report = await sweep(functions)
    assert (report["steps_redriven"], report["plans_redriven"]) == ([str(step_one.id)], [])
    assert (await sweep(functions))["steps_redriven"] == []  # once per expired lease
    assert cloud.bodies("executor") == [
        {"type": "run_step", "plan_id": str(plan_id), "step_id": str(step_one.id), "attempt": 1}
    ]
    await cloud.drain(functions)

    after = await stored(db, plan_id)
    assert after.plan.status == "completed"
    assert [s.status for s in after.steps] == ["completed", "completed", "completed"]
    assert [len([e for e in after.executions if e.step_id == s.id]) for s in after.steps] == [
        1,
        1,
        1,
    ]
    assert (
        await scalar(
            db,
            "SELECT count(*) FROM tasks WHERE user_id = %s AND title = %s",
            user,
            "Weekly review",
        )
        == 1
    )
    assert len(done_events(events, plan_id)) == 1


def hide(cloud: Cloud, delivery: Delivery) -> None:
    """Take `delivery`'s message off its queue (a dead runner's message stays in flight); any
    other message received on the way is released at once."""
    url = cloud.urls[delivery.queue]
    found = cloud.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    for message in found:
        if json.loads(message["Body"]) == delivery.body:
            cloud.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        else:
            cloud.sqs.change_message_visibility(
                QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
            )
    assert delivery.body in [json.loads(m["Body"]) for m in found]


async def set_step_lease(db: Database, step_id: UUID, *, seconds: float) -> None:
    """A stranger (an invocation that died) holds the step's lease for `seconds` more."""
    async with db.service() as conn:
        await conn.execute(
            "UPDATE agent_plan_steps SET lease_owner = 'elsewhere-dead', "
            "lease_expires_at = now() + make_interval(secs => %s) WHERE id = %s",
            (seconds, step_id),
        )
