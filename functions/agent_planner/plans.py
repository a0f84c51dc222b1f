"""The planner's routes: run or resume a plan (internal), read it, cancel it."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Header, Request, status
from fastapi.responses import JSONResponse, StreamingResponse

from shared.agents import request_cancel
from shared.api.deps import CurrentUser, ServiceCaller, ServicesDep, function_url
from shared.api.problems import problems
from shared.api.responses import EVENT_STREAM, accepted, accepted_response, respond_async
from shared.dispatch.transport import resume_plan, run_plan_here, stream_plan_here
from shared.usecases import approval_decisions
from shared.usecases.plan_views import plan_detail
from shared.wire.runs import (
    ApprovalList,
    CancelReply,
    DecisionReply,
    DecisionRequest,
    PlanOutcomeOut,
)
from shared.wire.turns import ApprovalOut, PlanDetail

router = APIRouter(tags=["plans"])


@router.post(
    "/plans/{plan_id}/run",
    response_model=PlanOutcomeOut,
    responses={200: {"content": EVENT_STREAM}, **problems(403, 404)},
)
async def run_plan(
    plan_id: UUID, _: ServiceCaller, services: ServicesDep, stream: bool = False
) -> PlanOutcomeOut | StreamingResponse:
    """Run the plan, or resume it from the tables (internal: service-role key).

    Idempotent: a finished plan is returned as it is; one that died mid-way continues without
    redoing finished steps or answered tool calls. `?stream=true` answers with its events.
    """
    if not stream:
        return PlanOutcomeOut.model_validate(await run_plan_here(services, plan_id=plan_id))
    events = await stream_plan_here(services, plan_id=plan_id)
    return StreamingResponse(events, media_type="text/event-stream")


@router.get("/plans/{plan_id}", responses=problems(404))
async def get_plan(plan_id: UUID, user: CurrentUser, services: ServicesDep) -> PlanDetail:
    """The plan with its steps, agent threads and executions (tokens, cost, durations)."""
    return await plan_detail(services.db, user, plan_id)


@router.get("/plans/{plan_id}/approvals", responses=problems(404))
async def list_approvals(plan_id: UUID, user: CurrentUser, services: ServicesDep) -> ApprovalList:
    """The plan's approvals: destructive calls and escalations waiting for (or given) a decision."""
    found = await approval_decisions.list_approvals(services, user, plan_id)
    return ApprovalList(approvals=[ApprovalOut.model_validate(a) for a in found])


DECISION_ACCEPTED = accepted_response(
    DecisionReply,
    "The decision is recorded and the plan handed on to resume (`Prefer: respond-async`, or a "
    "deployment with queues): `plan.handed_off` is true and its status as it stands; watch "
    "Realtime or `Location`.",
    location="The plan (`GET /plans/{id}`).",
)


@router.post(
    "/plans/{plan_id}/approvals/{approval_id}",
    response_model=DecisionReply,
    responses={202: DECISION_ACCEPTED, **problems(404, 409, 502, 503)},
)
async def decide_approval(
    plan_id: UUID,
    approval_id: UUID,
    body: DecisionRequest,
    request: Request,
    user: CurrentUser,
    services: ServicesDep,
    prefer: Annotated[str | None, Header(description="`respond-async` asks for 202")] = None,
) -> DecisionReply | JSONResponse:
    """Approve or reject a destructive call, or answer or reject an escalation — then resume
    the plan and answer where it got to (its events stream as usual). With `Prefer:
    respond-async`, or `INVOKER_TRANSPORT=sqs` (the plan is queued), it answers **202** once
    the decision is recorded and the plan handed on (`plan.handed_off`: watch Realtime)."""
    decided = await approval_decisions.decide_approval(
        services,
        user,
        plan_id=plan_id,
        approval_id=approval_id,
        decision=body.decision,
        text=body.text,
    )
    asked = respond_async(prefer)
    resumed = await resume_plan(services, plan_id=plan_id, wait=not asked)
    reply = DecisionReply(
        approval=ApprovalOut.model_validate(decided), plan=PlanOutcomeOut.model_validate(resumed)
    )
    if not resumed.handed_off:
        return reply
    return accepted(reply, f"{function_url(request)}/plans/{plan_id}", preference_applied=asked)


@router.post(
    "/plans/{plan_id}/cancel", status_code=status.HTTP_202_ACCEPTED, responses=problems(404)
)
async def cancel_plan(plan_id: UUID, user: CurrentUser, services: ServicesDep) -> CancelReply:
    """Ask the agents to stop: they do before their next model or tool call, and the plan
    ends `cancelled` with its partial output and usage kept. A finished plan is unchanged."""
    plan = await request_cancel(services, plan_id=plan_id, user_id=user.id)
    return CancelReply(plan_id=plan.id, status=plan.status)
