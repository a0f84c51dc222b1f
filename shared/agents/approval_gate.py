"""The seam where the user gets a say: destructive tool calls and executor escalations.

Before any agent runs a tool whose definition is `destructive`, the gate is asked; when a step's
agent calls `escalate`, the gate is asked what to do. The default (`DatabaseApprovals`, with
`APPROVALS=on`) asks the user through `agent_approvals` rows; `NoApprovals` (`APPROVALS=off`)
lets destructive calls run and lets escalations fail their step with the agent's reason.

A gate that answers `wait` stops the plan in `awaiting_approval`. Nothing is lost: the call (or
escalation) is stored without a result, so the next `run_plan` for the plan asks the gate again
and goes on from there — an approvals table behind a gate is all a human-in-the-loop needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol
from uuid import UUID

from shared.db import approvals
from shared.db.records import Approval

if TYPE_CHECKING:
    from shared.db import Database


@dataclass(frozen=True, slots=True)
class ToolApproval:
    """A destructive call about to run."""

    plan_id: UUID
    step_id: UUID | None
    """None for the planner's own tool loop."""
    agent_id: UUID
    tool_call_id: str
    tool_name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Escalation:
    """A step's agent handing a decision to the user."""

    plan_id: UUID
    step_id: UUID
    agent_id: UUID
    tool_call_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class Verdict:
    """`allow`/`deny` a call; `answer` an escalation (the text goes back to the agent);
    `fail` an escalation's step; `wait` for the user either way."""

    decision: Literal["allow", "deny", "answer", "fail", "wait"]
    text: str = ""
    """Why a call is denied, or the answer to an escalation."""


ALLOW = Verdict("allow")
WAIT = Verdict("wait")


class ApprovalGate(Protocol):
    """Decides destructive calls and escalations (consulted again on every resume)."""

    async def review_tool_call(self, request: ToolApproval) -> Verdict:
        """`allow`, `deny` (with a reason the model sees) or `wait`."""
        ...

    async def review_escalation(self, request: Escalation) -> Verdict:
        """`answer` (with text), `fail` (the step fails with the agent's reason) or `wait`."""
        ...


class NoApprovals:
    """The default gate: destructive calls run; an escalation fails its step."""

    async def review_tool_call(self, request: ToolApproval) -> Verdict:
        return ALLOW

    async def review_escalation(self, request: Escalation) -> Verdict:
        return Verdict("fail")


class DatabaseApprovals:
    """The user decides, through `agent_approvals` rows (one per call or escalation).

    The first time a call or escalation is reviewed its row is stored `pending` and the plan
    waits; `decide_approval` records the user's decision, and the next `run_plan` asks again
    and finds it: an approved call runs, a rejected one is answered "not approved" (the tool
    does not run), an answered escalation gives the agent the user's text as its result, and
    a rejected escalation fails its step.
    """

    def __init__(self, db: Database) -> None:
        self.db = db

    async def review_tool_call(self, request: ToolApproval) -> Verdict:
        async with self.db.service() as conn:
            row, _ = await approvals.request_approval(
                conn,
                plan_id=request.plan_id,
                step_id=request.step_id,
                agent_id=request.agent_id,
                kind="tool_call",
                tool_call_id=request.tool_call_id,
                tool_name=request.tool_name,
                tool_args=request.arguments,
            )
        if row.status == "pending":
            return WAIT
        if row.status == "approved":
            return ALLOW
        return Verdict("deny", _rejection(row))

    async def review_escalation(self, request: Escalation) -> Verdict:
        async with self.db.service() as conn:
            row, _ = await approvals.request_approval(
                conn,
                plan_id=request.plan_id,
                step_id=request.step_id,
                agent_id=request.agent_id,
                kind="escalation",
                tool_call_id=request.tool_call_id,
                tool_name="escalate",
                reason=request.reason,
            )
        if row.status == "pending":
            return WAIT
        if row.status == "answered":
            return Verdict("answer", row.response or "")
        return Verdict("fail", row.response or "")


def _rejection(row: Approval) -> str:
    """What the model is told about a call the user did not approve."""
    if row.status == "cancelled":
        return "the request ended before the user decided; the call did not run"
    said = f" (their reason: {row.response})" if row.response else ""
    return (
        f"the user rejected this {row.tool_name} call{said}. It did not run: do not call it "
        "again for this request, and tell the user what was left undone."
    )
