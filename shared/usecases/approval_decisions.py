"""Use cases: a user's approvals — list a plan's, decide one.

A destructive tool call or an executor's escalation waits for the user as a `pending`
`agent_approvals` row (`shared.agents.approval_gate.DatabaseApprovals`). The user decides once:

* a tool call: `approve` (the tool runs, once) or `reject` (it does not run; the model is told,
  with the user's `text` as the reason if given);
* an escalation: `answer` with `text` (the agent gets it as its `escalate` call's result and
  goes on) or `reject` (the step fails; `text` says why).

After a decision the caller re-invokes `run_plan` for the plan (a new invocation): it resumes
where the plan waited. If the plan was still running other steps, that `run_plan` finds it busy
(`running_elsewhere`), and the running invocation uses the decision before it would wait.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, get_args
from uuid import UUID

from shared.agents.planner.finishing import TERMINAL
from shared.auth.access_tokens import User
from shared.db import approvals, plans
from shared.db.records import Approval, ApprovalKind, ApprovalStatus
from shared.kernel.errors import Conflict, InvalidInput, NotFound

if TYPE_CHECKING:
    from shared.services import Services

Decision = Literal["approve", "reject", "answer"]


class ApprovalDecided(Conflict):
    """The approval was decided already (HTTP 409): a decision is made once."""

    title = "Approval already decided"
    kind = "approval-decided"


class NothingWaits(Conflict):
    """The plan ended, or is being cancelled (HTTP 409): no decision can resume it."""

    title = "Plan ended"
    kind = "plan-ended"


MAX_TEXT = 4000

_OUTCOMES: dict[tuple[ApprovalKind, str], ApprovalStatus] = {
    ("tool_call", "approve"): "approved",
    ("tool_call", "reject"): "rejected",
    ("escalation", "answer"): "answered",
    ("escalation", "reject"): "rejected",
}


async def list_approvals(services: Services, user: User, plan_id: UUID) -> list[Approval]:
    """The plan's approvals, oldest first, whatever their status; `NotFound` unless the plan
    is the user's (read under the user's RLS)."""
    async with services.db.as_user(user.id, read_only=True, claims=user.claims) as conn:
        plan = await plans.get_user_plan(conn, plan_id=plan_id)
        if plan is None:
            raise NotFound(f"Plan {plan_id} not found")
        return await approvals.list_approvals(conn, plan_id=plan_id)


async def decide_approval(
    services: Services,
    user: User,
    *,
    plan_id: UUID,
    approval_id: UUID,
    decision: Decision,
    text: str | None = None,
) -> Approval:
    """Record the user's decision on a pending approval of their plan; the updated row.

    `NotFound`: not the user's plan (or its session was deleted), or no such approval in it.
    `Conflict`: the approval was already decided, or its plan has ended or is being cancelled.
    `InvalidInput`: a decision that does not fit the approval's kind, an `answer` without text,
    text over 4000 characters.
    """
    if decision not in get_args(Decision):
        raise InvalidInput("decision must be one of: approve, reject, answer")
    note = (text or "").strip() or None
    if note is not None and len(note) > MAX_TEXT:
        raise InvalidInput(f"text is longer than {MAX_TEXT} characters")
    async with services.db.service() as conn:
        # The plan's row lock orders this decision against a run about to wait for it.
        plan = await plans.get_user_plan(conn, plan_id=plan_id, user_id=user.id, lock=True)
        if plan is None:
            raise NotFound(f"Plan {plan_id} not found")
        approval = await approvals.get_approval(
            conn, approval_id=approval_id, plan_id=plan_id, lock=True
        )
        if approval is None:
            raise NotFound(f"Approval {approval_id} not found in plan {plan_id}")
        if approval.status != "pending":
            raise ApprovalDecided(f"Approval {approval_id} was already decided: {approval.status}.")
        if plan.status in TERMINAL or plan.cancel_requested_at is not None:
            ended = "is being cancelled" if plan.status not in TERMINAL else f"is {plan.status}"
            raise NothingWaits(f"Plan {plan_id} {ended}: nothing waits for this approval any more.")
        status = _status(approval, decision, note)
        return await approvals.decide(conn, approval_id=approval.id, status=status, response=note)


def _status(approval: Approval, decision: str, note: str | None) -> ApprovalStatus:
    status = _OUTCOMES.get((approval.kind, decision))
    if status is None:
        allowed = "approve or reject" if approval.kind == "tool_call" else "answer or reject"
        raise InvalidInput(f"A {approval.kind.replace('_', ' ')} approval takes {allowed}.")
    if status == "answered" and note is None:
        raise InvalidInput("An answer needs text: what the agent asked for.")
    return status
