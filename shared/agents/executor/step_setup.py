"""Opening one step attempt: its agent, thread, delegation and execution — exactly once.

One statement claims the step (`step_claims.claim_step`): it takes the step's run lease and
reads everything working on it needs. While another invocation holds the lease, opening
answers `StepBusy` and nothing is done. An attempt that started already (a redelivery, a
resumed plan) is worked on in its thread, from its stored rows. A new attempt is opened by one
more statement: its agent, the step `running`, its execution holding its thread (one row:
`agent_chat_sessions` shows the threads the runs hold) and the delegation,
with the `step_started` and `agent_message` events — keyed on the `agent_executions` unique
(step_id, attempt), so a second run of the same attempt cannot open it twice.

* Executor steps get a fresh executor `agents` row: `read_only`, the executor model, the
  executor budget, and `allowed_tools` = the read tools the plan named for the step.
* Planner steps (writes) are worked by the session's planner itself, in a thread whose parent
  and child are both the planner, accounted on an execution with `agent_role = planner`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING
from uuid import UUID

from shared.agents import prompts
from shared.agents.budget import clip
from shared.agents.event_data import dialogue_data, session_outbox, step_started_data
from shared.agents.lease_holder import Lease, give_back, new_owner
from shared.db import plans
from shared.db.database import Connection
from shared.db.records import (
    Agent,
    AgentMessage,
    AgentThread,
    DialogueEntry,
    Execution,
    Plan,
    PlanStep,
)
from shared.db.step_claims import ClaimedStep, claim_step
from shared.db.transitions import Control, Transition, Written
from shared.events import Event
from shared.kernel.errors import InvalidInput, NotFound
from shared.observability import tracing

if TYPE_CHECKING:
    from shared.agents.ports import AgentServices

DELEGATION_SHARE = 4
"""A delegation may fill 1/4 of the agent's budget; longer dependency results are cut to fit,
saying how much is left out (the planner has them whole: an executor can ask)."""
FINISHED = frozenset({"completed", "failed", "skipped", "cancelled"})


@dataclass(frozen=True, slots=True)
class OpenedStep:
    """A step attempt ready to work on, with its thread as stored."""

    plan: Plan
    step: PlanStep
    agent: Agent
    thread: AgentThread
    execution: Execution
    messages: list[AgentMessage]
    """The thread's rows so far (the delegation first)."""
    lease: Lease
    """The step's run lease, held by this invocation."""
    clock_from: datetime
    """Where the step's wall-clock limit counts from: its start, or the user's last decision
    for it (time spent waiting for the user does not count)."""
    control: Control
    """The plan's state as the opening statement found it."""
    events: list[Event]
    """The events the opening statement sent (a new attempt's `step_started`, delegation)."""


@dataclass(frozen=True, slots=True)
class StepBusy:
    """Another invocation holds the step's lease (it is being worked on): nothing was done."""

    step: PlanStep


async def open_step(
    services: AgentServices, *, step_id: UUID, attempt: int, executor_only: bool = False
) -> OpenedStep | PlanStep | StepBusy:
    """The opened attempt; the step itself when there is nothing to do (it has finished, or
    its plan was cancelled — then it is closed as `cancelled` here); or `StepBusy`.
    `executor_only`: a planner's own step is refused (`InvalidInput`) before anything."""
    if attempt < 1:
        raise InvalidInput("attempt must be 1 or more")
    lease = Lease("agent_plan_steps", step_id, new_owner(), services.settings.run_lease_seconds)
    async with services.db.autocommit() as conn:
        claimed = await claim_step(
            conn,
            step_id=step_id,
            attempt=attempt,
            owner=lease.owner,
            seconds=lease.seconds,
            executor_only=executor_only,
        )
    if claimed is None:
        raise NotFound(f"Plan step {step_id} not found")
    step = claimed.step
    if executor_only and not step.executor_required:
        raise InvalidInput(f"step {step.step_number} is the planner's own step, not an executor's")
    if step.status in FINISHED:
        return step
    if not claimed.leased:
        return StepBusy(step)
    try:
        async with services.db.autocommit() as conn:
            if claimed.plan.cancel_requested_at is not None:
                return await plans.update_step(
                    conn, step_id=step.id, status="cancelled", error="the request was cancelled"
                )
            if claimed.execution is not None and claimed.thread is not None:
                return await _reopen(conn, claimed, lease)
            return await _open(conn, services, claimed, attempt, lease)
    except BaseException:
        await asyncio.shield(give_back(services.db, lease))  # as leaving `holding` would
        raise


async def _reopen(conn: Connection, claimed: ClaimedStep, lease: Lease) -> OpenedStep:
    execution, agent, thread = claimed.execution, claimed.agent, claimed.thread
    if execution is None or agent is None or thread is None:
        raise NotFound(f"the agent or thread of step {claimed.step.id} is gone")
    step = claimed.step
    if step.status == "awaiting_approval":
        step = await plans.update_step(conn, step_id=step.id, status="running")
    started = execution.started_at or execution.created_at
    decided = claimed.decided_at
    clock_from = max(started, decided) if decided is not None else started
    return OpenedStep(
        claimed.plan,
        step,
        agent,
        thread,
        execution,
        claimed.messages,
        lease,
        clock_from,
        Control.of(claimed.plan),
        [],
    )


async def _open(
    conn: Connection, services: AgentServices, claimed: ClaimedStep, attempt: int, lease: Lease
) -> OpenedStep:
    plan, step = claimed.plan, claimed.step
    transition = Transition(
        plan.session_id, plan.user_id, plan.id, session_outbox(services, plan.session_id)
    )
    agent_id, model, budget = _agent_for(transition, services, claimed)
    role = "executor" if step.executor_required else "planner"
    execution_id = transition.new_execution(
        agent_id=agent_id,
        agent_role=role,
        model=model,
        step_id=step.id,
        attempt=attempt,
        max_turns=services.settings.executor_max_turns,
        trace_id=tracing.trace_id(),
    )
    thread_id = execution_id  # the run holds the step attempt's thread
    transition.set_step(step.id, status="running", assigned_agent_id=agent_id)
    started = step_started_data(
        step, thread_id=thread_id, execution_id=execution_id, attempt=attempt, model=model
    )
    transition.event("step_started", started, agent_id=agent_id)
    opening, rest = _delegation(services, claimed, budget=budget)
    delegation = DialogueEntry("delegation", opening + rest, plan.planner_agent_id, agent_id)
    slot = transition.delegate(rest or None)  # held by the run; the rows hold the opening
    data = dialogue_data(execution_id, delegation, thread_id=thread_id, step_id=step.id)
    transition.event("agent_message", data, agent_id=plan.planner_agent_id, row=slot)
    written = await transition.run(conn)
    said = [_delegation_row(written, delegation, thread_id)]
    agent = written.agent or claimed.planner
    assert written.thread is not None and written.execution is not None and written.step
    execution = written.execution
    return OpenedStep(
        written.plan,
        written.step,
        agent,
        written.thread,
        execution,
        said,
        lease,
        execution.started_at or execution.created_at,
        written.control,
        written.events,
    )


def _delegation_row(written: Written, said: DialogueEntry, thread_id: UUID) -> AgentMessage:
    """The delegation the opening statement stored (held by the run: `db.delegations`), as a
    row of its thread — numbered as its event."""
    execution = written.execution
    assert execution is not None
    (event,) = [
        e
        for e in written.events
        if e.type == "agent_message" and e.data.get("message_id") == str(execution.id)
    ]
    return AgentMessage(
        id=execution.id,
        agent_session_id=thread_id,
        plan_id=execution.plan_id,
        session_id=written.plan.session_id,
        user_id=execution.user_id,
        seq=event.seq,
        sender_agent_id=said.sender_agent_id,
        receiver_agent_id=said.receiver_agent_id,
        message_type="delegation",
        content=said.content,
        tool_name=None,
        tool_call_id=None,
        tool_args=None,
        model=None,
        reasoning_content=None,
        created_at=execution.created_at,
    )


def _agent_for(
    transition: Transition, services: AgentServices, claimed: ClaimedStep
) -> tuple[UUID, str, int]:
    """The step's agent, model and budget: a new executor row, or the planner for its own
    steps."""
    plan, step, planner = claimed.plan, claimed.step, claimed.planner
    if not step.executor_required:
        return planner.id, planner.model, planner.token_budget
    model, budget = services.settings.llm_executor_model, services.executor_budget
    reads = [name for name in step.tools if _is_read(services, name)]
    agent_id = transition.new_agent(
        chat_session_id=plan.session_id,
        name=f"executor {step.step_number}",
        model=model,
        token_budget=budget,
        allowed_tools=reads or None,
        parent_agent_id=plan.planner_agent_id,
        system_prompt=prompts.EXECUTOR,
    )
    return agent_id, model, budget


def _is_read(services: AgentServices, name: str) -> bool:
    tool = services.tools.get(name)
    return tool is not None and tool.access == "read"


def _delegation(services: AgentServices, claimed: ClaimedStep, *, budget: int) -> tuple[str, str]:
    """The step's task in two parts: its opening (what its step and plan rows say) and the
    rest (its dependencies' results, cut to the agent's budget)."""
    plan, step = claimed.plan, claimed.step
    done = sorted(claimed.dependencies, key=lambda d: step.depends_on.index(d.step_number))
    share = max(budget // DELEGATION_SHARE // max(len(done), 1), 40)
    executor = step.executor_required
    how = "ask_planner for it if you need it" if executor else "it is in the plan"
    results = [
        (s, clip(services.tokens, s.result or s.error or "(no result)", share, how=how))
        for s in done
    ]
    if not plan.goal and claimed.request is not None:
        plan = plan._replace(goal=claimed.request)
    return prompts.delegation_opening(plan, step), prompts.delegation_rest(results)
