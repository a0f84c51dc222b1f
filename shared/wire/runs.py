"""Wire models of the planner's and executor's own routes: what a run of a plan or a step
returns, a step's attempt, and the user's decisions on approvals."""

from typing import Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from shared.db.records import PlanStatus, PlanStrategy, StepStatus
from shared.kernel.text import StoredText
from shared.queues.queue_messages import StepAttempt
from shared.wire.sessions import _Out
from shared.wire.turns import ApprovalOut


class PlanOutcomeOut(_Out):
    """How one run of a plan ended (or paused)."""

    plan_id: UUID
    session_id: UUID
    status: PlanStatus
    strategy: PlanStrategy | None
    answer: str | None
    message_id: UUID | None
    error: str | None
    running_elsewhere: bool = Field(
        default=False,
        description="Another invocation holds the plan's lease: this one did nothing.",
    )
    handed_off: bool = Field(
        default=False,
        description="The plan goes on elsewhere (its steps or the plan itself were queued); "
        "this run did not wait for it. No `done` yet: watch Realtime or GET /plans/{id}.",
    )


class RunStepRequest(BaseModel):
    """Run one attempt of an executor step (idempotent on step and attempt)."""

    model_config = ConfigDict(extra="forbid")

    attempt: StepAttempt = 1


class StepOutcomeOut(_Out):
    """Where a step stands after one run of it."""

    step_id: UUID
    step_number: int
    status: StepStatus
    result: str | None
    error: str | None
    running_elsewhere: bool = False


class ApprovalList(BaseModel):
    approvals: list[ApprovalOut]


class DecisionRequest(BaseModel):
    """The user's decision: `approve`/`reject` a tool call; `answer`/`reject` an escalation."""

    model_config = ConfigDict(extra="forbid")

    decision: Literal["approve", "reject", "answer"]
    text: StoredText | None = Field(
        default=None, max_length=4000, description="The answer, or why the call is rejected."
    )


class DecisionReply(BaseModel):
    """The decided approval, and where the plan got to when it resumed."""

    approval: ApprovalOut
    plan: PlanOutcomeOut


class CancelReply(BaseModel):
    plan_id: UUID
    status: PlanStatus
    cancel_requested: Literal[True] = True
