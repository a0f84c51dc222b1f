"""Where every model call's tokens and cost go, and the checks made before spending more.

One call's usage is written, in the statement that stores the row the call produced
(`shared.db.transitions`), to: that row, the acting agent's `agent_executions` row
(`llm_calls` + 1), the plan, and the chat session — so the dashboards and the plan's own totals
always agree with the rows. The same statement returns the plan's `Control` state, and the
next call is checked against it (`check`): a cancel request or a reached cost cap stops the
agent before the request is sent, with no read of its own.
"""

from __future__ import annotations

from decimal import Decimal
from uuid import UUID

from shared.agents.errors import CostCapReached, PlanCancelled
from shared.db import Database, plans
from shared.db.records import Plan
from shared.db.transitions import Control, Transition
from shared.kernel.errors import NotFound
from shared.kernel.usage import Usage
from shared.llm import Completion


def check(control: Control, *, cost_cap: Decimal) -> None:
    """Raise `PlanCancelled` or `CostCapReached` when the plan must stop."""
    check_cancel(control)
    if control.cost_usd >= cost_cap:
        raise CostCapReached(spent=control.cost_usd, cap=cost_cap)


def check_cancel(control: Control) -> None:
    """Raise `PlanCancelled` when the plan was cancelled or asked to be."""
    if control.cancel_requested or control.status == "cancelled":
        raise PlanCancelled()


async def read_control(db: Database, plan_id: UUID) -> Control:
    """The plan's control state now (where no statement has just returned it)."""
    async with db.autocommit() as conn:
        plan = await plans.get_plan(conn, plan_id=plan_id)
    if plan is None:
        raise NotFound(f"Plan {plan_id} not found")
    return Control.of(plan)


def account_call(
    transition: Transition, *, execution_id: UUID, completion: Completion, agent_id: UUID
) -> None:
    """Add one model call's usage to the transition (execution, plan, session) and announce
    it: a `usage` event with the call's tokens and cost and the plan's totals after it."""
    transition.account(execution_id, completion.usage, llm_calls=1)
    transition.event(
        "usage",
        {"model": completion.model, "call": completion.usage.json()},
        agent_id=agent_id,
        totals_at="plan",
    )


def plan_usage(plan: Plan) -> Usage:
    """A plan's running totals as a `Usage`."""
    return Usage(plan.prompt_tokens, plan.completion_tokens, plan.cache_hit_tokens, plan.cost_usd)
