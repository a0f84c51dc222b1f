"""After scripted runs, the dashboard views show the real totals.

This module has its own database, so the views hold exactly these runs: their numbers are
checked against what the fake model server counted and against every table that carries usage.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from local.deepseek import FakeModelServer, reply, tool_call
from shared.db import Database
from shared.dispatch.in_process import run_turn
from shared.services import Services
from tests.shared.agents.test_limits import LOOKUP, ONE_STEP
from tests.support import databases
from tests.support.domain_rows import make_event, make_task
from tests.support.factories import make_user
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.plan_calls import plan_call, synthesis, week_script
from tests.support.scripting import Script


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


async def total(db: Database, query: str) -> Any:
    (row,) = await rows(db, query)
    return next(iter(row.values()))


async def test_the_dashboard_views_add_up_to_what_the_runs_did(
    db: Database, services: Services, fake: FakeModelServer
) -> None:
    user = await make_user(db)
    await make_task(db, user, title="Write report", status="backlog")
    await make_event(db, user, datetime.now(UTC) + timedelta(hours=1), title="Team sync")
    Script(fake).planner(reply("Hi!"))
    await run_turn(
        services, user_id=user, session_id=None, message="hi", publisher=InMemoryPublisher()
    )
    Script(fake).planner(reply(tool_call("list_tasks")), reply("One task."))
    await run_turn(
        services, user_id=user, session_id=None, message="tasks?", publisher=InMemoryPublisher()
    )
    week_script(Script(fake), fake)
    await run_turn(
        services,
        user_id=user,
        session_id=None,
        message="plan my week",
        publisher=InMemoryPublisher(),
    )
    Script(fake).planner(plan_call(ONE_STEP), synthesis).step(
        LOOKUP,
        reply(tool_call("create_task", title="Sneaky")),
        reply(tool_call("complete", result="Not allowed to write.")),
    )
    await run_turn(
        services,
        user_id=user,
        session_id=None,
        message="sneak a task in",
        publisher=InMemoryPublisher(),
    )

    stats = await rows(db, "SELECT * FROM execution_stats_daily ORDER BY agent_role, model")
    # 1 direct + 2 tool + 10 week (plan, 3+2 executor turns, an answer, 2 write, synthesis)
    # + 4 denial (plan, 2 executor turns, synthesis)
    assert sum(r["llm_calls"] for r in stats) == len(fake.requests) == 17
    by_role = {r["agent_role"]: r for r in stats}
    assert (by_role["executor"]["executions"], by_role["executor"]["completed"]) == (3, 3)
    assert by_role["executor"]["model"] == "test-executor"
    assert by_role["planner"]["executions"] == 4 + 1  # one per plan, plus the write step
    assert by_role["executor"]["permission_denials"] == 1
    assert sum(r["tool_calls"] for r in stats) == 1 + 3 + 1  # tool turn, week, the denied call
    cost = sum(r["cost_usd"] for r in stats)
    on_rows = await total(db, "SELECT sum(cost_usd) FROM agent_executions")  # each call once
    assert cost == on_rows == await total(db, "SELECT sum(cost_usd) FROM agent_plans")
    assert cost == await total(db, "SELECT sum(cost_usd) FROM chat_sessions") > Decimal(0)
    tokens = sum(r["prompt_tokens"] + r["completion_tokens"] for r in stats)
    assert tokens == await total(
        db, "SELECT sum(prompt_tokens + completion_tokens) FROM agent_plans"
    )
    assert all(r["p50_duration_ms"] is not None for r in stats)

    outcomes = await rows(db, "SELECT * FROM plan_outcomes_daily ORDER BY strategy")
    assert [(r["strategy"], r["plans"], r["completed"]) for r in outcomes] == [
        ("complex", 2, 2),
        ("direct", 1, 1),
        ("tool", 1, 1),
    ]
    complex_row = outcomes[0]
    assert complex_row["avg_steps"] == Decimal("2.00")  # 3 steps and 1 step
    assert sum(r["cost_usd"] for r in outcomes) == cost

    (denied,) = await rows(db, "SELECT * FROM permission_denials_daily")
    assert (denied["tool_name"], denied["agent_role"], denied["model"], denied["denials"]) == (
        "create_task",
        "executor",
        "test-executor",
        1,
    )
