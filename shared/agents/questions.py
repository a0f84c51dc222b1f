"""The planner answering an executor's `ask_planner` question, with the plan in view.

The answer is a planner model call (the planner's model, budget and plan-level execution pay
for it) that sees the user's request, the plan's goal, every step with its status and result
so far, the asking step, and the question. It is stored as the `answer` row for the question's
call, so the executor's history pairs them like any tool call and result. One statement reads
what the planner needs (`planner_runs.planner_view`); the asking step writes the transition
returned here, which stores the answer with its usage and events.
"""

from __future__ import annotations

from shared.agents import prompts
from shared.agents.accounting import account_call
from shared.agents.budget import Segment, clip
from shared.agents.event_data import add_dialogue
from shared.agents.model_calls import AgentRun, build_request, call_model
from shared.db.planner_runs import PlannerView, planner_view
from shared.db.records import AgentThread, DialogueEntry, PlanStep
from shared.db.transitions import Control, Transition
from shared.kernel.errors import NotFound
from shared.llm import ToolCall, UserMessage

RESULTS_SHARE = 2
"""The step results shown with a question may fill 1/2 of the planner's budget."""


async def answer_question(
    asking: AgentRun, *, step: PlanStep, thread: AgentThread, call: ToolCall, question: str
) -> Transition:
    """Ask the planner; the transition that stores and announces its answer (the result of
    `call`), for the asking step to write."""
    async with asking.services.db.autocommit() as conn:
        view = await planner_view(conn, plan_id=asking.plan.id)
    if view is None:
        raise NotFound(f"the planner of plan {asking.plan.id} is gone")
    planner = AgentRun(asking.services, asking.emitter, view.plan, view.planner, view.execution)
    context = _plan_context(planner, view, step)
    request, _ = build_request(
        planner,
        system=prompts.with_date(prompts.ANSWER),
        segments=[Segment((UserMessage(f"{context}\n\nThe executor asks: {question}"),), True)],
    )
    completion = await call_model(
        planner, request, stream_text=False, control=Control.of(view.plan)
    )
    answer = completion.text.strip() or "I have no more to add: use your best judgement."
    plan = view.plan
    transition = Transition(plan.session_id, plan.user_id, plan.id, asking.emitter.outbox())
    said = DialogueEntry(
        "answer",
        answer,
        view.planner.id,
        asking.agent.id,
        call.name,
        call.id,
        model=completion.model,
        reasoning_content=completion.message.reasoning_content,
    )
    add_dialogue(
        transition, said, thread_id=thread.id, step_id=step.id, event_agent_id=view.planner.id
    )
    account_call(
        transition, execution_id=view.execution.id, completion=completion, agent_id=view.planner.id
    )
    transition.read_agent(asking.agent.id)  # the asking agent's next tool call decides on it
    return transition


def _plan_context(planner: AgentRun, view: PlannerView, asking: PlanStep) -> str:
    lines = [
        f"The user's request: {view.request or '(unknown)'}",
        f"Goal of the plan: {view.plan.goal or '(none)'}",
        "Steps:",
    ]
    share = max(planner.budget // RESULTS_SHARE // max(len(view.steps), 1), 40)
    how = "answer from what is shown, or say what is missing"
    for step in view.steps:
        outcome = clip(planner.services.tokens, step.result or step.error or "", share, how=how)
        lines.append(
            f"{step.step_number}. [{step.status}] {step.description}"
            + (f" — {outcome}" if outcome else "")
        )
    lines.append(f"The question comes from the executor working on step {asking.step_number}.")
    return "\n".join(lines)
