"""The planner's loop over its messages (`chat_messages` with the plan's id), read once when
the run opens and kept in memory as each statement stores more:

1. No answer yet and nothing pending → call the model (streamed) with the write tools it can
   use without a lookup and `create_plan` (`routing_tools`: reads are delegated). Text only is
   the answer (strategy `direct` if it is the first call); write calls make the strategy
   `tool`; a valid `create_plan` makes it `complex` and stores the steps with the call (the
   call itself without them: `history.PLAN_STEPS`); an invalid one is answered with its
   problems (bounded retries).
2. Calls without results → run them (the tool executor checks permission; destructive tools
   ask the approval gate) and store each result.
3. An accepted `create_plan` without a result → run the steps (`scheduler`); their outcomes
   become that call's result (stored empty: read back from the steps, `history.plan_results`),
   and the next model call (sent no tools) writes the final answer: on the executor model when
   the plan says `answer: "executor"` (it only gathers the results), else on the planner's.
   It may write `{{step N}}` to give the user a step's result as it stands (`quotes`:
   expanded as it streams and before it is stored).

Each transition is one statement (`shared.db.transitions`) that stores its rows, accounts the
call, sends its events and returns the plan's control state, which the next call is checked
against. The answer's statement completes the plan, gives its lease back and sends `done`: a
direct turn is that, one model call, and the chat function's statement that stored the
message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING
from uuid import UUID

from pydantic import JsonValue

from shared.agents import control_tools, prompts
from shared.agents.accounting import account_call
from shared.agents.budget import FittedPrompt, Segment
from shared.agents.errors import PlanNotWritten
from shared.agents.event_data import clip, done_data
from shared.agents.history import (
    PLAN_STEPS,
    PlannerTurn,
    conversation_segments,
    plan_results,
    planner_turn,
    wire_calls,
    without_steps,
)
from shared.agents.lease_holder import Lease
from shared.agents.model_calls import AgentRun, build_request, call_model, tool_schemas
from shared.agents.outcomes import PlanOutcome
from shared.agents.plan_schema import PlanDraft
from shared.agents.planner import plan_checks
from shared.agents.planner.finishing import (
    settled_answer,
)
from shared.agents.planner.scheduler import StepScheduler
from shared.agents.ports import Invoker
from shared.agents.quotes import Quotes
from shared.agents.tool_runs import State, record_result, run_tool
from shared.db.planner_runs import OpenedPlan
from shared.db.records import Agent, ChatMessage, Plan, PlanStep
from shared.db.transitions import Control, Transition
from shared.events import EventEmitter
from shared.llm import (
    Completion,
    FinishReason,
    ToolCall,
    ToolSchema,
    UserMessage,
)
from shared.tools import ToolDefinition, ToolRegistry, ToolResult, TurnCache, offered_tools
from shared.tools.executor import Checked

if TYPE_CHECKING:
    from shared.agents.ports import AgentServices

PLAN_RESULTS = "plan_results"


"""`metadata.kind` of the tool row holding an accepted plan's step outcomes."""


NOT_RUN = "Not run: you wrote a plan in the same turn; its steps do this work."


HISTORY_LOADED = 200


"""Past messages (requests and answers) loaded for the planner's history, newest first."""


ONE_PLAN = "Not used: write one plan per turn."


STREAMED_TOKENS = 16


"""Numbers reserved for a streamed call's token batches by the statement before it."""


ANSWER_INCOMPLETE = (
    "(Note: to fit the planner's context budget, {tokens} tokens of what this turn found were "
    "left out when this answer was written, so it may be incomplete. Ask about less at once to "
    "see the rest.)"
)


ANSWER_CUT = (
    "(Note: this answer was cut off where the model reached its output limit. Ask for the rest, "
    "or about less at once.)"
)


ANSWER_FILTERED = "(Note: the model's provider stopped this answer with its content filter.)"


NO_ANSWER = "(The model sent no answer. Your message is saved: send it again, or rephrase it.)"


@dataclass(slots=True)
class PlannerRun:
    """The planner working on one plan in this invocation: its state, carried in memory."""

    run: AgentRun
    invoker: Invoker
    request: ChatMessage
    past: list[ChatMessage]
    rows: list[ChatMessage]
    """The plan's messages, as stored (loaded when the run opened, then appended to)."""
    steps: list[PlanStep]
    tools: list[ToolSchema]
    lease: Lease
    control: Control | None
    """The plan's state as the last statement returned it; the next check consumes it."""
    agent: Agent | None
    """The planner's row as the last statement read it (the next tool call decides on it)."""
    cache: TurnCache = field(default_factory=TurnCache)

    @classmethod
    def of(
        cls,
        services: AgentServices,
        opened: OpenedPlan,
        emitter: EventEmitter,
        invoker: Invoker,
        lease: Lease,
    ) -> PlannerRun:
        assert opened.execution is not None  # opened with a model to call
        run = AgentRun(services, emitter, opened.plan, opened.planner, opened.execution)
        return cls(
            run,
            invoker,
            opened.request,
            opened.past,
            opened.turn,
            opened.steps,
            routing_tools(opened.planner, services.tools),
            lease,
            Control.of(opened.plan),
            opened.planner,
        )

    @property
    def services(self) -> AgentServices:
        return self.run.services

    @property
    def plan(self) -> Plan:
        return self.run.plan

    async def drive(self) -> PlanOutcome:
        """Loop over the turn until the answer is stored (and the plan completed with it)."""
        while True:
            turn = planner_turn(self.rows, self.steps)
            if turn.answer is not None:
                return await settled_answer(self.services, self.plan, turn.answer)
            last = turn.last
            if last is not None and last.unanswered:
                await self._answer_calls(last.unanswered)
            elif (outcome := await self._call_model(turn)) is not None:
                return outcome

    def transition(self) -> Transition:
        plan = self.plan
        return Transition(plan.session_id, plan.user_id, plan.id, self.run.emitter.outbox())

    async def _write(self, transition: Transition) -> None:
        """Run `transition`, keep what it stored and returned, deliver its events."""
        async with self.services.db.autocommit() as conn:
            written = await transition.run(conn)
        self.rows += written.messages
        self.run = replace(self.run, plan=written.plan)
        self.control, self.agent = written.control, written.agent
        if written.steps:
            self.steps = written.steps
        if written.tokens_last is not None:
            self.run.emitter.reserve_tokens(written.tokens_last, STREAMED_TOKENS, written.load)
        await self.run.emitter.deliver(written.events)

    def _take_control(self) -> Control | None:
        control, self.control = self.control, None
        return control

    def _take_state(self) -> State:
        """The state the next tool call decides on, used once (the next statement renews it)."""
        state = State(self._take_control(), self.agent)
        self.agent = None
        return state

    async def _answer_calls(self, calls: Sequence[ToolCall]) -> None:
        for call in calls:
            if call.name != control_tools.CREATE_PLAN:
                outcome = await run_tool(self.run, call, turn=self.cache, state=self._take_state())
                await self._store_result(call, outcome, last=call is calls[-1])
        plan_call = next((c for c in calls if c.name == control_tools.CREATE_PLAN), None)
        if plan_call is not None:  # unanswered create_plan = the accepted plan: run it
            await self.run.emitter.emit(
                "status_update",
                {"status": "executing"},
                plan_id=self.plan.id,
                agent_id=self.run.agent.id,
            )
            scheduler = StepScheduler(self.run, self.invoker, self.steps, self._take_control())
            try:
                steps = await scheduler.run()
            finally:
                self.steps = list(scheduler.steps.values())
            self.control = scheduler.control
            await self._store_plan_results(plan_call, steps)

    async def _call_model(self, turn: PlannerTurn) -> PlanOutcome | None:
        """One model call and its stored turn; the outcome when it was the answer."""
        synthesis = turn.last is not None and PLAN_RESULTS in turn.last.kinds.values()
        rounds = sum(1 for t in turn.turns if t.calls)
        final = synthesis or rounds >= self.services.settings.planner_max_tool_rounds
        segments, earlier = self._segments(turn)
        request, fitted = build_request(  # a call that may not call tools is sent none to call
            self._answering(turn) if synthesis else self.run,
            system=prompts.with_date(prompts.PLANNER),
            segments=segments,
            tools=() if final else self.tools,
            earlier=earlier,
        )
        quotes = Quotes.of(self.steps) if synthesis else None  # {{step N}}: its result
        completion = await call_model(
            self.run, request, stream_text=True, control=self._take_control(), quotes=quotes
        )
        calls = () if final else completion.tool_calls
        if not calls:
            return await self._store_answer(completion, fitted)
        await self._store_turn(completion, turn, calls)
        return None

    def _answering(self, turn: PlannerTurn) -> AgentRun:
        """Who writes the answer to a plan's results: the planner, or — when the plan said
        `answer: "executor"` (it only gathers them) — the planner on the executor model (that
        model's window and thinking switch; the planner's thinking setting, budget, prompt)."""
        if not _answered_by_executor(turn):
            return self.run
        model = self.services.settings.llm_executor_model
        return replace(self.run, agent=self.run.agent._replace(model=model))

    def _segments(self, turn: PlannerTurn) -> tuple[list[Segment], str | None]:
        """The conversation so far and the current turn; and what is not loaded of it."""
        earlier = None
        if len(self.past) == HISTORY_LOADED:  # there may be more: say so rather than hide it
            earlier = f"messages before the last {HISTORY_LOADED} of this chat are not shown"
        current = (UserMessage(self.request.content), *turn.messages())
        return [*conversation_segments(self.past), Segment(current, pinned=True)], earlier

    async def _store_answer(self, completion: Completion, fitted: FittedPrompt) -> PlanOutcome:
        """The answer, the plan completed with it and its lease given back, and `done` (which
        carries the answer's call: it has no `usage` event), its stream ended.

        What its prompt left out to fit the budget is recorded with it (`metadata.left_out`);
        when that includes results of this turn, the answer also says so, to the user too."""
        text = completion.text if completion.text.strip() else ""
        metadata: dict[str, JsonValue] = {"kind": "answer"}
        if fitted.left_out:
            metadata["left_out"] = list(fitted.left_out)
        if completion.finish_reason in ("length", "content_filter"):
            metadata["finish_reason"] = completion.finish_reason
        notes = _answer_notes(text, completion.finish_reason, fitted.cut_tokens)
        if notes:
            added = "\n\n".join(notes)
            if text:
                added = f"\n\n{added}"
            await self.run.emitter.token(added, plan_id=self.plan.id, agent_id=self.run.agent.id)
            await self.run.emitter.flush_tokens()
            text += added
        transition = self.transition()
        row_id, _ = transition.chat_message(
            role="assistant",
            content=text,
            model=completion.model,
            usage=completion.usage,
            reasoning_content=completion.message.reasoning_content,
            metadata=metadata,
        )
        # The answer's call is accounted here, its usage announced by `done` (no `usage` event).
        transition.account(
            self.run.execution.id, completion.usage, llm_calls=1, close="completed", close_open=True
        )
        final_strategy = self.plan.strategy or "direct"
        transition.set_plan(status="completed", strategy=final_strategy, release_lease=True)
        transition.cancel_pending_approvals()
        self._end_stream(transition)
        call, model = completion.usage, completion.model
        done = done_data("completed", final_strategy, text, row_id, None, model=model, call=call)
        transition.event("done", done, agent_id=None, totals_at="usage")
        await self.run.emitter.tokens_delivered()  # the answer's last words before its `done`
        await self._write(transition)
        self.lease.settled = True
        answer = next(r for r in self.rows if r.id == row_id)
        return PlanOutcome(
            self.plan.id,
            self.plan.session_id,
            "completed",
            final_strategy,
            answer.content,
            answer.id,
            None,
        )

    async def _store_turn(
        self, completion: Completion, turn: PlannerTurn, calls: Sequence[ToolCall]
    ) -> None:
        decided = _Decision(calls, turn)
        if decided.plan_call is not None:
            decided.read(self)
        transition = self.transition()
        stored, metadata = list(calls), {"kind": "tool_round"}
        if decided.draft is not None and decided.plan_call is not None:  # its steps: the plan's
            stored = [without_steps(c) if c is decided.plan_call else c for c in calls]
            metadata[PLAN_STEPS] = decided.plan_call.id
        row_id, _ = transition.chat_message(
            role="assistant",
            content=completion.text,
            model=completion.model,
            usage=completion.usage,
            tool_calls=wire_calls(stored),
            reasoning_content=completion.message.reasoning_content,
            metadata=metadata,
        )
        for call in calls:
            transition.event("tool_call", _call_data(row_id, call), agent_id=self.run.agent.id)
        decided.store(transition, self.plan)
        for call, text in decided.answers:
            self._tool_row(transition, call, text, None)
        if decided.draft is not None:
            step_ids = transition.add_steps(plan_checks.new_steps(decided.draft))
            transition.event(
                "plan_created", _plan_data(decided.draft, step_ids), agent_id=self.run.agent.id
            )
        account_call(
            transition,
            execution_id=self.run.execution.id,
            completion=completion,
            agent_id=self.run.agent.id,
        )
        transition.read_agent(self.run.agent.id)  # the calls' permission checks decide on it
        self._end_stream(transition)
        await self._write(transition)
        decided.raise_if_exhausted(self.services.settings.planner_plan_attempts)

    def _end_stream(self, transition: Transition) -> None:
        """The statement storing a streamed call ends its stream (when streams are counted)."""
        if self.run.emitter.pacer is not None:
            transition.end_stream()

    def _tool_row(
        self,
        transition: Transition,
        call: ToolCall,
        content: str,
        result: ToolResult | None,
        kind: str = "tool_result",
        stored: str | None = None,
    ) -> None:
        """A `tool` row answering `call` (holding `stored` when given, else `content`), and its
        `tool_result` event."""
        error = result.error if result else None
        row_id, slot = transition.chat_message(
            role="tool",
            content=content if stored is None else stored,
            tool_call_id=call.id,
            tool_name=call.name,
            metadata={"kind": kind, "error": error},
        )
        data: dict[str, JsonValue] = {
            "message_id": str(row_id),
            "tool_call_id": call.id,
            "tool_name": call.name,
            "ok": result.ok if result else True,
            "error": error,
            "content": clip(content),
        }
        transition.event("tool_result", data, agent_id=self.run.agent.id, row=slot)

    async def _store_result(
        self, call: ToolCall, outcome: Checked | ToolResult, *, last: bool
    ) -> None:
        transition = self.transition()
        result = record_result(transition, self.run, call, outcome, thread=None, step_id=None)
        self._tool_row(transition, call, result.content(), result)
        transition.read_agent(self.run.agent.id)
        if last:  # the next call streams
            transition.reserve_tokens(STREAMED_TOKENS, self.run.emitter.load_query(self.plan.id))
        await self._write(transition)

    async def _store_plan_results(self, call: ToolCall, steps: Sequence[PlanStep]) -> None:
        transition = self.transition()  # the row: empty (its text is the steps', read back)
        self._tool_row(transition, call, plan_results(steps), None, PLAN_RESULTS, stored="")
        transition.reserve_tokens(  # the synthesis streams
            STREAMED_TOKENS, self.run.emitter.load_query(self.plan.id)
        )
        await self._write(transition)


@dataclass(slots=True)
class _Decision:
    """What a planner turn decided about strategy and plans, before and while it is stored."""

    calls: Sequence[ToolCall]
    turn: PlannerTurn
    draft: PlanDraft | None = None
    problems: list[str] = field(default_factory=list)
    answers: list[tuple[ToolCall, str]] = field(default_factory=list)

    @property
    def plan_call(self) -> ToolCall | None:
        return next((c for c in self.calls if c.name == control_tools.CREATE_PLAN), None)

    def read(self, planner: PlannerRun) -> None:
        """Validate the turn's plan and decide how its other calls are answered."""
        plan_call = self.plan_call
        assert plan_call is not None
        services = planner.services
        read = plan_checks.read_plan(
            plan_call,
            registry=services.tools,
            counter=services.tokens,
            executor_budget=services.executor_budget,
        )
        extra = [
            c for c in self.calls if c.name == control_tools.CREATE_PLAN and c is not plan_call
        ]
        self.answers += [(c, ONE_PLAN) for c in extra]
        if isinstance(read, PlanDraft):  # no goal written: the user's message is the goal
            self.draft = (
                read
                if read.goal
                else read.model_copy(update={"goal": planner.request.content[:1000]})
            )
            self.answers += [
                (c, NOT_RUN) for c in self.calls if c.name != control_tools.CREATE_PLAN
            ]
        else:
            self.problems = read
            text = "The plan was not accepted. Fix these problems and call create_plan again:\n"
            self.answers.insert(0, (plan_call, text + "\n".join(f"- {p}" for p in read)))

    def store(self, transition: Transition, plan: Plan) -> None:
        """Record the strategy (and the goal of an accepted plan) with the turn."""
        if self.draft is not None:
            transition.set_plan(strategy="complex", goal=self.draft.goal)
            return
        domain = [c for c in self.calls if c.name != control_tools.CREATE_PLAN]
        if plan.strategy is None and domain:
            transition.set_plan(strategy="tool")

    def raise_if_exhausted(self, attempts: int) -> None:
        if not self.problems:
            return
        made = len(self.turn.calls_named(control_tools.CREATE_PLAN)) + 1
        if made >= attempts:
            raise PlanNotWritten(
                f"The planner could not write a valid plan in {made} attempts: "
                + "; ".join(self.problems)
            )


def routing_tools(planner: Agent, registry: ToolRegistry) -> list[ToolSchema]:
    """What the planner is offered when it decides: the write tools it can call without a
    lookup (no required id: create a task, a note, a brain dump) and `create_plan`, which names
    every tool a step may list. A write that needs an id needs a lookup first, so it is a
    planner step of a plan (offered its tools then); reads are the executors' job. Schemas the
    routing call cannot use would only make every planner call dearer."""
    offered = offered_tools(planner, registry)
    direct = [tool for tool in offered if tool.access == "write" and not _needs_id(tool)]
    return [*tool_schemas(direct), control_tools.create_plan([tool.name for tool in offered])]


def _needs_id(tool: ToolDefinition) -> bool:
    """Whether a tool requires the id of an existing record (which the planner must look up)."""
    required = tool.parameters.get("required")
    names = required if isinstance(required, list) else []
    return any(isinstance(name, str) and name.endswith("_id") for name in names)


def _answer_notes(text: str, finish: FinishReason, cut_tokens: int) -> list[str]:
    """What the user must be told about an answer: what its prompt left out, that the model
    stopped it short, or that there is none — never an empty or silently cut answer."""
    if finish == "content_filter":
        stopped: str | None = ANSWER_FILTERED
    elif not text:
        return [NO_ANSWER]  # whatever stopped the model, there is no answer to qualify
    else:
        stopped = ANSWER_CUT if finish == "length" else None
    notes = [ANSWER_INCOMPLETE.format(tokens=cut_tokens)] if cut_tokens and text else []
    return notes + ([stopped] if stopped else [])


def _answered_by_executor(turn: PlannerTurn) -> bool:
    """Whether the accepted plan asked for its final answer from the executor model (it only
    gathers the results; the planner keeps answers that need judgement)."""
    made = turn.calls_named(control_tools.CREATE_PLAN)
    return bool(made) and made[-1][1].valid and made[-1][1].arguments.get("answer") == "executor"


def _call_data(message_id: UUID, call: ToolCall) -> dict[str, JsonValue]:
    arguments: JsonValue = (
        dict(call.arguments) if call.valid else {"unparsed": call.arguments_json[:2000]}
    )
    return {
        "message_id": str(message_id),
        "tool_call_id": call.id,
        "tool_name": call.name,
        "tool_args": arguments,
    }


def _plan_data(draft: PlanDraft, step_ids: Sequence[UUID]) -> dict[str, JsonValue]:
    return {
        "goal": draft.goal,
        "steps": [
            {
                "step_id": str(step_id),
                "step_number": s.step_number,
                "description": s.description,
                "assignee": s.assignee,
                "depends_on": list(s.depends_on),
                "tools": list(s.tools),
            }
            for step_id, s in zip(step_ids, draft.steps, strict=True)
        ],
    }
