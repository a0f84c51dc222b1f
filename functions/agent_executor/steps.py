"""The executor's route: run one attempt of one plan step (internal)."""

from __future__ import annotations

from uuid import UUID

from fastapi import APIRouter

from shared.api.deps import ServiceCaller, ServicesDep
from shared.api.problems import problems
from shared.dispatch.transport import run_step_here
from shared.wire.runs import RunStepRequest, StepOutcomeOut

router = APIRouter(tags=["steps"])


@router.post("/steps/{step_id}/run", responses=problems(403, 404))
async def run_step(
    step_id: UUID, body: RunStepRequest, _: ServiceCaller, services: ServicesDep
) -> StepOutcomeOut:
    """Run one executor step attempt, or resume it (internal: service-role key).

    Idempotent on (step, attempt): a redelivered attempt that finished makes no model call and
    returns the step as it stands.
    """
    outcome = await run_step_here(services, step_id=step_id, attempt=body.attempt)
    return StepOutcomeOut.model_validate(outcome)
