"""A step's agent at work: a tool loop over its thread that ends with a structured call.

Each turn: rebuild the conversation from the thread (its rows, read when the step opened and
kept as each statement stores more), check the limits, call the model with the prompt fitted
to the agent's budget, store the turn (every call as a row before anything runs, the model's
usage on the turn's first row), then answer each call — domain tools through the tool
executor, `ask_planner` through the planner, `escalate` through the approval gate — and store
each result. A turn that is a single valid `complete` / `fail` ends the step in the statement
that stores it: the thread, the step, the execution and the agent are closed with it. An
ending call beside other calls is answered "call it alone, after your results" (the agent has
not seen those results yet). Text alone is answered with a reminder on the next turn.

What the agent did not see to fit its budget — a dependency's result shortened in its
delegation, a result cut or earlier turns dropped from a prompt — is noted in the step's
result. It is read from the stored thread, not kept only in memory: a resumed step counts the
calls its earlier runs made (each one's prompt is fitted again from the rows before it, which
gives the same prompt) and the delegation's notes (`budget.clipped`).

Limits close the thread as `timeout`: the turn count (`max_turns` on the thread) and the wall
clock (`EXECUTOR_TIMEOUT_SECONDS` from the execution's start, also bounding a call in flight).
Because every step is stored first, a re-run of the same attempt resumes exactly here.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal
from uuid import UUID

from shared.agents import control_tools as control
from shared.agents.accounting import account_call
from shared.agents.approval_gate import Escalation
from shared.agents.budget import clip, clipped
from shared.agents.errors import AwaitingApproval, PromptTooLarge
from shared.agents.event_data import add_dialogue, answer_in_row, step_completed_data
from shared.agents.history import ThreadView, Turn, stored_arguments, thread_view
from shared.agents.model_calls import AgentRun, build_request, call_model
from shared.agents.outcomes import StepOutcome
from shared.agents.prompts import with_date
from shared.agents.questions import answer_question
from shared.agents.tool_runs import State, record_result, run_tool
from shared.db.records import (
    Agent,
    AgentMessage,
    AgentMessageType,
    AgentThread,
    DialogueEntry,
    ExecutionStatus,
    PlanStep,
    StepStatus,
    ThreadStatus,
)
from shared.db.transitions import Control, Transition, Written
from shared.llm import Completion, ToolCall, ToolSchema
from shared.tools import ToolResult, TurnCache
from shared.tools.executor import Checked

PARTIAL_RESULTS = 3
"""A timed-out step reports its last few tool results (each within a share of its budget)."""
INCOMPLETE = (
    "(Note: to fit its context budget, this step's agent did not see everything it read — "
    "{what}. It was told how to fetch the rest; this result may be incomplete.)"
)
_DEPENDENCY = re.compile(r"^Result of step (\d+) ", re.MULTILINE)
"""A dependency's result in a delegation (`prompts.delegation`)."""
ALONE = "Not done: call {name} alone, after you have seen the results of your other calls."
TEXT_TURNS = 3
"""Turns in a row in text alone (each answered with a reminder) that end the step as failed:
a thinking agent is asked for a call with `tool_choice: auto` (`AgentRun.forced_choice`)."""
NO_CALL = (
    "The model answered in text {turns} times in a row instead of calling a tool, so this step "
    "did not act. Its last words: {text}"
)

EndingKind = Literal["complete", "fail", "timeout", "cancel"]


@dataclass(frozen=True, slots=True)
class Ending:
    """How a step's thread ends, and the text that goes with it."""

    kind: EndingKind
    text: str
    detail: str | None = None
    """For a timeout: which limit was hit."""


_CLOSING: dict[str, tuple[ThreadStatus, StepStatus, ExecutionStatus]] = {
    "complete": ("completed", "completed", "completed"),
    "fail": ("failed", "failed", "failed"),
    "timeout": ("timeout", "completed", "timeout"),
    "cancel": ("abandoned", "cancelled", "cancelled"),
}


@dataclass(slots=True)
class StepWorker:
    """One step's agent, working in its thread."""

    run: AgentRun
    step: PlanStep
    thread: AgentThread
    rows: list[AgentMessage]
    """The thread's rows, as stored (loaded when the step opened, then appended to)."""
    system_prompt: str
    tools: list[ToolSchema]
    can_ask: bool
    deadline: datetime
    control: Control | None
    """The plan's state as the last statement returned it; the next check consumes it."""
    agent: Agent | None = None
    """The agent's row as the last statement read it (the next tool call decides on it)."""
    cache: TurnCache = field(default_factory=TurnCache)
    left_out: dict[str, None] = field(default_factory=dict)
    """What the agent's prompts left out to fit its budget (ordered, without repeats)."""

    async def work(self) -> StepOutcome:
        """Run turns until the agent ends the step or a limit does; the step, closed."""
        self.left_out.update(dict.fromkeys(self.left_out_before()))
        while True:
            view = thread_view(self.rows, agent_id=self.run.agent.id)
            last = view.last
            if last is not None and last.unanswered:
                if (ending := await self._answer(last)) is not None:
                    return await self.close(ending)
                continue
            if (ending := self._limits(view)) is not None:
                return await self.close(ending)
            if (outcome := await self._take_turn(view)) is not None:
                return outcome

    def transition(self) -> Transition:
        plan = self.run.plan
        return Transition(plan.session_id, plan.user_id, plan.id, self.run.emitter.outbox())

    async def write(self, transition: Transition) -> Written:
        """Run `transition`, keep what it stored and returned, deliver its events."""
        async with self.run.services.db.autocommit() as conn:
            written = await transition.run(conn)
        self.rows = stored_rows(self.rows, written.dialogue)
        self.thread = written.thread or self.thread
        self.control, self.agent = written.control, written.agent
        await self.run.emitter.deliver(written.events)
        return written

    async def close(self, ending: Ending) -> StepOutcome:
        """End the step with `ending` (noting what the agent did not see), in one statement."""
        transition = self.transition()
        self._close_into(transition, ending)
        return self._closed(await self.write(transition))

    def _close_into(self, transition: Transition, ending: Ending) -> None:
        """Add the end of the step to `transition`: thread, step, execution (and an
        executor's agent) closed together, and `step_completed`; a complete or timed-out
        step's result notes what the agent did not see.

        A timeout completes the step with its partial result (the plan goes on with it) and
        keeps the limit that was hit as the step's `error`.
        """
        if self.left_out and ending.kind in ("complete", "timeout"):
            note = INCOMPLETE.format(what="; ".join(self.left_out))
            ending = replace(ending, text=f"{ending.text}\n\n{note}")
        step, thread, agent = self.step, self.thread, self.run.agent
        thread_status, step_status, run_status = _CLOSING[ending.kind]
        result = ending.text if ending.kind in ("complete", "timeout") else None
        error = ending.detail if ending.kind == "timeout" else (None if result else ending.text)
        transition.set_thread(thread.id, status=thread_status, error=error)
        transition.set_step(step.id, status=step_status, result=result, error=error)
        transition.account(self.run.execution.id, close=run_status, error=error)
        if agent.role == "executor":
            transition.set_agent_status(
                agent.id, "completed" if step_status == "completed" else "failed"
            )
        closed = step._replace(
            status=step_status, result=result or step.result, error=error or step.error
        )
        transition.event(
            "step_completed", step_completed_data(closed, thread_status), agent_id=agent.id
        )

    def _closed(self, written: Written) -> StepOutcome:
        assert written.step is not None
        self.step = written.step
        return StepOutcome.of(written.step, control=written.control)

    def left_out_before(self) -> list[str]:
        """What the agent has not seen so far, read from its stored thread: the delegation's
        shortened dependency results, and what the prompt of each model call already made
        (by an earlier run of this attempt) left out."""
        found: list[str] = []
        delegation = next((r.content for r in self.rows if r.message_type == "delegation"), "")
        steps = [(m.start(), m.group(1)) for m in _DEPENDENCY.finditer(delegation)]
        for at, left, total in clipped(delegation):
            number = next((n for start, n in reversed(steps) if start < at), None)
            whose = f"step {number}'s result" if number else "an earlier step's result"
            found.append(f"the last {left} of {total} tokens of {whose}, in its task")
        agent_id = self.run.agent.id
        for index, row in enumerate(self.rows):
            if row.model is None or row.sender_agent_id != agent_id:
                continue  # not the first row of one of the agent's turns
            before = thread_view(self.rows[:index], agent_id=agent_id)
            try:
                _, fitted = build_request(
                    self.run,
                    system=with_date(self.system_prompt),
                    segments=before.segments(),
                    tools=self.tools,
                    tool_choice=self.run.forced_choice,
                )
            except PromptTooLarge:  # settings changed since: that call's prompt is unknown
                continue
            found += fitted.left_out
        return found

    def _limits(self, view: ThreadView) -> Ending | None:
        if (said := _text_turns(view)) is not None:
            return Ending("fail", NO_CALL.format(turns=TEXT_TURNS, text=said or "(nothing)"))
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
            head += (
                f"; the last {len(shown)} of the {len(results)} tool results it saw, the "
                f"first {len(results) - len(shown)} left out"
            )
        return Ending("timeout", f"{head}:\n" + "\n".join(found), why)

    def _take_state(self) -> State:
        state = State(self.control, self.agent)
        self.control, self.agent = None, None
        return state

    async def _take_turn(self, view: ThreadView) -> StepOutcome | None:
        request, fitted = build_request(
            self.run,
            system=with_date(self.system_prompt),
            segments=view.segments(),
            tools=self.tools,
            tool_choice=self.run.forced_choice,
        )
        self.left_out.update(dict.fromkeys(fitted.left_out))
        remaining = (self.deadline - datetime.now(UTC)).total_seconds()
        control, self.control = self.control, None
        try:
            async with asyncio.timeout(max(remaining, 0.001)):
                completion = await call_model(self.run, request, stream_text=False, control=control)
        except TimeoutError:
            return await self.close(self.timeout(view, "ran out of time"))
        return await self._store_turn(completion)

    async def _store_turn(self, completion: Completion) -> StepOutcome | None:
        """Store the turn's rows (and end the step with them, when the turn is a single valid
        `complete` or `fail`)."""
        text = completion.text.strip()
        calls = completion.tool_calls
        single_ending = len(calls) == 1 and calls[0].name in control.ENDINGS
        said: list[tuple[AgentMessageType, str, ToolCall | None]] = []
        if text or not calls:
            said.append(("status", text, None))
        said += [(self._kind(call, single_ending), _call_text(call), call) for call in calls]
        transition = self.transition()
        for index, (kind, content, call) in enumerate(said):
            first = index == 0  # the turn's first row carries the call's accounting
            self._agent_row(
                transition,
                message_type=kind,
                content=content,
                sender=self.run.agent.id,
                receiver=self.thread.parent_agent_id,
                call=call,
                tool_args=stored_arguments(call) if call is not None else None,
                model=completion.model if first else None,
                reasoning=completion.message.reasoning_content if first else None,
            )
        transition.set_thread(self.thread.id, turns=1)
        account_call(
            transition,
            execution_id=self.run.execution.id,
            completion=completion,
            agent_id=self.run.agent.id,
        )
        ending = _final(calls[0]) if single_ending else None
        if ending is not None:
            self._close_into(transition, ending)
            return self._closed(await self.write(transition))
        transition.read_agent(self.run.agent.id)  # the calls' permission checks decide on it
        await self.write(transition)
        return None

    def _agent_row(
        self,
        transition: Transition,
        *,
        message_type: AgentMessageType,
        content: str,
        sender: UUID | None,
        receiver: UUID | None,
        call: ToolCall | None,
        tool_args: dict[str, Any] | None = None,
        model: str | None = None,
        reasoning: str | None = None,
    ) -> None:
        """A row of the thread and its `agent_message` event."""
        name, call_id = (call.name, call.id) if call is not None else (None, None)
        said = DialogueEntry(
            message_type, content, sender, receiver, name, call_id, tool_args, model, reasoning
        )
        add_dialogue(
            transition, said, thread_id=self.thread.id, step_id=self.step.id, event_agent_id=sender
        )

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
                await self._store_result(call, ALONE.format(name=call.name))
            else:
                outcome = await run_tool(
                    self.run,
                    call,
                    turn=self.cache,
                    state=self._take_state(),
                    thread=self.thread,
                    step_id=self.step.id,
                )
                await self._store_outcome(call, outcome)
        return None

    async def _ending(self, call: ToolCall, kind: str) -> Ending | None:
        parsed = control.parse_control(call.name, call.arguments)
        if isinstance(parsed, str):
            await self._store_result(call, parsed)
            return None
        # Kept for plans in flight across a deploy: a valid lone complete/fail now closes as stored.
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
            await self._store_result(call, parsed)
            return
        await self.write(
            await answer_question(
                self.run, step=self.step, thread=self.thread, call=call, question=parsed.text
            )
        )

    async def _store_outcome(self, call: ToolCall, outcome: Checked | ToolResult) -> None:
        transition = self.transition()
        result = record_result(
            transition, self.run, call, outcome, thread=self.thread, step_id=self.step.id
        )
        self._result_row(transition, call, result.content())
        await self.write(transition)

    async def _store_result(self, call: ToolCall, content: str) -> None:
        transition = self.transition()
        self._result_row(transition, call, content)
        await self.write(transition)

    def _result_row(self, transition: Transition, call: ToolCall, content: str) -> None:
        """The call's result: stored in the call's own row (one row for both) when that is a
        plain `tool_call` row and the agent's last row — it takes the result's number, so it
        must stay after its turn's first row — else as a row of its own (an earlier call of a
        turn of several, a control call misused)."""
        agent_id = self.run.agent.id
        call_row = _answerable_row(self.rows, agent_id, call)
        if call_row is None:
            self._agent_row(
                transition,
                message_type="tool_result",
                content=content,
                sender=None,
                receiver=agent_id,
                call=call,
            )
        else:
            said = DialogueEntry("tool_result", content, None, agent_id, call.name, call.id)
            answer_in_row(
                transition,
                call_row,
                said,
                thread_id=self.thread.id,
                step_id=self.step.id,
                event_agent_id=None,
            )
        transition.read_agent(agent_id)

    async def _store_answer(self, call: ToolCall, content: str) -> None:
        transition = self.transition()
        self._agent_row(
            transition,
            message_type="answer",
            content=content,
            sender=None,
            receiver=self.run.agent.id,
            call=call,
        )
        transition.read_agent(self.run.agent.id)
        await self.write(transition)


_ENDING_TYPES: dict[str, AgentMessageType] = {
    control.COMPLETE: "completion",
    control.FAIL: "error",
    control.ESCALATE: "escalation",
}


def _final(call: ToolCall) -> Ending | None:
    """The step's end, if `call` (alone in its turn) is a valid `complete` or `fail`."""
    if call.name not in (control.COMPLETE, control.FAIL):
        return None
    parsed = control.parse_control(call.name, call.arguments)
    if isinstance(parsed, str):
        return None  # answered with its problem on the next round
    return Ending("complete" if call.name == control.COMPLETE else "fail", parsed.text)


def _answerable_row(rows: list[AgentMessage], agent_id: UUID, call: ToolCall) -> UUID | None:
    """The row of `call` when its result can be stored in it: a plain `tool_call` row (no
    text of its own: a control call's row holds its text) that is the agent's last row."""
    last: AgentMessage | None = next(
        (r for r in reversed(rows) if r.sender_agent_id == agent_id), None
    )
    if (
        last is None
        or last.tool_call_id != call.id
        or last.message_type != "tool_call"
        or last.content
        or last.tool_args is None
    ):
        return None
    return last.id


def stored_rows(rows: list[AgentMessage], written: list[AgentMessage]) -> list[AgentMessage]:
    """`rows` with what a statement wrote: new rows added, rows it changed (a call answered in
    its row) replaced, in `seq` order."""
    changed = {row.id: row for row in written}
    kept = [changed.pop(row.id, row) for row in rows]
    return sorted(kept + list(changed.values()), key=lambda row: row.seq)


def _text_turns(view: ThreadView) -> str | None:
    """The last words, when the thread's last `TEXT_TURNS` turns were text alone."""
    last = view.turns[-TEXT_TURNS:]
    if len(last) < TEXT_TURNS or any(turn.calls for turn in last):
        return None
    return (last[-1].text or "").strip()[:500]


def _call_text(call: ToolCall) -> str:
    """A control call's text (result, reason or question) as the row's content."""
    if call.name not in control.CONTROL_NAMES:
        return ""
    values = (call.arguments.get(key) for key in ("result", "reason", "question"))
    return next((value for value in values if isinstance(value, str)), "")
