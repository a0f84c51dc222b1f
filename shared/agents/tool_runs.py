"""Running one domain tool call for an agent: cancel check, approval gate, tool executor.

The checks decide on what the statement that stored the call returned (`State`): the plan's
control state (a cancel request stops the agent here) and the agent's row as it was read then
— permission is decided on that row at call time (`ToolExecutor.execute_checked`), and the
check's record (the call counted on the execution, a denial logged as a `permission_denied`
dialogue row with its events) goes into the statement that stores the result
(`record_result`), where a write's receipt stops holding a copy of the result the row
holds. For a destructive tool the agent is allowed to use, the approval gate is
asked first; a call the user rejected is recorded as a denial too (docs/events.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from pydantic import JsonValue

from shared.agents.accounting import check_cancel, read_control
from shared.agents.approval_gate import ToolApproval
from shared.agents.errors import AwaitingApproval
from shared.agents.event_data import add_dialogue
from shared.agents.model_calls import AgentRun
from shared.db import Database, agents
from shared.db.records import Agent, AgentThread, DialogueEntry
from shared.db.transitions import Control, Transition
from shared.llm import ToolCall
from shared.observability import tracing
from shared.tools import CallContext, ToolResult, TurnCache, decide
from shared.tools import ToolCall as ExecutorCall
from shared.tools.executor import Checked
from shared.tools.results import failure


@dataclass(frozen=True, slots=True)
class State:
    """What the statement before a tool call returned: the plan's control state and the
    calling agent's row (None for either: read it now)."""

    control: Control | None
    agent: Agent | None


async def run_tool(
    run: AgentRun,
    call: ToolCall,
    *,
    turn: TurnCache,
    state: State,
    thread: AgentThread | None = None,
    step_id: UUID | None = None,
) -> Checked:
    """The result of `call` for the acting agent (never raises for a tool's own failure),
    to record with `record_result`: the permission check's, or the approval gate's denial.
    With tracing on, the call is an `execute_tool <name>` span (its arguments and result are
    not recorded: they hold the user's data)."""
    check_cancel(state.control or await read_control(run.services.db, run.plan.id))
    if not tracing.enabled():
        return await _run(run, call, state=state, turn=turn, thread=thread, step_id=step_id)
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.name,
        "gen_ai.tool.call.id": call.id,
        "gen_ai.tool.type": "function",
        "gen_ai.agent.name": run.agent.role,
        "gen_ai.agent.id": str(run.agent.id),
        "parley.plan.id": str(run.plan.id),
    }
    with tracing.span(
        f"execute_tool {call.name}", attributes=attributes, expected=(AwaitingApproval,)
    ) as span:
        outcome = await _run(run, call, state=state, turn=turn, thread=thread, step_id=step_id)
        if outcome.result.error is not None:
            span.set_attribute("error.type", outcome.result.error)  # the tool's answer says why
    return outcome


async def _run(
    run: AgentRun,
    call: ToolCall,
    *,
    state: State,
    turn: TurnCache,
    thread: AgentThread | None,
    step_id: UUID | None,
) -> Checked:
    agent = state.agent or await _read_agent(run.services.db, run.agent.id)
    refused = await _gate(run, agent, call, step_id)
    if refused is not None:  # a destructive call the user did not approve: a denial
        return refused
    context = CallContext(
        agent_id=run.agent.id,
        user_id=run.plan.user_id,
        thread=thread,
        plan_id=run.plan.id,
        execution_id=run.execution.id,
    )
    return await run.services.tool_executor.execute_checked(
        ExecutorCall(call.id, call.name, call.arguments_json),
        agent=agent,
        context=context,
        turn=turn,
    )


def record_result(
    transition: Transition,
    run: AgentRun,
    call: ToolCall,
    outcome: Checked | ToolResult,
    *,
    thread: AgentThread | None,
    step_id: UUID | None,
) -> ToolResult:
    """Add the check's record to `transition` — the call counted on the execution; a denial
    as its `permission_denied` dialogue row and events — and return the result to store."""
    if isinstance(outcome, ToolResult):
        return outcome  # a result no check produced: nothing to count
    transition.account(run.execution.id, tool_calls=1, denials=int(outcome.denial is not None))
    if outcome.denial is not None:
        _record_denial(transition, run, call, outcome, thread=thread, step_id=step_id)
    result = outcome.result
    tool = run.services.tools.get(call.name)
    if tool is not None and tool.access != "read" and result.repeat_of is None:
        transition.result_stored(call.id, result.payload)  # its receipt names the row
    return result


def _record_denial(
    transition: Transition,
    run: AgentRun,
    call: ToolCall,
    checked: Checked,
    *,
    thread: AgentThread | None,
    step_id: UUID | None,
) -> None:
    """The denial's dialogue row — in the call's thread, else on the plan — and its events:
    a step's denial is an `agent_message` too; both are a `permission_denied` event."""
    reason = checked.denial or ""
    thread_id = thread.id if thread is not None else None
    said = DialogueEntry(
        "permission_denied",
        reason,
        checked.agent_id,
        None,
        call.name,
        call.id,
        tool_args=checked.arguments,
    )
    row_id = add_dialogue(
        transition,
        said,
        thread_id=thread_id,
        step_id=step_id,
        event_agent_id=run.agent.id,
        announce=thread is not None,
    )
    data: dict[str, JsonValue] = {
        "tool_name": call.name,
        "tool_call_id": call.id,
        "reason": reason,
        "message_id": str(row_id),
        "step_id": str(step_id) if step_id else None,
    }
    transition.event("permission_denied", data, agent_id=run.agent.id)


async def _read_agent(db: Database, agent_id: UUID) -> Agent | None:
    async with db.autocommit() as conn:
        return await agents.get_agent(conn, agent_id=agent_id)


async def _gate(
    run: AgentRun, agent: Agent | None, call: ToolCall, step_id: UUID | None
) -> Checked | None:
    tool = run.services.tools.get(call.name)
    if tool is None or not tool.destructive or not decide(agent, tool).allowed:
        return None  # not destructive, or the executor will refuse it anyway
    request = ToolApproval(
        plan_id=run.plan.id,
        step_id=step_id,
        agent_id=run.agent.id,
        tool_call_id=call.id,
        tool_name=call.name,
        arguments=call.arguments,
    )
    verdict = await run.services.approvals.review_tool_call(request)
    if verdict.decision == "allow":
        return None
    if verdict.decision == "deny":
        reason = f"Not approved: {verdict.text or 'the user did not approve this action'}"
        return Checked(
            failure(call.id, call.name, "permission_denied", reason),
            reason,
            dict(call.arguments),
            agent.id if agent else None,
        )
    raise AwaitingApproval(f"Waiting for the user to approve {call.name}.")
