"""Running one domain tool call for an agent: cancel check, approval gate, tool executor.

Permission is the tool executor's job (it re-reads the agent row and records denials); this
adds what only the agent core knows: whether the plan was cancelled, and — for a destructive
tool the agent is allowed to use — what the approval gate says.
"""

from __future__ import annotations

from uuid import UUID

from shared.agents.approvals import ToolApproval
from shared.agents.errors import AwaitingApproval, PlanCancelled
from shared.agents.model_calls import AgentRun
from shared.db import plans
from shared.db.records import AgentThread
from shared.llm import ToolCall
from shared.tools import CallContext, ToolResult, TurnCache, decide
from shared.tools import ToolCall as ExecutorCall
from shared.tools.results import failure


async def run_tool(
    run: AgentRun,
    call: ToolCall,
    *,
    turn: TurnCache,
    thread: AgentThread | None = None,
    step_id: UUID | None = None,
) -> ToolResult:
    """The result of `call` for the acting agent (never raises for a tool's own failure)."""
    async with run.services.db.service() as conn:
        plan = await plans.get_plan(conn, plan_id=run.plan.id)
    if plan is None or plan.cancel_requested_at is not None:
        raise PlanCancelled()
    refused = await _gate(run, call, step_id)
    if refused is not None:
        return refused
    context = CallContext(
        agent_id=run.agent.id,
        user_id=run.plan.user_id,
        thread=thread,
        plan_id=run.plan.id,
        execution_id=run.execution.id,
    )
    return await run.services.tool_executor.execute(
        ExecutorCall(call.id, call.name, call.arguments_json), context=context, turn=turn
    )


async def _gate(run: AgentRun, call: ToolCall, step_id: UUID | None) -> ToolResult | None:
    tool = run.services.tools.get(call.name)
    if tool is None or not tool.destructive or not decide(run.agent, tool).allowed:
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
        reason = verdict.text or "the user did not approve this action"
        return failure(call.id, call.name, "permission_denied", f"Not approved: {reason}")
    raise AwaitingApproval(f"Waiting for the user to approve {call.name}.")
