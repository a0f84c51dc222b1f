"""How a `run_plan` ends: the plan's final state, the closing events, exactly one `done`.

* answered → `completed`: the planner's answer statement completes the plan, gives its lease
  back and sends `done` (`shared.agents.planner.runs`);
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
  `run_plan` found the plan busy), the run does not wait: it goes round again and uses it;
* its executor steps handed to a queue (`StepsHandedOff`) → still `executing`, no event and
  no `done`: the run ends here and a resume finishes the plan (`handed_off` on the outcome).

Each ending is one transaction that settles the plan (giving its run lease back in the same
write) and sends its events, `done` last, from the database (`EventEmitter.unit`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING
from uuid import UUID

from pydantic import JsonValue

from shared.agents.accounting import plan_usage
from shared.agents.changes import changes_note
from shared.agents.errors import (
    RESUMABLE,
    AgentStopped,
    AwaitingApproval,
    PlanCancelled,
    StepsHandedOff,
)
from shared.agents.event_data import approval_data, done_data, error_data, step_completed_data
from shared.agents.executor.steps import for_operators, readable
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
from shared.events.emitter import Outbox
from shared.llm import LLMError, LLMNotConfigured

if TYPE_CHECKING:
    from shared.agents.ports import AgentServices

logger = logging.getLogger(__name__)

TERMINAL: frozenset[PlanStatus] = frozenset(plans.TERMINAL_PLAN)
NOT_CONFIGURED = (
    "Parley cannot answer yet: no language model is configured. An operator finds what to set "
    "in the server's log; your message is saved."
)
Work = Callable[[], Awaitable[PlanOutcome]]


async def finish_plan(
    services: AgentServices,
    plan: Plan,
    emitter: EventEmitter,
    work: Work | None,
    *,
    unconfigured: LLMNotConfigured | None = None,
) -> PlanOutcome:
    """Run `work` (the planner's job, which settles an answered plan itself) and settle the
    plan however it ended, `done` last (unless the run handed its steps off: the plan has not
    ended). No `work`: the plan has ended already, and its `done` is sent again."""
    if work is None:
        outcome = await outcome_of(services, plan)
        await emitter.emit("done", _done(outcome, plan), plan_id=plan.id)
        return outcome
    decisions = plan.decisions
    while True:
        try:
            if unconfigured is not None:
                return await _not_configured(plan, emitter, unconfigured)
            return await work()
        except StepsHandedOff:
            return await handed_off(services, plan.id)
        except PlanCancelled:
            return await _close(plan, emitter, "cancelled", None)
        except AwaitingApproval as exc:
            waiting = await _awaiting(plan, emitter, str(exc), decisions)
            if waiting is not None:
                return waiting
            decisions = await _decisions(services, plan.id)
        except (AgentStopped, LLMError) as exc:
            logger.warning("plan %s failed: %s", plan.id, for_operators(exc))
            return await _close(plan, emitter, "failed", readable(exc))
        except RESUMABLE:
            raise
        except Exception as exc:
            # A bug, or data the database refused: end the plan rather than leave it
            # `executing` for every resume to pay for the same model calls and fail the same way.
            logger.exception("plan %s failed unexpectedly", plan.id)
            return await _close(plan, emitter, "failed", readable(exc))


async def settled_answer(services: AgentServices, plan: Plan, answer: ChatMessage) -> PlanOutcome:
    """A plan whose answer is stored: completed (already, when its answer's statement did it)."""
    # Kept for plans in flight across a deploy: an answer's statement now completes its plan.
    async with services.db.service() as conn:
        await executions.close_open_executions(conn, plan_id=plan.id, status="completed")
        await approvals.cancel_pending(conn, plan_id=plan.id)
        done = await plans.update_plan(conn, plan_id=plan.id, status="completed")
    return _outcome(done, answer)


async def _decisions(services: AgentServices, plan_id: UUID) -> int:
    """How many approvals of the plan were decided (read before the gate is asked again)."""
    async with services.db.autocommit() as conn:
        current = await plans.get_plan(conn, plan_id=plan_id)
    return current.decisions if current else 0


async def _close(
    plan: Plan, emitter: EventEmitter, status: PlanStatus, error: str | None
) -> PlanOutcome:
    async with emitter.unit() as (conn, outbox):
        if status == "failed" and error is not None:
            error += await changes_note(conn, plan_id=plan.id, who="this turn")
        ended, closed = await close_plan_rows(conn, plan.id, status, error)
        announce_ended(outbox, ended, closed)
    return _outcome(ended, None)


def announce_ended(outbox: Outbox, plan: Plan, closed: list[PlanStep]) -> None:
    """The events of a plan ended `failed` or `cancelled` (`close_plan_rows`), `done` last."""
    announce_closed(outbox, plan, closed)
    outbox.add("done", _done(_outcome(plan, None), plan), plan_id=plan.id)


def announce_closed(outbox: Outbox, plan: Plan, closed: list[PlanStep]) -> None:
    """The events of a plan ended `failed` or `cancelled` (`close_plan_rows`), but `done`."""
    for step in closed:
        outbox.add("step_completed", step_completed_data(step, "abandoned"), plan_id=plan.id)
    if plan.status == "failed":
        outbox.add("error", error_data(plan.error or ""), plan_id=plan.id)
    else:
        outbox.add("status_update", {"status": "cancelled"}, plan_id=plan.id)


async def close_failed(
    services: AgentServices, plan: Plan, emitter: EventEmitter, error: str
) -> PlanOutcome:
    """End a plan no run will finish (`shared.agents.planner.abandoning`): `failed`, `error`,
    `done`."""
    return await _close(plan, emitter, "failed", error)


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


async def _awaiting(plan: Plan, emitter: EventEmitter, why: str, seen: int) -> PlanOutcome | None:
    """Settle the plan as waiting for the user, or None when a decision (or a cancel request)
    arrived meanwhile: the caller goes round again, and uses it."""
    async with emitter.unit() as (conn, outbox):
        waiting = await plans.settle_awaiting(conn, plan_id=plan.id, decisions_seen=seen)
        if waiting is None:
            return None
        pending = await approvals.list_approvals(conn, plan_id=plan.id, status="pending")
        data: dict[str, JsonValue] = {
            "status": "awaiting_approval",
            "message": why,
            "approvals": [approval_data(a) for a in pending],
        }
        outbox.add("status_update", data, plan_id=plan.id)
        outcome = _outcome(waiting, None)
        outbox.add("done", _done(outcome, waiting), plan_id=plan.id)
    return outcome


async def _not_configured(plan: Plan, emitter: EventEmitter, exc: LLMNotConfigured) -> PlanOutcome:
    logger.warning("plan %s cannot be answered: %s", plan.id, exc)  # names what to set
    notice = NOT_CONFIGURED
    async with emitter.unit() as (conn, outbox):
        message = await chats.add_message(
            conn,
            session_id=plan.session_id,
            user_id=plan.user_id,
            role="assistant",
            content=notice,
            plan_id=plan.id,
            metadata={"kind": "configuration"},
        )
        ended = await plans.update_plan(conn, plan_id=plan.id, status="failed", error=notice)
        outbox.add(
            "error",
            error_data(notice, code="llm_not_configured", message_id=message.id),
            plan_id=plan.id,
        )
        outcome = _outcome(ended, message)
        outbox.add("done", _done(outcome, ended), plan_id=plan.id)
    return outcome


async def handed_off(services: AgentServices, plan_id: UUID) -> PlanOutcome:
    """The outcome of a run that ended while the plan goes on elsewhere."""
    async with services.db.autocommit() as conn:
        plan = await plans.get_plan(conn, plan_id=plan_id)
    assert plan is not None
    return _outcome(plan, None)._replace(handed_off=True)


async def outcome_of(services: AgentServices, plan: Plan) -> PlanOutcome:
    """The outcome of a plan as it stands (one that has ended: with its answer)."""
    if plan.status not in TERMINAL:
        return _outcome(plan, None)
    async with services.db.autocommit() as conn:
        rows = await chats.list_plan_messages(conn, plan_id=plan.id)
    kinds = ("answer", "configuration")
    answer = next(
        (r for r in reversed(rows) if r.role == "assistant" and r.metadata.get("kind") in kinds),
        None,
    )
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


def _done(outcome: PlanOutcome, plan: Plan) -> dict[str, JsonValue]:
    data = done_data(
        outcome.status, outcome.strategy, outcome.answer, outcome.message_id, outcome.error
    )
    return {**data, "usage": plan_usage(plan).json()}
