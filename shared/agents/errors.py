"""Why an agent stops before it is done. Each carries a message that is safe to show the user.

AppError
└── AgentStopped              an agent must stop; the plan records `message`
    ├── PlanCancelled         the user asked to cancel (the plan ends `cancelled`)
    ├── CostCapReached        the plan spent its `PLAN_MAX_COST_USD` (the plan ends `failed`)
    ├── PromptTooLarge        the pinned part of a prompt exceeds the agent's token budget
    ├── PlanNotWritten        the planner kept writing invalid plans
    └── AwaitingApproval      an approval gate holds a call or escalation for the user
Conflict
└── TurnStillRunning          a new message while the session's last turn is still running
InvalidInput
└── ClientMessageIdReused     a `client_message_id` sent again with another message

StepsHandedOff (not an error) the plan's steps run elsewhere; this invocation ends here
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any
from uuid import UUID

from psycopg import OperationalError

from shared.kernel.errors import AppError, Conflict, InvalidInput, UpstreamUnavailable

if TYPE_CHECKING:
    from shared.db.records import Plan

RESUMABLE: tuple[type[Exception], ...] = (UpstreamUnavailable, OperationalError)
"""Failures of the infrastructure, not of the work: another function could not be reached,
or the database connection failed. They leave the plan (or step) as it stands, for the next
invocation to resume; any other unexpected error ends it `failed`."""


class AgentStopped(AppError):
    """An agent cannot go on; `str(error)` is the readable reason, shown to the user — never
    naming a server setting: `for_operators()` adds those, for the log."""

    title = "Agent stopped"

    def for_operators(self) -> str:
        """The reason as the log gives it (with the settings an operator may change)."""
        return str(self)


class PlanCancelled(AgentStopped):
    """A cancel was requested for the plan; the agent that saw it stops before its next call."""

    title = "Plan cancelled"

    def __init__(self) -> None:
        super().__init__("The request was cancelled.")


class CostCapReached(AgentStopped):
    """The plan's model calls cost what it may cost; no further call is made."""

    title = "Cost cap reached"

    def __init__(self, *, spent: Decimal, cap: Decimal) -> None:
        super().__init__(
            f"Stopped: this request has used ${spent:.4f} of model calls, reaching its cap of "
            f"${cap:.4f}. Ask a narrower question."
        )
        self.spent = spent
        self.cap = cap

    def for_operators(self) -> str:
        return f"{self} (the cap is PLAN_MAX_COST_USD)"


class PromptTooLarge(AgentStopped):
    """Even with history dropped and tool results cut, the prompt exceeds the budget."""

    title = "Prompt too large"

    def __init__(self, *, needed: int, budget: int) -> None:
        super().__init__(
            f"This request needs {needed} tokens of context even with earlier messages left "
            f"out and tool results shortened, more than the agent can take ({budget} tokens). "
            "Ask about less at once."
        )
        self.needed = needed
        self.budget = budget

    def for_operators(self) -> str:
        return f"{self} (the budgets are PLANNER_TOKEN_BUDGET and EXECUTOR_TOKEN_BUDGET)"


class PlanNotWritten(AgentStopped):
    """The planner's `create_plan` calls were all invalid."""

    title = "No valid plan"


class AwaitingApproval(AgentStopped):
    """An approval gate holds something for the user; the plan waits in `awaiting_approval`."""

    title = "Awaiting approval"


class StepsHandedOff(Exception):
    """The plan waits only for executor steps handed to a queue: the planner's invocation
    ends here (the plan stays `executing`) and a "resume plan" message brings it back when
    one of them settles. Not a failure: nothing is closed, no `done` is sent."""

    def __init__(self, step_ids: list[UUID]) -> None:
        super().__init__(f"waiting for {len(step_ids)} handed-off step(s)")
        self.step_ids = step_ids


class TurnStillRunning(Conflict):
    """A new message arrived while a turn of the same session is still running (HTTP 409).

    `plan_id` is the running turn's plan; its status says whether it is working or waiting
    for the user's decision.
    """

    title = "Turn still running"
    kind = "turn-running"

    def __init__(self, plan: Plan) -> None:
        if plan.status == "awaiting_approval":
            message = (
                "A turn in this session is waiting for your decision: answer the pending "
                f"approval first, or cancel plan {plan.id}."
            )
        else:
            message = (
                f"A turn is still running in this session: wait for it, or cancel plan {plan.id}."
            )
        super().__init__(message)
        self.plan_id = plan.id
        self.status = plan.status

    def problem_fields(self) -> dict[str, Any]:
        return {"plan_id": str(self.plan_id), "plan_status": self.status}


class ClientMessageIdReused(InvalidInput):
    """A send whose `client_message_id` the session has already stored with another message
    (HTTP 422, as the IETF's Idempotency-Key draft answers a key reused with another payload;
    409 is a turn still running): a resend must repeat the message, a new message needs a
    new id."""

    title = "client_message_id already used"
    kind = "client-message-id-reused"

    def __init__(self, client_message_id: str, *, message_id: UUID, plan_id: UUID) -> None:
        super().__init__(
            f"client_message_id {client_message_id!r} was already sent in this session with a "
            f"different message (message {message_id}). Resend that message unchanged to get "
            "its turn, or send this one with a new client_message_id."
        )
        self.client_message_id = client_message_id
        self.message_id = message_id
        self.plan_id = plan_id

    def problem_fields(self) -> dict[str, Any]:
        return {
            "client_message_id": self.client_message_id,
            "message_id": str(self.message_id),
            "plan_id": str(self.plan_id),
        }
