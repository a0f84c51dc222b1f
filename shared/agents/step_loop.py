"""A step's agent at work: a tool loop over its thread that ends with a structured call.

Each turn: rebuild the conversation from the thread, check the limits, call the model with the
prompt fitted to the agent's budget, store the turn (every call as a row before anything runs,
the model's usage on the turn's first row), then answer each call — domain tools through the
tool executor, `ask_planner` through the planner, `escalate` through the approval gate — and
store each result. A turn that is a single `complete` / `fail` / `escalate` ends the step; an
ending call beside other calls is answered "call it alone, after your results" (the agent has
not seen those results yet). Text alone is answered with a reminder on the next turn.

Limits close the thread as `timeout`: the turn count (`max_turns` on the thread) and the wall
clock (`EXECUTOR_TIMEOUT_SECONDS` from the execution's start, also bounding a call in flight).
Because every step is stored first, a re-run of the same attempt resumes exactly here.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Literal

from shared.agents import control_tools as control
from shared.agents.accounting import account_call, emit_usage
from shared.agents.approvals import Escalation
from shared.agents.budget import clip
from shared.agents.errors import AwaitingApproval
from shared.agents.events import emit_agent_message
from shared.agents.history import ThreadView, Turn, stored_arguments, thread_view
from shared.agents.model_calls import AgentRun, build_request, call_model
from shared.agents.prompts import with_date
from shared.agents.questions import answer_question
from shared.agents.tool_runs import run_tool
from shared.db import dialogue
from shared.db.records import AgentMessage, AgentMessageType, AgentThread, PlanStep
from shared.llm import Completion, ToolCall, ToolSchema
from shared.tools import ToolResult, TurnCache

PARTIAL_RESULTS = 3
"""A timed-out step reports its last few tool results (each within a share of its budget)."""
INCOMPLETE = (
    "(Note: to fit its context budget, this step's agent did not see everything it read — "
    "{what}. It was told how to fetch the rest; this result may be incomplete.)"
)
ALONE = "Not done: call {name} alone, after you have seen the results of your other calls."

EndingKind = Literal["complete", "fail", "timeout", "cancel"]


@dataclass(frozen=True, slots=True)
class Ending:
    """How a step's thread ends, and the text that goes with it."""

    kind: EndingKind
    text: str
    detail: str | None = None
    """For a timeout: which limit was hit."""


@dataclass(slots=True)
class StepWorker:
    """One step's agent, working in its thread."""

    run: AgentRun
    step: PlanStep
    thread: AgentThread
    system_prompt: str
    tools: list[ToolSchema]
    can_ask: bool
    deadline: datetime
    cache: TurnCache = field(default_factory=TurnCache)
    left_out: dict[str, None] = field(default_factory=dict)
    """What the agent's prompts left out to fit its budget (ordered, without repeats)."""

    async def work(self) -> Ending:
        """Run turns until the agent ends the step or a limit does; a result built while
        parts of the agent's data were left out of its prompt says so."""
        ending = await self._work()
        if self.left_out and ending.kind in ("complete", "timeout"):
            note = INCOMPLETE.format(what="; ".join(self.left_out))
            ending = replace(ending, text=f"{ending.text}\n\n{note}")
        return ending

    async def _work(self) -> Ending:
        while True:
            view = await self._view()
            last = view.last
            if last is not None and last.unanswered:
                if (ending := await self._answer(last)) is not None:
                    return ending
                continue
            if (ending := self._limits(view)) is not None:
                return ending
            if (ending := await self._take_turn(view)) is not None:
                return ending

    async def _view(self) -> ThreadView:
        async with self.run.services.db.service() as conn:
            rows = await dialogue.list_thread_messages(conn, thread_id=self.thread.id)
            thread = await dialogue.get_thread(conn, thread_id=self.thread.id)
        if thread is not None:
            self.thread = thread
        return thread_view(rows, agent_id=self.run.agent.id)

    def _limits(self, view: ThreadView) -> Ending | None:
        if self.thread.turn_count >= self.thread.max_turns:
            return self.timeout(view, f"reached its limit of {self.thread.max_turns} turns")
        if datetime.now(UTC) >= self.deadline:
            return self.timeout(view, "ran out of time")
        return None

    def timeout(self, view: ThreadView, why: str) -> Ending:
        """A timeout whose text is the partial result: the last results the agent had seen,
        saying what of them is left out."""
        results = view.tool_results()
        shown = results[-PARTIAL_RESULTS:]
        share = max(self.run.budget // (2 * PARTIAL_RESULTS), 40)
        how = "ask the user to retry with a narrower request for the rest"
        found = [clip(self.run.services.tokens, text, share, how=how) for text in shown]
        head = f"Partial result (the step {why} before completing)"
        if not found:
            return Ending("timeout", f"{head}: nothing yet.", why)
        if len(results) > len(shown):
            head += (f"; the last {len(shown)} of the {len(results)} tool results it saw, the "
                     f"first {len(results) - len(shown)} left out")  # fmt: skip
        return Ending("timeout", f"{head}:\n" + "\n".join(found), why)

    async def _take_turn(self, view: ThreadView) -> Ending | None:
        request, fitted = build_request(
            self.run, system=with_date(self.system_prompt), segments=view.segments(),
            tools=self.tools, tool_choice="required",
        )  # fmt: skip
        self.left_out.update(dict.fromkeys(fitted.left_out))
        remaining = (self.deadline - datetime.now(UTC)).total_seconds()
        try:
            async with asyncio.timeout(max(remaining, 0.001)):
                completion = await call_model(self.run, request, stream_text=False)
        except TimeoutError:
            return self.timeout(view, "ran out of time")
        await self._store_turn(completion)
        return None

    async def _store_turn(self, completion: Completion) -> None:
        text = completion.text.strip()
        calls = completion.tool_calls
        single_ending = len(calls) == 1 and calls[0].name in control.ENDINGS
        said: list[tuple[AgentMessageType, str, ToolCall | None]] = []
        if text or not calls:
            said.append(("status", text, None))
        said += [(self._kind(call, single_ending), _call_text(call), call) for call in calls]
        rows: list[AgentMessage] = []
        async with self.run.services.db.service() as conn:
            for index, (kind, content, call) in enumerate(said):
                first = index == 0  # the turn's first row carries the call's accounting
                rows.append(await dialogue.add_agent_message(
                    conn, thread=self.thread, message_type=kind, content=content,
                    sender_agent_id=self.run.agent.id,
                    receiver_agent_id=self.thread.parent_agent_id,
                    tool_name=call.name if call else None, tool_call_id=call.id if call else None,
                    tool_args=stored_arguments(call) if call else None,
                    model=completion.model if first else None,
                    usage=completion.usage if first else None,
                    reasoning_content=completion.message.reasoning_content if first else None,
                ))  # fmt: skip
            await dialogue.count_turn(conn, thread_id=self.thread.id)
            await account_call(
                conn, plan=self.run.plan, execution_id=self.run.execution.id,
                usage=completion.usage,
            )  # fmt: skip
        for row in rows:
            await self._announce(row)
        await emit_usage(
            self.run.emitter, plan_id=self.run.plan.id, agent_id=self.run.agent.id,
            model=completion.model, usage=completion.usage, db=self.run.services.db,
        )  # fmt: skip

    def _kind(self, call: ToolCall, single_ending: bool) -> AgentMessageType:
        if single_ending:
            return _ENDING_TYPES[call.name]
        if call.name == control.ASK_PLANNER and self.can_ask:
            return "question"
        return "tool_call"

    async def _answer(self, turn: Turn) -> Ending | None:
        for call in turn.unanswered:
            kind = turn.kinds.get(call.id)
            if kind in ("completion", "error", "escalation"):
                ending = await self._ending(call, kind)
                if ending is not None:
                    return ending
            elif kind == "question":
                await self._question(call)
            elif call.name in control.ENDINGS:
                await self._store_result(call, ALONE.format(name=call.name), None)
            else:
                result = await run_tool(
                    self.run, call, turn=self.cache, thread=self.thread, step_id=self.step.id
                )
                await self._store_result(call, result.content(), result)
        return None

    async def _ending(self, call: ToolCall, kind: str) -> Ending | None:
        parsed = control.parse_control(call.name, call.arguments)
        if isinstance(parsed, str):
            await self._store_result(call, parsed, None)
            return None
        if kind == "completion":
            return Ending("complete", parsed.text)
        if kind == "error":
            return Ending("fail", parsed.text)
        verdict = await self.run.services.approvals.review_escalation(
            Escalation(self.run.plan.id, self.step.id, self.run.agent.id, call.id, parsed.text)
        )
        if verdict.decision == "answer":
            await self._store_answer(call, verdict.text)
            return None
        if verdict.decision == "wait":
            raise AwaitingApproval(f"Waiting for the user to answer: {parsed.text}")
        declined = f" The user declined: {verdict.text}" if verdict.text else ""
        return Ending("fail", f"Escalated to the user: {parsed.text}{declined}")

    async def _question(self, call: ToolCall) -> None:
        parsed = control.parse_control(call.name, call.arguments)
        if isinstance(parsed, str):
            await self._store_result(call, parsed, None)
            return
        await answer_question(
            self.run, step=self.step, thread=self.thread, call=call, question=parsed.text
        )

    async def _store_result(self, call: ToolCall, content: str, result: ToolResult | None) -> None:
        async with self.run.services.db.service() as conn:
            row = await dialogue.add_agent_message(
                conn, thread=self.thread, message_type="tool_result", content=content,
                receiver_agent_id=self.run.agent.id, tool_name=call.name, tool_call_id=call.id,
                tool_result=result.payload if result is not None else {"note": content},
            )  # fmt: skip
            denial = None
            if result is not None and result.error == "permission_denied":
                denial = await dialogue.find_tool_message(
                    conn, thread_id=self.thread.id, tool_call_id=call.id,
                    message_type="permission_denied",
                )  # fmt: skip
        if denial is not None:
            await self._announce(denial)
            await self.run.emitter.emit(
                "permission_denied",
                {"tool_name": call.name, "tool_call_id": call.id, "reason": denial.content,
                 "message_id": str(denial.id), "step_id": str(self.step.id)},
                plan_id=self.run.plan.id, agent_id=self.run.agent.id,
            )  # fmt: skip
        await self._announce(row)

    async def _store_answer(self, call: ToolCall, content: str) -> None:
        async with self.run.services.db.service() as conn:
            row = await dialogue.add_agent_message(
                conn, thread=self.thread, message_type="answer", content=content,
                receiver_agent_id=self.run.agent.id, tool_name=call.name, tool_call_id=call.id,
            )  # fmt: skip
        await self._announce(row)

    async def _announce(self, row: AgentMessage) -> None:
        await emit_agent_message(self.run.emitter, row, plan_id=self.run.plan.id,
                                 step_id=self.step.id)  # fmt: skip


_ENDING_TYPES: dict[str, AgentMessageType] = {
    control.COMPLETE: "completion",
    control.FAIL: "error",
    control.ESCALATE: "escalation",
}


def _call_text(call: ToolCall) -> str:
    """A control call's text (result, reason or question) as the row's content."""
    if call.name not in control.CONTROL_NAMES:
        return ""
    values = (call.arguments.get(key) for key in ("result", "reason", "question"))
    return next((value for value in values if isinstance(value, str)), "")
