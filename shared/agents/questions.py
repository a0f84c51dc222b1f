"""The planner answering an executor's `ask_planner` question, with the plan in view.

The answer is a planner model call (the planner's model, budget and plan-level execution pay
for it) that sees the user's request, the plan's goal, every step with its status and result
so far, the asking step, and the question. It is stored as the `answer` row for the question's
call, so the executor's history pairs them like any tool call and result.
"""

from __future__ import annotations

from shared.agents import prompts
from shared.agents.accounting import account_call, emit_usage
from shared.agents.budget import Segment, clip
from shared.agents.events import emit_agent_message
from shared.agents.model_calls import AgentRun, build_request, call_model
from shared.db import agents, chats, dialogue, executions, plans
from shared.db.records import AgentMessage, AgentThread, PlanStep
from shared.errors import NotFound
from shared.llm import ToolCall, UserMessage

RESULTS_SHARE = 2
"""The step results shown with a question may fill 1/2 of the planner's budget."""


async def answer_question(
    asking: AgentRun, *, step: PlanStep, thread: AgentThread, call: ToolCall, question: str
) -> AgentMessage:
    """Ask the planner; store and announce its answer (the result of `call`)."""
    planner = await _planner_run(asking)
    context = await _plan_context(planner, step)
    request, _ = build_request(
        planner,
        system=prompts.with_date(prompts.ANSWER),
        segments=[Segment((UserMessage(f"{context}\n\nThe executor asks: {question}"),), True)],
    )
    completion = await call_model(planner, request, stream_text=False)
    answer = completion.text.strip() or "I have no more to add: use your best judgement."
    async with planner.services.db.service() as conn:
        row = await dialogue.add_agent_message(
            conn, thread=thread, message_type="answer", content=answer,
            sender_agent_id=planner.agent.id, receiver_agent_id=asking.agent.id,
            tool_name=call.name, tool_call_id=call.id, model=completion.model,
            usage=completion.usage, reasoning_content=completion.message.reasoning_content,
        )  # fmt: skip
        await account_call(
            conn, plan=planner.plan, execution_id=planner.execution.id, usage=completion.usage
        )
    await emit_agent_message(asking.emitter, row, plan_id=asking.plan.id, step_id=step.id)
    await emit_usage(
        asking.emitter, plan_id=planner.plan.id, agent_id=planner.agent.id,
        model=completion.model, usage=completion.usage, db=planner.services.db,
    )  # fmt: skip
    return row


async def _planner_run(asking: AgentRun) -> AgentRun:
    plan = asking.plan
    async with asking.services.db.service() as conn:
        planner = await agents.get_agent(conn, agent_id=plan.planner_agent_id)
        if planner is None:
            raise NotFound(f"the planner of plan {plan.id} is gone")
        execution = await executions.start_planner_execution(
            conn, user_id=plan.user_id, session_id=plan.session_id, plan_id=plan.id,
            agent_id=planner.id, model=planner.model,
        )  # fmt: skip
    return AgentRun(asking.services, asking.emitter, plan, planner, execution)


async def _plan_context(planner: AgentRun, asking: PlanStep) -> str:
    async with planner.services.db.service() as conn:
        request = await chats.get_message(conn, message_id=planner.plan.user_message_id)
        steps = await plans.list_steps(conn, plan_id=planner.plan.id)
    lines = [
        f"The user's request: {request.content if request else '(unknown)'}",
        f"Goal of the plan: {planner.plan.goal or '(none)'}",
        "Steps:",
    ]
    share = max(planner.budget // RESULTS_SHARE // max(len(steps), 1), 40)
    how = "answer from what is shown, or say what is missing"
    for step in steps:
        outcome = clip(planner.services.tokens, step.result or step.error or "", share, how=how)
        lines.append(f"{step.step_number}. [{step.status}] {step.description}"
                     + (f" — {outcome}" if outcome else ""))  # fmt: skip
    lines.append(f"The question comes from the executor working on step {asking.step_number}.")
    return "\n".join(lines)
