"""Opening one step attempt: its agent, thread, delegation and execution — exactly once.

Everything is created in one transaction holding the step's row lock, keyed on the
`agent_executions` unique (step_id, attempt): a second invocation for the same attempt (a
redelivery, a resumed plan) finds the execution and works on in the thread it links to. The
same transaction takes the step's run lease (`shared.agents.leases`): while another invocation
holds it, opening answers `StepBusy` and nothing is done.

* Executor steps get a fresh executor `agents` row: `read_only`, the executor model, the
  executor budget, and `allowed_tools` = the read tools the plan named for the step.
* Planner steps (writes) are worked by the session's planner itself, in a thread whose parent
  and child are both the planner, accounted on an execution with `agent_role = planner`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING
from uuid import UUID

from shared.agents import prompts
from shared.agents.budget import clip
from shared.agents.leases import Lease, new_owner
from shared.db import agents, approvals, chats, dialogue, executions, plans
from shared.db.database import Connection
from shared.db.records import Agent, AgentMessage, AgentThread, Execution, Plan, PlanStep
from shared.errors import InvalidInput, NotFound

if TYPE_CHECKING:
    from shared.services import Services

DELEGATION_SHARE = 4
"""A delegation may fill 1/4 of the agent's budget; longer dependency results are cut to fit,
saying how much is left out (the planner has them whole: an executor can ask)."""
FINISHED = frozenset({"completed", "failed", "skipped", "cancelled"})


@dataclass(frozen=True, slots=True)
class OpenedStep:
    """A step attempt ready to work on; `delegation` is set when it was opened just now."""

    plan: Plan
    step: PlanStep
    agent: Agent
    thread: AgentThread
    execution: Execution
    delegation: AgentMessage | None
    lease: Lease
    """The step's run lease, held by this invocation."""
    clock_from: datetime
    """Where the step's wall-clock limit counts from: its start, or the user's last decision
    for it (time spent waiting for the user does not count)."""
    started_seq: int | None = None
    """The seq reserved for `step_started`, just before the delegation's (when opened now)."""


@dataclass(frozen=True, slots=True)
class StepBusy:
    """Another invocation holds the step's lease (it is being worked on): nothing was done."""

    step: PlanStep


async def open_step(
    services: Services, *, step_id: UUID, attempt: int
) -> OpenedStep | PlanStep | StepBusy:
    """The opened attempt; the step itself when there is nothing to do (it has finished, or
    its plan was cancelled — then it is closed as `cancelled` here); or `StepBusy`."""
    if attempt < 1:
        raise InvalidInput("attempt must be 1 or more")
    seconds = services.settings.run_lease_seconds
    async with services.db.service() as conn:
        step = await plans.get_step(conn, step_id=step_id, lock=True)
        plan = await plans.get_plan(conn, plan_id=step.plan_id) if step else None
        if step is None or plan is None:
            raise NotFound(f"Plan step {step_id} not found")
        if step.status in FINISHED:
            return step
        lease = Lease("agent_plan_steps", step.id, new_owner(), seconds)
        if not await plans.take_step_lease(conn, step_id=step.id, owner=lease.owner,
                                           seconds=seconds):  # fmt: skip
            return StepBusy(step)
        if plan.cancel_requested_at is not None:
            return await plans.update_step(
                conn, step_id=step.id, status="cancelled", error="the request was cancelled"
            )
        execution = await executions.get_step_execution(conn, step_id=step.id, attempt=attempt)
        if execution is not None and execution.agent_session_id is not None:
            return await _reopen(conn, plan, step, execution, lease)
        return await _open(conn, services, plan, step, attempt, lease)


async def _reopen(
    conn: Connection, plan: Plan, step: PlanStep, execution: Execution, lease: Lease
) -> OpenedStep:
    agent = await agents.get_agent(conn, agent_id=execution.agent_id)
    thread_id = execution.agent_session_id
    thread = await dialogue.get_thread(conn, thread_id=thread_id) if thread_id else None
    if agent is None or thread is None:
        raise NotFound(f"the agent or thread of step {step.id} is gone")
    if step.status == "awaiting_approval":
        step = await plans.update_step(conn, step_id=step.id, status="running")
    started = execution.started_at or execution.created_at
    decided = await approvals.last_decision_at(conn, step_id=step.id)
    clock_from = max(started, decided) if decided is not None else started
    return OpenedStep(plan, step, agent, thread, execution, None, lease, clock_from)


async def _open(
    conn: Connection,
    services: Services,
    plan: Plan,
    step: PlanStep,
    attempt: int,
    lease: Lease,
) -> OpenedStep:
    agent = await _agent_for(conn, services, plan, step)
    step = await plans.update_step(
        conn, step_id=step.id, status="running", assigned_agent_id=agent.id
    )
    execution, _ = await executions.start_execution(
        conn, user_id=plan.user_id, session_id=plan.session_id, plan_id=plan.id,
        agent_id=agent.id, agent_role=agent.role, model=agent.model, step_id=step.id,
        attempt=attempt,
    )  # fmt: skip
    settings = services.settings
    thread = await dialogue.create_thread(
        conn, session_id=plan.session_id, user_id=plan.user_id, plan_id=plan.id,
        parent_agent_id=plan.planner_agent_id, child_agent_id=agent.id,
        max_turns=settings.executor_max_turns, step_id=step.id,
    )  # fmt: skip
    await executions.set_execution_thread(conn, execution_id=execution.id, thread_id=thread.id)
    content = await _delegation(conn, services, plan, step, agent)
    started_seq = await chats.allocate_seq(conn, session_id=plan.session_id)
    message = await dialogue.add_agent_message(
        conn, thread=thread, message_type="delegation", content=content,
        sender_agent_id=plan.planner_agent_id, receiver_agent_id=agent.id,
    )  # fmt: skip
    clock_from = execution.started_at or execution.created_at
    return OpenedStep(plan, step, agent, thread, execution, message, lease, clock_from, started_seq)


async def _agent_for(conn: Connection, services: Services, plan: Plan, step: PlanStep) -> Agent:
    if not step.executor_required:
        planner = await agents.get_agent(conn, agent_id=plan.planner_agent_id)
        if planner is None:
            raise NotFound(f"the planner of plan {plan.id} is gone")
        return planner
    settings = services.settings
    reads = [name for name in step.tools if _is_read(services, name)]
    model = services.models.lookup(settings.llm_executor_model)
    return await agents.create_agent(
        conn, user_id=plan.user_id, chat_session_id=plan.session_id, role="executor",
        name=f"executor {step.step_number}", model=settings.llm_executor_model,
        permissions="read_only",
        token_budget=min(settings.executor_token_budget, model.context_window),
        allowed_tools=reads or None, parent_agent_id=plan.planner_agent_id,
        system_prompt=prompts.EXECUTOR,
    )  # fmt: skip


def _is_read(services: Services, name: str) -> bool:
    tool = services.tools.get(name)
    return tool is not None and tool.access == "read"


async def _delegation(
    conn: Connection, services: Services, plan: Plan, step: PlanStep, agent: Agent
) -> str:
    steps = {s.step_number: s for s in await plans.list_steps(conn, plan_id=plan.id)}
    done = [steps[n] for n in step.depends_on if n in steps]
    share = max(agent.token_budget // DELEGATION_SHARE // max(len(done), 1), 40)
    how = "ask_planner for it if you need it" if agent.role == "executor" else "it is in the plan"
    results = [(s, clip(services.tokens, s.result or s.error or "(no result)", share, how=how))
               for s in done]  # fmt: skip
    if not plan.goal:
        request = await chats.get_message(conn, message_id=plan.user_message_id)
        plan = plan if request is None else replace(plan, goal=request.content)
    return prompts.delegation(plan, step, results)
