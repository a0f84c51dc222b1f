"""Running one plan step: `run_executor_step` (the `agent_executor` function's whole job) and
the planner's own write steps, which run the same loop with the planner's tools.

Idempotent on (step, attempt): a finished step is returned as it is; an attempt that was cut
short (a crash, a redelivery) resumes in its thread from the stored rows; a cancelled plan's
step is closed as `cancelled` without a model call. One invocation works on a step at a time
(its run lease): another one for the same step returns at once with the step as it stands and
`running_elsewhere=True`.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import TYPE_CHECKING, Literal
from uuid import UUID

from shared.agents import control_tools, prompts
from shared.agents.errors import RESUMABLE, AgentStopped, AwaitingApproval, PlanCancelled
from shared.agents.events import emit_agent_message, emit_step_completed, emit_step_started
from shared.agents.leases import LeaseLost, holding
from shared.agents.model_calls import AgentRun, tool_schemas
from shared.agents.outcomes import StepOutcome
from shared.agents.step_loop import Ending, StepWorker
from shared.agents.step_setup import OpenedStep, StepBusy, open_step
from shared.db import agents, dialogue, executions, plans
from shared.db.records import ExecutionStatus, PlanStep, StepStatus, ThreadStatus
from shared.errors import InvalidInput
from shared.events import EventEmitter, Publisher
from shared.llm import LLMError
from shared.models.text import storable
from shared.tools import offered_tools

if TYPE_CHECKING:
    from shared.services import Services

logger = logging.getLogger(__name__)


async def run_executor_step(
    services: Services, *, step_id: UUID, attempt: int = 1, publisher: Publisher
) -> StepOutcome:
    """Run (or resume, or just report) one executor step; events go to `publisher`."""
    async with services.db.service() as conn:
        step = await plans.get_step(conn, step_id=step_id)
    if step is not None and not step.executor_required:
        raise InvalidInput(f"step {step.step_number} is the planner's own step, not an executor's")
    opened = await open_step(services, step_id=step_id, attempt=attempt)
    if isinstance(opened, PlanStep):
        return StepOutcome.of(opened)
    if isinstance(opened, StepBusy):
        return StepOutcome.of(opened.step, running_elsewhere=True)
    emitter = EventEmitter(services.db, publisher, session_id=opened.plan.session_id)
    return await work_step(services, opened, emitter)


async def run_planner_step(
    services: Services, *, step_id: UUID, attempt: int, emitter: EventEmitter
) -> StepOutcome:
    """Run (or resume) one of the planner's own steps, in-process, with its write tools."""
    opened = await open_step(services, step_id=step_id, attempt=attempt)
    if isinstance(opened, PlanStep):
        return StepOutcome.of(opened)
    if isinstance(opened, StepBusy):
        return StepOutcome.of(opened.step, running_elsewhere=True)
    return await work_step(services, opened, emitter)


async def work_step(services: Services, opened: OpenedStep, emitter: EventEmitter) -> StepOutcome:
    """Work the opened step to its end and close it (thread, step, execution, agent), holding
    its lease; a run whose lease was taken over stops and reports `running_elsewhere`."""
    try:
        async with holding(services.db, opened.lease):
            return await _work(services, opened, emitter)
    except LeaseLost:
        async with services.db.service() as conn:
            step = await plans.get_step(conn, step_id=opened.step.id)
        return StepOutcome.of(step or opened.step, running_elsewhere=True)


async def _work(services: Services, opened: OpenedStep, emitter: EventEmitter) -> StepOutcome:
    if opened.delegation is not None:
        await emit_step_started(
            emitter, opened.step, thread=opened.thread, execution=opened.execution,
            seq=opened.started_seq,
        )  # fmt: skip
        await emit_agent_message(
            emitter, opened.delegation, plan_id=opened.plan.id, step_id=opened.step.id
        )
    worker = _worker(services, opened, emitter)
    try:
        ending = await worker.work()
    except PlanCancelled:
        ending = Ending("cancel", "the request was cancelled")
    except AwaitingApproval:
        async with services.db.service() as conn:
            step = await plans.update_step(conn, step_id=opened.step.id, status="awaiting_approval")
        return StepOutcome.of(step)
    except (AgentStopped, LLMError) as exc:
        ending = Ending("fail", readable(exc))
    except RESUMABLE:
        raise
    except Exception as exc:
        # A bug, or data the database refused: fail the step (the plan goes on without it)
        # rather than leave it running for every redelivery to pay for the same calls again.
        logger.exception("step %s failed unexpectedly", opened.step.id)
        ending = Ending("fail", readable(exc))
    return await close_step(services, opened, ending, emitter)


def _worker(services: Services, opened: OpenedStep, emitter: EventEmitter) -> StepWorker:
    executor = opened.step.executor_required
    offered = offered_tools(opened.agent, services.tools)
    if not executor and opened.step.tools:
        named = [tool for tool in offered if tool.name in opened.step.tools]
        offered = named or offered
    controls = control_tools.step_tools(can_ask=executor)
    return StepWorker(
        run=AgentRun(services, emitter, opened.plan, opened.agent, opened.execution),
        step=opened.step,
        thread=opened.thread,
        system_prompt=prompts.EXECUTOR if executor else prompts.PLANNER_STEP,
        tools=controls + tool_schemas(offered),  # the controls first: a prefix all steps share
        can_ask=executor,
        deadline=opened.clock_from + timedelta(seconds=services.settings.executor_timeout_seconds),
    )


_CLOSING: dict[str, tuple[ThreadStatus, StepStatus, ExecutionStatus]] = {
    "complete": ("completed", "completed", "completed"),
    "fail": ("failed", "failed", "failed"),
    "timeout": ("timeout", "completed", "timeout"),
    "cancel": ("abandoned", "cancelled", "cancelled"),
}


async def close_step(
    services: Services, opened: OpenedStep, ending: Ending, emitter: EventEmitter
) -> StepOutcome:
    """End the thread, the step and the execution together, then announce `step_completed`.

    A timeout completes the step with its partial result (the plan goes on with it) and keeps
    the limit that was hit as the step's `error`.
    """
    thread_status, step_status, run_status = _CLOSING[ending.kind]
    result = ending.text if ending.kind in ("complete", "timeout") else None
    error = ending.detail if ending.kind == "timeout" else (None if result else ending.text)
    async with services.db.service() as conn:
        await dialogue.close_thread(
            conn, thread_id=opened.thread.id, status=thread_status, result=result, error=error
        )
        step = await plans.update_step(
            conn, step_id=opened.step.id, status=step_status, result=result, error=error
        )
        await executions.finish_execution(
            conn, execution_id=opened.execution.id, status=run_status, error=error
        )
        if opened.agent.role == "executor":
            agent_status: Literal["completed", "failed"] = (
                "completed" if step_status == "completed" else "failed"
            )
            await agents.set_agent_status(conn, agent_id=opened.agent.id, status=agent_status)
    await emit_step_completed(emitter, step, thread_status=thread_status, agent_id=opened.agent.id)
    return StepOutcome.of(step)


def readable(exc: Exception) -> str:
    """An error as the user and the planner should read it (no stack, no secrets)."""
    if isinstance(exc, AgentStopped):
        return str(exc)
    if isinstance(exc, LLMError):
        return (
            f"The language model call failed ({exc.title.lower()}): {storable(str(exc))}. "
            "Your message is saved; try again in a moment."
        )
    return "An unexpected error stopped this work (it is logged); your message is saved."
