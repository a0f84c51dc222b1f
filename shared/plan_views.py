"""A plan as its user sees it: steps, threads, executions (read under the user's RLS)."""

from __future__ import annotations

from uuid import UUID

from shared.auth import User
from shared.db import Database, approvals, dialogue, plans
from shared.db._rows import fetch_all
from shared.db.records import Execution, columns
from shared.errors import NotFound
from shared.models.turns import ApprovalOut, ExecutionOut, PlanDetail, StepOut, ThreadOut


async def plan_detail(db: Database, user: User, plan_id: UUID) -> PlanDetail:
    """The user's plan with everything that happened in it; `NotFound` for anyone else."""
    async with db.as_user(user.id, read_only=True, claims=user.claims) as conn:
        plan = await plans.get_plan(conn, plan_id=plan_id)
        if plan is None:
            raise NotFound(f"Plan {plan_id} not found")
        steps = await plans.list_steps(conn, plan_id=plan_id)
        threads = await dialogue.list_threads(conn, plan_id=plan_id)
        waiting = await approvals.list_approvals(conn, plan_id=plan_id)
        runs = await fetch_all(
            conn,
            Execution,
            f"""SELECT {columns(Execution)} FROM agent_executions
                WHERE plan_id = %s ORDER BY created_at, id""",
            (plan_id,),
        )
    return PlanDetail.model_validate(
        {
            **{
                name: getattr(plan, name) for name in PlanDetail.model_fields if hasattr(plan, name)
            },
            "steps": [StepOut.model_validate(s) for s in steps],
            "threads": [ThreadOut.model_validate(t) for t in threads],
            "executions": [ExecutionOut.model_validate(e) for e in runs],
            "approvals": [ApprovalOut.model_validate(a) for a in waiting],
        }
    )
