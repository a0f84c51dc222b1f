"""Dashboard views return exact aggregates over a small fixture with known numbers."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, cast
from uuid import UUID

import pytest

from shared.db import Database, agents, chats, dialogue, executions, plans
from shared.db.records import AgentRole, DialogueEntry, ExecutionStatus, PlanStrategy
from shared.kernel.usage import Usage
from tests.support import ROOT
from tests.support.factories import add_planner, make_session, make_user

DAY = "2026-03-14"
# (model, role, status, duration ms, prompt, completion, cache hit, cost, tools, denials)
RUNS = [
    ("deepseek-chat", "executor", "completed", 1000, 100, 10, 50, "0.0010", 2, 0),
    ("deepseek-chat", "executor", "completed", 2000, 200, 20, 0, "0.0020", 1, 1),
    ("deepseek-chat", "executor", "failed", 3000, 300, 30, 0, "0.0030", 0, 0),
    ("deepseek-chat", "executor", "timeout", 4000, 400, 40, 100, "0.0040", 3, 2),
    ("deepseek-reasoner", "planner", "completed", 500, 1000, 100, 0, "0.0100", 0, 0),
]


async def _fixture(db: Database) -> UUID:
    user = await make_user(db)
    session = await make_session(db, user)
    async with db.service() as conn:
        planner = await add_planner(conn, user, session.id, model="deepseek-reasoner", name="p")
        outcomes = [
            (0, "complex", "completed"),
            (1, "complex", "failed"),
            (2, "direct", "completed"),
            (3, None, "executing"),
        ]
        for i, strategy, status in outcomes:
            message = await chats.add_message(
                conn, session_id=session.id, user_id=user, role="user", content=f"m{i}"
            )
            plan, _ = await plans.create_plan(
                conn,
                session_id=session.id,
                user_id=user,
                user_message_id=message.id,
                planner_agent_id=planner.id,
                strategy=cast(PlanStrategy | None, strategy),
            )
            steps = [plans.NewStep(n, f"s{n}", executor_required=True) for n in range(1, i + 2)]
            await plans.add_steps(conn, plan_id=plan.id, user_id=user, steps=steps)
            await plans.add_plan_usage(conn, plan_id=plan.id, usage=Usage(10, 1, 5, Decimal("0.5")))
            await conn.execute(
                "UPDATE agent_plans SET status = %s, created_at = %s::timestamptz, "
                "started_at = %s::timestamptz, "
                "completed_at = %s::timestamptz + interval '1 second' WHERE id = %s",
                (
                    status,
                    f"{DAY}T10:00:00Z",
                    f"{DAY}T10:00:00Z",
                    f"{DAY}T10:00:0{i}Z" if status != "executing" else None,
                    plan.id,
                ),
            )
            if i == 0:
                first_plan = plan
        for n, (model, role, status, ms, p, c, h, cost, tools, denials) in enumerate(RUNS):
            agent = planner
            if role == "executor":
                agent = await agents.create_agent(
                    conn,
                    user_id=user,
                    chat_session_id=session.id,
                    role="executor",
                    name=f"e{n}",
                    model=model,
                    permissions="read_only",
                    token_budget=1500,
                )
            run, _ = await executions.start_execution(  # a run per attempt: none has a step
                conn,
                user_id=user,
                plan_id=first_plan.id,
                agent_id=agent.id,
                agent_role=cast(AgentRole, role),
                model=model,
                attempt=n + 1,
            )
            await executions.add_execution_usage(
                conn,
                execution_id=run.id,
                usage=Usage(p, c, h, Decimal(cost)),
                llm_calls=1,
                tool_calls=tools,
                permission_denials=denials,
            )
            await executions.finish_execution(
                conn, execution_id=run.id, status=cast(ExecutionStatus, status)
            )
            await conn.execute(
                "UPDATE agent_executions SET started_at = %s::timestamptz, "
                "finished_at = %s::timestamptz + %s * interval '1 millisecond' WHERE id = %s",
                (f"{DAY}T12:00:00Z", f"{DAY}T12:00:00Z", ms, run.id),
            )
            for k in range(denials):  # recorded on the plan: a thread would be a run too
                denial = DialogueEntry(
                    "permission_denied",
                    "denied",
                    agent.id,
                    None,
                    "create_task",
                    f"call-{n}-{k}",
                    {},
                )
                said = await dialogue.add_agent_message(conn, denial, plan_id=first_plan.id)
                await conn.execute(
                    "UPDATE agent_chat_messages SET created_at = %s::timestamptz WHERE id = %s",
                    (f"{DAY}T12:00:00Z", said.id),
                )
    return user


@pytest.fixture(scope="module")
async def rows(db: Database) -> dict[str, list[dict[str, Any]]]:
    await _fixture(db)
    out = {}
    async with db.service() as conn:
        for view in ("execution_stats_daily", "plan_outcomes_daily", "permission_denials_daily"):
            cur = await conn.execute(f"SELECT * FROM {view} ORDER BY 1, 2, 3")
            out[view] = await cur.fetchall()
    return out


async def test_execution_stats(rows) -> None:
    chat, reasoner = rows["execution_stats_daily"]
    assert (str(chat["day"]), chat["model"], chat["agent_role"]) == (
        DAY,
        "deepseek-chat",
        "executor",
    )
    assert (chat["executions"], chat["completed"], chat["failed"], chat["timed_out"]) == (
        4,
        2,
        1,
        1,
    )
    assert chat["success_rate"] == Decimal("0.5000")
    # Read from the rollups' histogram (each duration stands as its bucket's midpoint: 1007.5,
    # 2015.5, 3007.5, 4031.5 ms): within 1/32 of the exact 2500 and 3850.
    assert (chat["p50_duration_ms"], chat["p95_duration_ms"]) == (
        Decimal("2511.5"),
        Decimal("3877.9"),
    )
    assert (chat["prompt_tokens"], chat["completion_tokens"], chat["cache_hit_tokens"]) == (
        1000,
        100,
        150,
    )
    assert chat["cost_usd"] == Decimal("0.010000")
    assert (chat["llm_calls"], chat["tool_calls"], chat["permission_denials"]) == (4, 6, 3)
    assert (reasoner["model"], reasoner["executions"], reasoner["success_rate"]) == (
        "deepseek-reasoner",
        1,
        Decimal("1.0000"),
    )


async def test_plan_outcomes(rows) -> None:
    by_strategy = {row["strategy"]: row for row in rows["plan_outcomes_daily"]}
    complex_, direct, undecided = (
        by_strategy["complex"],
        by_strategy["direct"],
        by_strategy["undecided"],
    )
    assert (complex_["plans"], complex_["completed"], complex_["failed"]) == (2, 1, 1)
    assert complex_["success_rate"] == Decimal("0.5000")
    assert complex_["avg_steps"] == Decimal("1.50")
    assert complex_["p50_duration_ms"] == Decimal("1499.1")  # 1 s and 2 s, within 1/32
    assert complex_["cost_usd"] == Decimal("1.000000")
    assert (direct["plans"], direct["success_rate"], direct["avg_steps"]) == (1, 1, Decimal("3.00"))
    assert (undecided["in_progress"], undecided["success_rate"]) == (1, None)


async def test_permission_denials(rows) -> None:
    (row,) = rows["permission_denials_daily"]
    assert (str(row["day"]), row["tool_name"], row["agent_role"], row["model"]) == (
        DAY,
        "create_task",
        "executor",
        "deepseek-chat",
    )
    assert (row["denials"], row["agents"]) == (3, 2)


READY_QUERIES = ROOT / "docs" / "dashboards.sql"


async def test_every_ready_query_of_docs_dashboards_sql_runs(db: Database) -> None:
    """docs/dashboards.sql matches the schema: each of its queries runs as an operator would."""
    text = READY_QUERIES.read_text()
    code = "\n".join(line for line in text.splitlines() if not line.startswith("--"))
    queries = [query.strip() for query in code.split(";") if query.strip()]
    assert len(queries) >= 9
    async with db.service() as conn:
        for query in queries:
            await conn.execute(query)
