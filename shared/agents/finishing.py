"""How a `run_plan` ends: the plan's final state, the closing events, exactly one `done`.

* answered → `completed`;
* the model is not configured → the configuration notice is stored as the answer (what to
  set), the plan `failed`;
* a model failure, the cost cap, an unwritable plan, a prompt over budget → `failed` with a
  readable `error` event; the user's message is always kept;
* anything unexpected (a bug, data the database refused) → logged, and `failed` the same way,
  with a generic message (no internals reach the user). A failure of the infrastructure
  (`RESUMABLE`: another function unreachable, the database connection lost), a lost lease or a
  cancelled task leaves the plan as it stands, for the next invocation to resume;
* a cancel request → `cancelled`: open steps, threads and executions are closed, everything
  already stored (partial results, usage) stays; undecided approvals are closed `cancelled`;
* an approval gate waiting → `awaiting_approval` (the event lists the pending approvals); the
  next `run_plan` resumes. If the user decided an approval while this run was working (its
  `run_plan` found the plan busy), the run does not wait: it goes round again and uses it.

Settling the plan (waiting, ending) gives its run lease back in the same write.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING
from uuid import UUID

from pydantic import JsonValue

from shared.agents.accounting import plan_usage, usage_json
from shared.agents.errors import RESUMABLE, AgentStopped, AwaitingApproval, PlanCancelled
from shared.agents.events import approval_data, clip, emit_step_completed
from shared.agents.executor import readable
from shared.agents.outcomes import PlanOutcome
from shared.db import approvals, chats, dialogue, executions, plans
from shared.db.database import Connection
from shared.db.records import (
    ChatMessage,
    ExecutionStatus,
    Plan,
    PlanStatus,
    PlanStep,
    StepStatus,
)
from shared.events import EventEmitter
from shared.llm import LLMError, LLMNotConfigured

if TYPE_CHECKING:
    from shared.services import Services

logger = logging.getLogger(__name__)

TERMINAL: frozenset[PlanStatus] = frozenset({"completed", "failed", "cancelled"})
NOT_CONFIGURED = "Parley cannot answer yet: no language model is configured. "


async def finish_plan(
    services: Services,
    plan: Plan,
    emitter: EventEmitter,
    work: Callable[[], Awaitable[ChatMessage]],
) -> PlanOutcome:
    """Run `work` (the planner's job) unless the plan has ended; settle the plan; emit `done`."""
    if plan.status in TERMINAL:
        outcome = await outcome_of(services, plan)
    else:
        outcome = await _settle(services, plan, emitter, work)
    await _done(services, emitter, outcome)
    return outcome


async def _settle(
    services: Services,
    plan: Plan,
    emitter: EventEmitter,
    work: Callable[[], Awaitable[ChatMessage]],
) -> PlanOutcome:
    while True:
        seen = await _decisions(services, plan)
        try:
            return await _completed(services, plan, await work())
        except LLMNotConfigured as exc:
            return await _not_configured(services, plan, emitter, exc)
        except PlanCancelled:
            return await _close(services, plan, emitter, "cancelled", None)
        except AwaitingApproval as exc:
            waiting = await _awaiting(services, plan, emitter, str(exc), seen)
            if waiting is not None:
                return waiting
        except (AgentStopped, LLMError) as exc:
            return await _close(services, plan, emitter, "failed", readable(exc))
        except RESUMABLE:
            raise
        except Exception as exc:
            # A bug, or data the database refused: end the plan rather than leave it
            # `executing` for every resume to pay for the same model calls and fail the same way.
            logger.exception("plan %s failed unexpectedly", plan.id)
            return await _close(services, plan, emitter, "failed", readable(exc))


async def _decisions(services: Services, plan: Plan) -> int:
    """How many approvals of the plan were decided, read before the gate is asked."""
    async with services.db.service() as conn:
        current = await plans.get_plan(conn, plan_id=plan.id)
    return current.decisions if current else 0


async def _completed(services: Services, plan: Plan, answer: ChatMessage) -> PlanOutcome:
    async with services.db.service() as conn:
        await executions.close_open_executions(conn, plan_id=plan.id, status="completed")
        await approvals.cancel_pending(conn, plan_id=plan.id)
        done = await plans.update_plan(conn, plan_id=plan.id, status="completed")
    return _outcome(done, answer)


async def _close(
    services: Services, plan: Plan, emitter: EventEmitter, status: PlanStatus, error: str | None
) -> PlanOutcome:
    async with services.db.service() as conn:
        ended, closed = await close_plan_rows(conn, plan.id, status, error)
    for step in closed:
        await emit_step_completed(emitter, step, thread_status="abandoned", agent_id=None)
    if error is not None:
        await emitter.emit("error", {"message": error}, plan_id=plan.id)
    else:
        await emitter.emit("status_update", {"status": "cancelled"}, plan_id=plan.id)
    return _outcome(ended, None)


async def close_plan_rows(
    conn: Connection, plan_id: UUID, status: PlanStatus, error: str | None
) -> tuple[Plan, list[PlanStep]]:
    """End the plan (`cancelled` or `failed`) and everything of it still open: steps, threads,
    executions, undecided approvals. Returns the plan and the steps closed now."""
    reason = error or "the request was cancelled"
    step_status: StepStatus = "cancelled"
    run_status: ExecutionStatus = "cancelled" if status == "cancelled" else "failed"
    closed = await plans.close_open_steps(conn, plan_id=plan_id, status=step_status, error=reason)
    await dialogue.abandon_open_threads(conn, plan_id=plan_id, error=reason)
    await executions.close_open_executions(conn, plan_id=plan_id, status=run_status, error=error)
    await approvals.cancel_pending(conn, plan_id=plan_id)
    ended = await plans.update_plan(conn, plan_id=plan_id, status=status, error=error)
    return ended, closed


async def _awaiting(
    services: Services, plan: Plan, emitter: EventEmitter, why: str, seen: int
) -> PlanOutcome | None:
    """Settle the plan as waiting for the user, or None when a decision (or a cancel request)
    arrived meanwhile: the caller goes round again, and uses it."""
    async with services.db.service() as conn:
        waiting = await plans.settle_awaiting(conn, plan_id=plan.id, decisions_seen=seen)
        if waiting is None:
            return None
        pending = await approvals.list_approvals(conn, plan_id=plan.id, status="pending")
    data: dict[str, JsonValue] = {
        "status": "awaiting_approval",
        "message": why,
        "approvals": [approval_data(a) for a in pending],
    }
    await emitter.emit("status_update", data, plan_id=plan.id)
    return _outcome(waiting, None)


async def _not_configured(
    services: Services, plan: Plan, emitter: EventEmitter, exc: LLMNotConfigured
) -> PlanOutcome:
    notice = NOT_CONFIGURED + str(exc)
    async with services.db.service() as conn:
        message = await chats.add_message(
            conn, session_id=plan.session_id, user_id=plan.user_id, role="assistant",
            content=notice, plan_id=plan.id, metadata={"kind": "configuration"},
        )  # fmt: skip
        ended = await plans.update_plan(conn, plan_id=plan.id, status="failed", error=notice)
    await emitter.emit("error", {"message": notice, "code": "llm_not_configured",
                                 "message_id": str(message.id)}, plan_id=plan.id)  # fmt: skip
    return _outcome(ended, message)


async def outcome_of(services: Services, plan: Plan) -> PlanOutcome:
    """The outcome of a plan that has already ended (a redelivered `run_plan`)."""
    async with services.db.service() as conn:
        rows = await chats.list_plan_messages(conn, plan_id=plan.id)
    kinds = ("answer", "configuration")
    answer = next((r for r in reversed(rows) if r.role == "assistant"
                   and r.metadata.get("kind") in kinds), None)  # fmt: skip
    return _outcome(plan, answer)


def _outcome(plan: Plan, answer: ChatMessage | None) -> PlanOutcome:
    return PlanOutcome(
        plan_id=plan.id,
        session_id=plan.session_id,
        status=plan.status,
        strategy=plan.strategy,
        answer=answer.content if answer else None,
        message_id=answer.id if answer else None,
        error=plan.error,
    )


async def _done(services: Services, emitter: EventEmitter, outcome: PlanOutcome) -> None:
    async with services.db.service() as conn:
        plan = await plans.get_plan(conn, plan_id=outcome.plan_id)
    data: dict[str, JsonValue] = {
        "status": outcome.status,
        "strategy": outcome.strategy,
        "answer": clip(outcome.answer),
        "message_id": str(outcome.message_id) if outcome.message_id else None,
        "error": outcome.error,
        "usage": usage_json(plan_usage(plan)) if plan else None,
    }
    await emitter.emit("done", data, plan_id=outcome.plan_id)
