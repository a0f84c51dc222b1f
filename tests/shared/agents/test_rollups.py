"""The daily rollups hold what the detail rows hold, after every kind of turn and ending.

This module has its own database. It runs turns of every kind (direct, tool, complex), an
executor denied a write, a plan retried after the planner's invalid one, a model that fails, a
cancellation, an executor timed out, a planner that never writes a valid plan — then reads
the dashboard views (which read the rollups) and the same aggregates over the detail rows (the
views as they were before the rollups): counts, outcomes, tokens, cost, success rates and
average steps are equal, p50/p95 durations within 1/32 (a histogram bucket's half-width).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from decimal import Decimal
from typing import Any

import pytest

from bench.scale import detail_queries
from local.deepseek import FakeModelServer, RecordedRequest, Reply, error, reply, tool_call
from shared.agents import request_cancel, start_turn
from shared.db import Database
from shared.dispatch.in_process import InProcessInvoker, run_turn
from shared.services import Services
from tests.shared.agents.test_limits import LOOKUP, ONE_STEP
from tests.support import databases
from tests.support.agent_services import MakeServices
from tests.support.domain_rows import make_task
from tests.support.factories import make_user
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.plan_calls import complete_with_results, plan_call, synthesis, week_script
from tests.support.scripting import Script

PERCENTILES = {"p50_duration_ms", "p95_duration_ms"}


@pytest.fixture(scope="module")
def database_url(server_url: str, template_name: str) -> Iterator[str]:
    """A database of this module's own: the views must hold exactly these runs."""
    url = databases.create_database(server_url, template=template_name)
    yield url
    databases.drop_checked(server_url, url)


@pytest.fixture(scope="module")
async def db(database_url: str) -> AsyncIterator[Database]:
    async with Database(database_url, max_size=4) as database:
        yield database


async def rows(db: Database, query: str) -> list[dict[str, Any]]:
    async with db.service() as conn:
        cur = await conn.execute(query)
        return list(await cur.fetchall())


ORDER = {"execution_stats_daily": "day, model, agent_role", "plan_outcomes_daily": "day, strategy"}


async def assert_rollups_match_detail(db: Database) -> list[dict[str, Any]]:
    """Each view's rows equal the detail rows' aggregates (percentiles within 1/32)."""
    seen = []
    for view, detail in detail_queries().items():
        rolled = await rows(db, f"SELECT * FROM {view} ORDER BY {ORDER[view]}")
        exact = await rows(db, f"SELECT * FROM ({detail}) d ORDER BY {ORDER[view]}")
        assert [list(r) for r in rolled] == [list(r) for r in exact]  # the same columns
        assert len(rolled) == len(exact) > 0
        for got, want in zip(rolled, exact, strict=True):
            assert {k: v for k, v in got.items() if k not in PERCENTILES} == {
                k: v for k, v in want.items() if k not in PERCENTILES
            }, view
            for name in PERCENTILES & set(want):
                if want[name] is None:
                    assert got[name] is None
                    continue
                assert abs(got[name] - want[name]) <= want[name] / 32 + Decimal("0.05"), (
                    view,
                    name,
                    got[name],
                    want[name],
                )
        seen += rolled
    return seen


async def every_kind_and_ending(
    db: Database, services: Services, make_services: MakeServices, fake: FakeModelServer
) -> None:
    user = await make_user(db)
    await make_task(db, user, title="Renew passport", status="backlog")

    async def turn(message: str, on: Services = services) -> None:
        await run_turn(
            on, user_id=user, session_id=None, message=message, publisher=InMemoryPublisher()
        )

    Script(fake).planner(reply("Hi!"))
    await turn("hi")  # direct
    Script(fake).planner(reply(tool_call("create_task", title="Water plants")), reply("Done."))
    await turn("add a task")  # tool
    week_script(Script(fake), fake)
    await turn("plan my week")  # complex, three steps, a question answered, writes
    Script(fake).planner(plan_call(ONE_STEP), synthesis).step(
        LOOKUP,
        reply(tool_call("create_task", title="Sneaky")),
        reply(tool_call("complete", result="Not allowed to write.")),
    )
    await turn("sneak a task in")  # an executor denied a write
    bad = {**ONE_STEP, "steps": [{**ONE_STEP["steps"][0], "tools": ["create_task"]}]}
    Script(fake).planner(plan_call(bad), plan_call(ONE_STEP), synthesis).step(
        LOOKUP, complete_with_results("Tasks")
    )
    await turn("tasks, retried")  # the planner's invalid plan sent back, the retry runs
    Script(fake).planner(plan_call(ONE_STEP), error(500, "upstream overloaded")).step(
        LOOKUP, error(500, "upstream overloaded")
    )
    await turn("tasks, failing")  # the executor and the plan fail
    Script(fake).planner(plan_call(ONE_STEP), synthesis).step(
        LOOKUP,
        reply(tool_call("list_tasks")),
        reply(tool_call("list_tasks", sort_by="priority")),
        complete_with_results("never reached"),
    )
    await turn("tasks, too long", make_services(executor_max_turns=2))  # the executor times out
    cyclic = {
        "goal": "loop",
        "steps": [{"step_number": 1, "description": "a", "assignee": "planner", "depends_on": [1]}],
    }
    Script(fake).planner(plan_call(cyclic), plan_call(cyclic))
    await turn("loop", make_services(planner_plan_attempts=2))  # never a valid plan: failed
    await cancelled_mid_plan(services, fake, user)


async def cancelled_mid_plan(services: Services, fake: FakeModelServer, user: Any) -> None:
    in_flight = threading.Event()

    def hold_executor(request: RecordedRequest) -> Reply:
        in_flight.set()
        return reply(tool_call("list_tasks")).stalled(after=0)

    Script(fake).planner(plan_call(ONE_STEP), synthesis).step(
        LOOKUP, hold_executor, reply(tool_call("complete", result="never asked"))
    )
    started = await start_turn(services, user_id=user, session_id=None, message="cancel me")

    async def cancel() -> None:
        await asyncio.wait_for(asyncio.to_thread(in_flight.wait, 10), 15)
        await request_cancel(services, plan_id=started.plan_id, user_id=user)
        fake.release()

    await asyncio.gather(
        InProcessInvoker(services, InMemoryPublisher()).run_plan(plan_id=started.plan_id),
        cancel(),
    )


async def test_the_rollups_equal_the_detail_rows_after_every_kind_and_ending(
    db: Database, services: Services, make_services: MakeServices, fake: FakeModelServer
) -> None:
    await every_kind_and_ending(db, services, make_services, fake)
    # Rows changed in ways the turns do not take: a complex plan backdated two days (its steps
    # go with it), an execution whose start moved a day back and which failed after all.
    async with db.service() as conn:
        await conn.execute(
            "UPDATE agent_plans SET created_at = created_at - interval '2 days' WHERE id = "
            "(SELECT id FROM agent_plans WHERE strategy = 'complex' ORDER BY created_at LIMIT 1)"
        )
        await conn.execute(
            "UPDATE agent_executions SET started_at = started_at - interval '1 day', "
            "status = 'failed' WHERE id = (SELECT id FROM agent_executions "
            "WHERE agent_role = 'executor' ORDER BY created_at LIMIT 1)"
        )

    seen = await assert_rollups_match_detail(db)

    executions = [r for r in seen if "agent_role" in r]
    plans = [r for r in seen if "strategy" in r]
    assert sum(r["cancelled"] for r in executions) >= 1
    assert sum(r["timed_out"] for r in executions) >= 1
    assert sum(r["failed"] for r in executions) >= 2
    assert sum(r["permission_denials"] for r in executions) >= 1
    assert {r["strategy"] for r in plans} >= {"direct", "tool", "complex"}
    assert sum(r["cancelled"] for r in plans) == 1 and sum(r["failed"] for r in plans) >= 2
    assert len({r["day"] for r in executions}) >= 2 and len({r["day"] for r in plans}) >= 2

    # The sweeper folds each backend's rows into one: no figure changes.
    async with db.service() as conn:
        cur = await conn.execute("SELECT parley_private.fold_rollups() AS folded")
        folded = await cur.fetchone()
        cur = await conn.execute(
            "SELECT (SELECT count(*) FROM parley_private.execution_rollup WHERE shard <> 0) "
            "+ (SELECT count(*) FROM parley_private.plan_rollup WHERE shard <> 0) AS left"
        )
        left = await cur.fetchone()
    assert folded is not None and folded["folded"] > 0 and left == {"left": 0}
    assert await assert_rollups_match_detail(db) == seen

    # Deleting detail rows (retention, a user deleting their sessions) keeps the history.
    async with db.service() as conn:
        await conn.execute("DELETE FROM chat_sessions")
        cur = await conn.execute("SELECT count(*) AS n FROM agent_executions")
        assert await cur.fetchone() == {"n": 0}
    after = [
        row
        for view in ORDER
        for row in await rows(db, f"SELECT * FROM {view} ORDER BY {ORDER[view]}")
    ]
    assert after == seen


async def test_a_bucket_stands_for_its_durations_within_a_32nd(db: Database) -> None:
    cur_rows = await rows(
        db,
        """SELECT count(*) FILTER (WHERE abs(parley_private.duration_bucket_value(
                      parley_private.duration_bucket(v)) - v) > v / 32.0) AS outside,
                  count(*) FILTER (WHERE parley_private.duration_bucket_value(
                      parley_private.duration_bucket(v)) <> v AND v < 32) AS inexact_small,
                  count(DISTINCT parley_private.duration_bucket(v)) AS buckets
             FROM (SELECT generate_series(0, 200000) AS v
                   UNION ALL SELECT (random() * 1e12)::bigint FROM generate_series(1, 20000)) d""",
    )
    ((outside, inexact_small, buckets),) = [tuple(r.values()) for r in cur_rows]
    assert (outside, inexact_small) == (0, 0)
    assert buckets < 32 + 16 * 13 + 20000  # 16 buckets an octave above 32
