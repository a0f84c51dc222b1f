"""What travels on the queues: ids only — the tables hold everything else.

* `run_plan` (planner queue) — chat hands a new turn's plan to the planner; the sweeper and a
  decided approval hand it over again. The planner runs or resumes it.
* `resume_plan` (planner queue) — an executor's step settled (or was failed as dead): the
  planner takes the plan up again if it has something to do.
* `run_step` (executor queue) — the planner hands one step attempt to an executor.

Every handler is idempotent (`run_plan` resumes from the tables; steps are keyed on (step,
attempt); leases keep one live run per row), so a message delivered twice does its work once.
"""

from __future__ import annotations

from typing import Annotated, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

StepAttempt = Annotated[int, Field(ge=1, le=20)]
"""An executor step's attempt number, as the planner's functions and queues carry it."""


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RunPlan(_Message):
    type: Literal["run_plan"] = "run_plan"
    plan_id: UUID


class ResumePlan(_Message):
    type: Literal["resume_plan"] = "resume_plan"
    plan_id: UUID
    step_id: UUID | None = None
    """The step whose settling sent this (for the logs)."""


class RunStep(_Message):
    type: Literal["run_step"] = "run_step"
    plan_id: UUID
    step_id: UUID
    attempt: StepAttempt


Message = Annotated[RunPlan | ResumePlan | RunStep, Field(discriminator="type")]
_reader: TypeAdapter[Message] = TypeAdapter(Message)


def parse(body: str) -> Message:
    """A message from its body; raises `pydantic.ValidationError` for anything else."""
    return _reader.validate_json(body)


def dump(message: Message) -> str:
    return message.model_dump_json()
