"""Kill anywhere, as a `kill -9` of the Lambda would leave it: the killed invocation's cleanup
(`finally`, the consumer reporting the failure) is undone — the lease it held is live again and
its message stays in flight, hidden for the queue's visibility timeout, not redelivered at once.
The sweeper (leases expiring a minute at a time) and, 15 minutes on, the message coming back
must complete the plan at every kill point of `test_kill_anywhere`, with no step re-run and no
write made twice. (`test_kill_anywhere` lets the consumer report the failure; only two of its
points leave a lease behind.)
"""

from __future__ import annotations

import json
from uuid import UUID

import pytest

from local.deepseek import FakeModelServer
from shared.db import Database
from tests.aws.test_kill_anywhere import (
    POINTS,
    KillPoint,
    assert_completed_once,
    run_with,
    script_week,
)
from tests.aws.test_queues import a_user_with_a_week
from tests.aws.test_sweeper import set_step_lease, sweep
from tests.support.cloud import Cloud, Delivery, Function
from tests.support.holds import scalar, set_plan_lease
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.kills import Kill
from tests.support.scripting import Script

Functions = dict[str, Function]


async def expire_all_leases(db: Database, plan_id: UUID) -> None:
    async with db.service() as conn:
        await conn.execute(
            "UPDATE agent_plans SET lease_expires_at = now() - interval '1 second' "
            "WHERE id = %s AND lease_owner IS NOT NULL",
            (plan_id,),
        )
        await conn.execute(
            "UPDATE agent_plan_steps SET lease_expires_at = now() - interval '1 second' "
            "WHERE plan_id = %s AND lease_owner IS NOT NULL",
            (plan_id,),
        )


def keep_hidden(cloud: Cloud, delivery: Delivery) -> tuple[str, str]:
    """Hide `delivery`'s message for 900 s (others received on the way are released); its
    queue URL and receipt handle, to bring it back."""
    url = cloud.urls[delivery.queue]
    kept: tuple[str, str] | None = None
    for message in cloud.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]:
        mine = kept is None and json.loads(message["Body"]) == delivery.body
        cloud.sqs.change_message_visibility(
            QueueUrl=url,
            ReceiptHandle=message["ReceiptHandle"],
            VisibilityTimeout=900 if mine else 0,
        )
        if mine:
            kept = (url, message["ReceiptHandle"])
    assert kept is not None
    return kept


@pytest.mark.parametrize("point", POINTS, ids=[p.name for p in POINTS])
async def test_killed_without_cleanup_and_finished_by_the_sweeper(
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

    in_flight: list[tuple[str, str]] = []

    async def dead_runner(delivery: Delivery, plan_id: UUID) -> None:
        in_flight.append(keep_hidden(cloud, delivery))  # back after the visibility timeout
        if delivery.queue == "executor":
            step_id = UUID(delivery.body["step_id"])
            if (
                await scalar(db, "SELECT status FROM agent_plan_steps WHERE id = %s", step_id)
                == "running"
            ):
                await set_step_lease(db, step_id, seconds=60)  # the lease it had taken
        else:
            await set_plan_lease(db, plan_id, seconds=60)

    async with Kill(db, point.table, point.when, on=point.on) as kill:
        plan_id, at_kill = await run_with(db, cloud, functions, fake, user, dead_runner)
        assert await kill.fired() == 1
    assert at_kill is not None
    for minute in range(20):  # a minute at a time: leases expire, the sweeper hands work on
        await expire_all_leases(db, plan_id)
        await sweep(functions)
        if minute == 15:  # the killed invocation's message comes back (visibility timeout)
            for url, handle in in_flight:
                cloud.sqs.change_message_visibility(
                    QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=0
                )
        await cloud.drain(functions)
    await assert_completed_once(db, fake, events, user, plan_id, at_kill)
