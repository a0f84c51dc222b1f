"""What the entry points return (everything is also in the tables; these are conveniences)."""

from typing import TYPE_CHECKING, NamedTuple
from uuid import UUID

from shared.db.records import PlanStatus, PlanStep, PlanStrategy, StepStatus

if TYPE_CHECKING:
    from shared.db.transitions import Control


class TurnStarted(NamedTuple):
    """A stored user message and the plan that will answer it."""

    session_id: UUID
    message_id: UUID
    plan_id: UUID
    planner_agent_id: UUID
    created: bool
    """False when `client_message_id` matched an earlier send: nothing new was stored."""
    plan_status: PlanStatus
    """The plan's status when the message was stored (or found, for a resend)."""


class PlanOutcome(NamedTuple):
    """How a plan ended (or paused) after one `run_plan`."""

    plan_id: UUID
    session_id: UUID
    status: PlanStatus
    strategy: PlanStrategy | None
    answer: str | None
    """The final answer (or the configuration notice) shown to the user, if any."""
    message_id: UUID | None
    """The `chat_messages` row holding `answer`."""
    error: str | None
    running_elsewhere: bool = False
    """True: another invocation holds the plan's lease and is working on it; this one did
    nothing (no model call, no event) and `status` is the plan's current one."""
    handed_off: bool = False
    """True: the plan goes on elsewhere and this run ended without waiting for it — its
    executor steps were handed to a queue (the plan resumes when one settles), or the whole
    plan was queued. `status` is the plan's current one (`executing`); no `done` yet."""


class StepOutcome(NamedTuple):
    """Where one step stands after one run of it."""

    step_id: UUID
    step_number: int
    status: StepStatus
    result: str | None
    error: str | None
    running_elsewhere: bool = False
    """True: another invocation holds the step's lease and is working on it; this one did
    nothing, and `status` is the step's current one."""
    control: "Control | None" = None
    """The plan's control state as the statement that settled the step left it (a run in
    this process; None over the wire)."""

    @classmethod
    def of(
        cls, step: PlanStep, *, running_elsewhere: bool = False, control: "Control | None" = None
    ) -> "StepOutcome":
        return cls(
            step.id,
            step.step_number,
            step.status,
            step.result,
            step.error,
            running_elsewhere,
            control,
        )


class TurnOutcome(NamedTuple):
    """`run_turn`'s result: the stored message and how its plan ended."""

    started: TurnStarted
    plan: PlanOutcome
