"""Where every model call's tokens and cost go, and the checks made before spending more.

One call's usage is written, in the transaction that stores the row the call produced, to:
that row (by the caller), the acting agent's `agent_executions` row (`llm_calls` + 1), the plan,
and the chat session. So the dashboards and the plan's own totals always agree with the rows.
"""

from __future__ import annotations

from decimal import Decimal
from uuid import UUID

from pydantic import JsonValue

from shared.agents.errors import CostCapReached, PlanCancelled
from shared.db import Database, chats, executions, plans
from shared.db.database import Connection
from shared.db.records import Plan, Usage
from shared.errors import NotFound
from shared.events import EventEmitter


async def account_call(conn: Connection, *, plan: Plan, execution_id: UUID, usage: Usage) -> None:
    """Add one model call's usage to its execution, its plan and its session."""
    await executions.add_execution_usage(conn, execution_id=execution_id, usage=usage, llm_calls=1)
    await plans.add_plan_usage(conn, plan_id=plan.id, usage=usage)
    await chats.add_session_usage(conn, session_id=plan.session_id, usage=usage)


async def check_plan(db: Database, plan_id: UUID, *, cost_cap: Decimal) -> Plan:
    """The plan as it is now; raises `PlanCancelled` or `CostCapReached` when it must stop."""
    async with db.service() as conn:
        plan = await plans.get_plan(conn, plan_id=plan_id)
    if plan is None:
        raise NotFound(f"Plan {plan_id} not found")
    if plan.cancel_requested_at is not None or plan.status == "cancelled":
        raise PlanCancelled()
    if plan.cost_usd >= cost_cap:
        raise CostCapReached(spent=plan.cost_usd, cap=cost_cap)
    return plan


async def emit_usage(
    emitter: EventEmitter,
    *,
    plan_id: UUID,
    agent_id: UUID,
    model: str,
    usage: Usage,
    db: Database,
) -> None:
    """A `usage` event: this call's tokens and cost, and the plan's totals so far."""
    async with db.service() as conn:
        plan = await plans.get_plan(conn, plan_id=plan_id)
    totals: dict[str, JsonValue] = {} if plan is None else {"plan": usage_json(plan_usage(plan))}
    await emitter.emit(
        "usage",
        {"model": model, "call": usage_json(usage), **totals},
        plan_id=plan_id,
        agent_id=agent_id,
    )


def usage_json(usage: Usage) -> dict[str, JsonValue]:
    """Usage as event data (cost as a decimal string: exact, JSON-safe)."""
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "cache_hit_tokens": usage.cache_hit_tokens,
        "cost_usd": str(usage.cost_usd),
    }


def plan_usage(plan: Plan) -> Usage:
    """A plan's running totals as a `Usage`."""
    return Usage(plan.prompt_tokens, plan.completion_tokens, plan.cache_hit_tokens, plan.cost_usd)
