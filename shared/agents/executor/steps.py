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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import TYPE_CHECKING, Literal
from uuid import UUID

from shared.agents import control_tools, prompts
from shared.agents.changes import changes_note
from shared.agents.errors import RESUMABLE, AgentStopped, AwaitingApproval, PlanCancelled
from shared.agents.event_data import session_emitter
from shared.agents.executor.step_loop import Ending, StepWorker
from shared.agents.executor.step_setup import OpenedStep, StepBusy, open_step
from shared.agents.lease_holder import LeaseLost, holding
from shared.agents.model_calls import AgentRun, tool_schemas
from shared.agents.outcomes import StepOutcome
from shared.db import plans
from shared.db.records import PlanStep
from shared.events import EventEmitter, Publisher
from shared.kernel.text import storable
from shared.llm import (
    LLMAuthenticationFailed,
    LLMBadRequest,
    LLMError,
    LLMNotConfigured,
    LLMOutOfBalance,
)
from shared.observability import logs, tracing
from shared.tools import offered_tools

if TYPE_CHECKING:
    from shared.agents.ports import AgentServices

logger = logging.getLogger(__name__)


async def run_executor_step(
    services: AgentServices, *, step_id: UUID, attempt: int = 1, publisher: Publisher
) -> StepOutcome:
    """Run (or resume, or just report) one executor step; events go to `publisher`.

    Log records made meanwhile carry the step's ids (`shared.observability.logs`); with tracing on,
    the step is an `invoke_agent executor` span, its model and tool calls inside it."""

    def emitter_of(opened: OpenedStep) -> EventEmitter:
        return session_emitter(services, opened.plan.session_id, publisher)

    return await _run_step(services, "executor", step_id, attempt, emitter_of)


async def run_planner_step(
    services: AgentServices, *, step_id: UUID, attempt: int, emitter: EventEmitter
) -> StepOutcome:
    """Run (or resume) one of the planner's own steps, in-process, with its write tools (an
    `invoke_agent planner` span, with tracing on)."""
    return await _run_step(services, "planner", step_id, attempt, lambda opened: emitter)


async def _run_step(
    services: AgentServices,
    agent: Literal["executor", "planner"],
    step_id: UUID,
    attempt: int,
    emitter_of: Callable[[OpenedStep], EventEmitter],
) -> StepOutcome:
    """Open the step's attempt and work it, or report where it stands."""
    with _step_scope(agent, step_id, attempt) as span:
        opened = await open_step(
            services, step_id=step_id, attempt=attempt, executor_only=agent == "executor"
        )
        if isinstance(opened, PlanStep):
            return _reported(span, StepOutcome.of(opened))
        if isinstance(opened, StepBusy):
            return _reported(span, StepOutcome.of(opened.step, running_elsewhere=True))
        _annotate(opened)
        return _reported(span, await work_step(services, opened, emitter_of(opened)))


@contextmanager
def _step_scope(agent: str, step_id: UUID, attempt: int) -> Iterator[tracing.Span]:
    """The step's ids on log records, and its span."""
    attributes: tracing.Attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": agent,
        "parley.step.id": str(step_id),
        "parley.step.attempt": attempt,
    }
    with (
        logs.bound(step_id=step_id, attempt=attempt),
        tracing.span(f"invoke_agent {agent}", attributes=attributes) as span,
    ):
        yield span


def _annotate(opened: OpenedStep) -> None:
    plan, step = opened.plan, opened.step
    logs.annotate(session_id=plan.session_id, plan_id=plan.id, message_id=plan.user_message_id)
    tracing.annotate(
        {
            "parley.plan.id": str(plan.id),
            "parley.step.number": step.step_number,
            "gen_ai.conversation.id": str(plan.session_id),
            "gen_ai.agent.id": str(opened.agent.id),
        }
    )


def _reported(span: tracing.Span, outcome: StepOutcome) -> StepOutcome:
    span.set_attributes(
        {
            "parley.step.status": outcome.status,
            "parley.step.running_elsewhere": outcome.running_elsewhere,
        }
    )
    return outcome


async def work_step(
    services: AgentServices, opened: OpenedStep, emitter: EventEmitter
) -> StepOutcome:
    """Work the opened step to its end and close it (thread, step, execution, agent), holding
    its lease; a run whose lease was taken over stops and reports `running_elsewhere`."""
    try:
        async with holding(services.db, opened.lease):
            outcome = await _work(services, opened, emitter)
            opened.lease.settled = True  # `_work` returns once a statement settled the step
            return outcome
    except LeaseLost:
        async with services.db.autocommit() as conn:
            step = await plans.get_step(conn, step_id=opened.step.id)
        return StepOutcome.of(step or opened.step, running_elsewhere=True)


async def _work(services: AgentServices, opened: OpenedStep, emitter: EventEmitter) -> StepOutcome:
    await emitter.deliver(opened.events)
    worker = _worker(services, opened, emitter)
    try:
        return await worker.work()
    except PlanCancelled:
        ending = Ending("cancel", "the request was cancelled")
    except AwaitingApproval:
        async with services.db.autocommit() as conn:
            step = await plans.update_step(conn, step_id=opened.step.id, status="awaiting_approval")
        return StepOutcome.of(step)
    except (AgentStopped, LLMError) as exc:
        logger.warning("step %s failed: %s", opened.step.id, for_operators(exc))
        ending = Ending("fail", readable(exc) + await _changes(services, worker))
    except RESUMABLE:
        raise
    except Exception as exc:
        # A bug, or data the database refused: fail the step (the plan goes on without it)
        # rather than leave it running for every redelivery to pay for the same calls again.
        logger.exception("step %s failed unexpectedly", opened.step.id)
        ending = Ending("fail", readable(exc))
    return await worker.close(ending)


async def _changes(services: AgentServices, worker: StepWorker) -> str:
    """What the step's writes had changed before it failed (its calls' receipts)."""
    if worker.step.executor_required:  # an executor only reads
        return ""
    calls = {row.tool_call_id for row in worker.rows if row.tool_call_id}
    if not calls:
        return ""
    async with services.db.autocommit() as conn:
        return await changes_note(conn, plan_id=worker.run.plan.id, who="this step", call_ids=calls)


def _worker(services: AgentServices, opened: OpenedStep, emitter: EventEmitter) -> StepWorker:
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
        rows=list(opened.messages),
        system_prompt=prompts.EXECUTOR if executor else prompts.PLANNER_STEP,
        tools=controls + tool_schemas(offered),  # the controls first: a prefix all steps share
        can_ask=executor,
        deadline=opened.clock_from + timedelta(seconds=services.settings.executor_timeout_seconds),
        control=opened.control,
        agent=opened.agent,
    )


def readable(exc: Exception) -> str:
    """An error as the user and the planner should read it: what happened and whether trying
    again can help — no stack, no secrets, no server settings (the operator's log has those)."""
    if isinstance(exc, AgentStopped):
        return str(exc)
    if isinstance(exc, LLMError):
        return _model_failure(exc)
    return "An unexpected error stopped this work (it is logged); your message is saved."


def for_operators(exc: Exception) -> str:
    """What the log says of an error that stopped an agent: its cause, settings included."""
    if isinstance(exc, AgentStopped):
        return exc.for_operators()
    return f"{type(exc).__name__}: {exc}"


def _model_failure(exc: LLMError) -> str:
    if isinstance(exc, LLMNotConfigured):  # its message names the settings to set
        return (
            "No language model is configured, so this could not be answered. Your message "
            "is saved (the operator has been told)."
        )
    if isinstance(exc, LLMOutOfBalance):
        return (
            "The language model's account has no balance left, so this could not be "
            "answered. Your message is saved: send it again once the account is topped up "
            "(the operator has been told)."
        )
    if isinstance(exc, LLMAuthenticationFailed):
        return (
            "The language model's provider refused Parley's key, so this could not be "
            "answered. Your message is saved (the operator has been told)."
        )
    if isinstance(exc, LLMBadRequest):  # the provider's own words: trying again cannot help
        return (
            f"The language model refused the request: {storable(str(exc))}. Your message is saved."
        )
    return (
        f"The language model call failed ({exc.title.lower()}): {storable(str(exc))}. "
        "Your message is saved; try again in a moment."
    )
