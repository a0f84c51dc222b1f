"""`GET /dashboards/daily`: the dashboard views for operators, 403 for everyone else."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from uuid import UUID

import httpx
import pytest

from functions.chat.app import create_app
from local.auth.keys import mint_token
from shared.db import Database, chats, executions, plans
from shared.kernel.usage import Usage
from shared.services import Services
from tests.functions.conftest import SECRET, serve
from tests.functions.test_chat_sessions import problem
from tests.support.factories import add_planner, make_session, make_user

OPERATOR: dict[str, object] = {"app_metadata": {"parley_role": "operator"}}


def bearer(user: UUID, claims: dict[str, object]) -> dict[str, str]:
    return {"Authorization": f"Bearer {mint_token(SECRET, sub=user, extra=claims)}"}


@pytest.fixture(scope="module")
def url(services: Services) -> Iterator[str]:
    with serve(create_app(), services) as server:
        yield server.url


async def one_execution_today(db: Database, cost: str) -> None:
    user = await make_user(db)
    session = await make_session(db, user)
    async with db.service() as conn:
        planner = await add_planner(conn, user, session.id, model="deepseek-v4-pro", name="p")
        message = await chats.add_message(
            conn, session_id=session.id, user_id=user, role="user", content="hi"
        )
        plan, _ = await plans.create_plan(
            conn,
            session_id=session.id,
            user_id=user,
            user_message_id=message.id,
            planner_agent_id=planner.id,
            strategy="direct",
        )
        run, _ = await executions.start_execution(
            conn,
            user_id=user,
            plan_id=plan.id,
            agent_id=planner.id,
            agent_role="planner",
            model="deepseek-v4-pro",
        )
        await executions.add_execution_usage(
            conn, execution_id=run.id, usage=Usage(100, 10, 40, Decimal(cost)), llm_calls=1
        )
        await executions.finish_execution(conn, execution_id=run.id, status="completed")


async def test_operators_see_every_users_executions_per_day_and_model(
    url: str, http: httpx.AsyncClient, db: Database
) -> None:
    await one_execution_today(db, "0.25")
    await one_execution_today(db, "0.50")
    operator = bearer(await make_user(db), OPERATOR)

    reply = await http.get(f"{url}/dashboards/daily", params={"days": 7}, headers=operator)

    assert reply.status_code == 200, reply.text
    body = reply.json()
    [planner] = [row for row in body["executions"] if row["model"] == "deepseek-v4-pro"]
    assert (planner["executions"], planner["completed"]) == (2, 2)
    assert (Decimal(planner["cost_usd"]), planner["cache_hit_tokens"]) == (Decimal("0.75"), 80)
    assert planner["p50_duration_ms"] is not None and planner["p95_duration_ms"] is not None
    assert body["days"] == 7 and sum(p["plans"] for p in body["plans"]) >= 2


async def test_dashboards_are_refused_to_users_and_to_claims_they_could_set(
    url: str, http: httpx.AsyncClient, db: Database
) -> None:
    user = await make_user(db)
    claimed: list[dict[str, object]] = [{}, {"user_metadata": {"parley_role": "operator"}}]
    for claims in claimed:
        reply = await http.get(f"{url}/dashboards/daily", headers=bearer(user, claims))
        refused = problem(reply, 403)
        assert "operator" in str(refused["detail"])
    operator = bearer(user, OPERATOR)
    problem(await http.get(f"{url}/dashboards/daily?days=0", headers=operator), 422)
    problem(await http.get(f"{url}/dashboards/daily"), 401)
