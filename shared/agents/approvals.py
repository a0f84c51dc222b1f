"""The seam where the user gets a say: destructive tool calls and executor escalations.

Before any agent runs a tool whose definition is `destructive`, the gate is asked; when a step's
agent calls `escalate`, the gate is asked what to do. The default (`NoApprovals`) lets
destructive calls run and lets escalations fail their step with the agent's reason.

A gate that answers `wait` stops the plan in `awaiting_approval`. Nothing is lost: the call (or
escalation) is stored without a result, so the next `run_plan` for the plan asks the gate again
and goes on from there — an approvals table behind a gate is all a human-in-the-loop needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol
from uuid import UUID


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
