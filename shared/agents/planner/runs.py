"""`run_plan`: the planner's whole job for one plan, resumable from the tables at any point.

The planner's turn is one loop over its messages (`chat_messages` with the plan's id), read
once when the run opens and kept in memory as each statement stores more:

1. No answer yet and nothing pending → call the model (streamed) with the write tools it can
   use without a lookup and `create_plan` (`routing_tools`: reads are delegated). Text only is
   the answer (strategy `direct` if it is the first call); write calls make the strategy
   `tool`; a valid `create_plan` makes it `complex` and stores the steps with the call (the
   call itself without them: `history.PLAN_STEPS`); an invalid one is answered with its
   problems (bounded retries).
2. Calls without results → run them (the tool executor checks permission; destructive tools
   ask the approval gate) and store each result.
3. An accepted `create_plan` without a result → run the steps (`plan_runner`); their outcomes
   become that call's result (stored empty: read back from the steps, `history.plan_results`),
   and the next model call (sent no tools) writes the final answer: on the executor model when
   the plan says `answer: "executor"` (it only gathers the results), else on the planner's.
   It may write `{{step N}}` to give the user a step's result as it stands (`quotes`:
   expanded as it streams and before it is stored).

Each transition is one statement (`shared.db.transitions`) that stores its rows, accounts the
call, sends its events and returns the plan's control state, which the next call is checked
against. The run opens with one statement too: lease, `executing`, the planner's execution,
`status_update{thinking}` and everything the planner reads. The answer's statement completes
the plan, gives its lease back and sends `done`: a direct turn is that, one model call, and
the chat function's statement that stored the message.

Each decision is committed before it is published, so a re-invocation continues where the
last one stopped: finished steps are reused, answered calls are not repeated. Exactly one
`done` event ends every `run_plan`, whatever happened: an unexpected exception (a bug, data
the database refused) ends the plan `failed` (`finishing`). A failure of the infrastructure
(another function unreachable, the database connection lost) propagates, and like a process
that died leaves the plan `executing` for the next invocation (at-least-once delivery) to
resume once its lease has expired.

One invocation works on a plan at a time: it holds the plan's run lease (`leases`). Another
`run_plan` for the plan meanwhile returns at once — no model call, no event — with the plan's
current status and `running_elsewhere=True`.

With an invoker that hands steps off (a queue), a run that has nothing left to do but wait
for them ends (`handed_off=True`, no `done`), *parking* the plan's lease: the plan still
counts as running, and the resume sent by the step that settles takes it over. A resume that
finds nothing new (`plan_runner.has_work`) parks it again and does nothing. Parking and a step
settling can cross: after parking, the run looks at the steps again and goes on if one
settled meanwhile.
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
from shared.agents.event_data import clip, done_data, load_query, session_emitter
from shared.agents.history import (
    PLAN_STEPS,
    PlannerTurn,
    conversation_segments,
    plan_results,
    planner_turn,
    wire_calls,
    without_steps,
)
from shared.agents.lease_holder import Lease, LeaseLost, holding, new_owner
from shared.agents.model_calls import AgentRun, build_request, call_model, tool_schemas
from shared.agents.outcomes import PlanOutcome
from shared.agents.plan_schema import PlanDraft
from shared.agents.planner import plan_checks
from shared.agents.planner.finishing import (
    TERMINAL,
    finish_plan,
    handed_off,
    outcome_of,
    settled_answer,
)
from shared.agents.planner.scheduler import StepScheduler, has_work
from shared.agents.ports import Invoker
from shared.agents.quotes import Quotes
from shared.agents.tool_runs import State, record_result, run_tool
from shared.db import leases, plans
from shared.db.planner_runs import OpenedPlan, open_planner_run
from shared.db.records import Agent, ChatMessage, Plan, PlanStep
from shared.db.transitions import Control, Transition
from shared.events import EventEmitter, FanoutPublisher, Publisher
from shared.kernel.errors import NotFound
from shared.llm import (
    Completion,
    FinishReason,
    LLMNotConfigured,
    ToolCall,
    ToolSchema,
    UserMessage,
)
from shared.observability import logs, tracing
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


async def run_plan(
    services: AgentServices,
    *,
    plan_id: UUID,
    emitter: EventEmitter | None = None,
    publisher: Publisher | None = None,
    invoker: Invoker,
    replay_ended: bool = True,
) -> PlanOutcome:
    """Answer the plan's user message: decide, act, delegate, synthesize — or resume doing so.

    Events go to `emitter` (or one made for the plan's session on `publisher`). Executor steps
    go through `invoker` (in this process, another function, a queue). Ends with exactly one `done`
    event — unless the invoker hands steps off and the run ended waiting for them (`handed_off`):
    the run that finishes the plan sends it. A plan that has already ended is answered as it ended,
    its `done` sent again unless `replay_ended` is False (a late queue message).

    Log records made meanwhile carry the plan's ids (`shared.observability.logs`); with tracing on,
    the run is an `invoke_agent planner` span, its model calls, tools and steps inside it.
    """
    attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner",
                  "parley.plan.id": str(plan_id)}  # fmt: skip
    with logs.bound(plan_id=plan_id), tracing.span("invoke_agent planner",
                                                   attributes=attributes) as span:  # fmt: skip
        while True:
            outcome = await _run_leased(
                services, plan_id, emitter, publisher, invoker, replay_ended
            )
            if not outcome.handed_off or not await _news(services, plan_id):
                span.set_attributes(_outcome_attributes(outcome))
                return outcome
            # A step settled while this run was parking the plan (its resume found the plan
            # leased and left): go on with it here.


def _outcome_attributes(outcome: PlanOutcome) -> dict[str, str | bool]:
    return {"parley.plan.status": outcome.status, "parley.plan.strategy": outcome.strategy or "",
            "parley.plan.handed_off": outcome.handed_off,
            "parley.plan.running_elsewhere": outcome.running_elsewhere}  # fmt: skip


async def _run_leased(
    services: AgentServices,
    plan_id: UUID,
    emitter: EventEmitter | None,
    publisher: Publisher | None,
    invoker: Invoker,
    replay_ended: bool,
) -> PlanOutcome:
    """One run holding the plan's lease (or where the plan stands, if another run holds it)."""
    unconfigured = _unconfigured(services)
    settings = services.settings
    lease = Lease("agent_plans", plan_id, new_owner(), settings.run_lease_seconds)
    async with services.db.autocommit() as conn:
        opened = await open_planner_run(
            conn, plan_id=plan_id, owner=lease.owner, seconds=lease.seconds,
            announce=unconfigured is None, private=settings.realtime_private_channels,
            tokens=STREAMED_TOKENS, history=HISTORY_LOADED, trace_id=tracing.trace_id(),
            load=load_query(services, plan_id),
        )  # fmt: skip
    if opened is None:
        return await _not_leased(services, plan_id, emitter, publisher, replay_ended)
    plan = opened.plan
    logs.annotate(session_id=plan.session_id, message_id=plan.user_message_id)
    tracing.annotate({"gen_ai.conversation.id": str(plan.session_id),
                      "gen_ai.agent.id": str(plan.planner_agent_id)})  # fmt: skip
    emitter = emitter or _emitter(services, opened.plan, publisher)
    if opened.was_parked and not has_work(opened.steps):
        await _park(services, lease)
        return await handed_off(services, plan_id)
    if opened.was_parked and unconfigured is None:
        await emitter.emit("status_update", {"status": "thinking"}, plan_id=plan_id,
                           agent_id=opened.planner.id)  # fmt: skip
    await emitter.deliver(opened.events)
    if opened.tokens_last is not None:
        emitter.reserve_tokens(opened.tokens_last, STREAMED_TOKENS, opened.load)
    runs: list[PlannerRun] = []  # made on first use: a run with no model to call makes none

    async def work() -> PlanOutcome:
        if not runs:
            runs.append(PlannerRun.of(services, opened, emitter, invoker, lease))
        return await runs[0].drive()  # again, after a decision arrived: where it stopped

    try:
        async with holding(services.db, lease):
            outcome = await finish_plan(services, opened.plan, emitter, work,
                                        unconfigured=unconfigured)  # fmt: skip
            if outcome.handed_off:
                lease.park_seconds = settings.plan_park_seconds
            return outcome
    except LeaseLost:
        return await _elsewhere(services, plan_id)


def _unconfigured(services: AgentServices) -> LLMNotConfigured | None:
    """Why no model can be called (checked before anything changes), or None."""
    try:
        services.llm  # noqa: B018 - built on first use; raises when not configured
    except LLMNotConfigured as exc:
        return exc
    return None


def _emitter(services: AgentServices, plan: Plan, publisher: Publisher | None) -> EventEmitter:

    return session_emitter(services, plan.session_id, publisher or FanoutPublisher())


async def _not_leased(
    services: AgentServices,
    plan_id: UUID,
    emitter: EventEmitter | None,
    publisher: Publisher | None,
    replay_ended: bool,
) -> PlanOutcome:
    """A plan this run did not lease: one that ended (answered as it ended), or one another
    run holds (where it stands)."""
    plan = await _read_plan(services, plan_id)
    if plan.status not in TERMINAL or not replay_ended:
        return await _standing(services, plan)
    emitter = emitter or _emitter(services, plan, publisher)
    return await finish_plan(services, plan, emitter, None)


async def _park(services: AgentServices, lease: Lease) -> None:
    """Give a resumed plan's lease back as parked: it still waits for its steps."""
    async with services.db.autocommit() as conn:
        await leases.park_plan(conn, plan_id=lease.row_id, owner=lease.owner,
                               seconds=services.settings.plan_park_seconds)  # fmt: skip
    lease.settled = True


async def _news(services: AgentServices, plan_id: UUID) -> bool:
    """Whether a plan waiting for handed-off steps has something to do now."""
    async with services.db.autocommit() as conn:
        steps = await plans.list_steps(conn, plan_id=plan_id)
    return has_work(steps)


async def _elsewhere(services: AgentServices, plan_id: UUID) -> PlanOutcome:
    """What a run that lost the plan's lease returns: where the plan stands."""
    return await _standing(services, await _read_plan(services, plan_id))


async def _read_plan(services: AgentServices, plan_id: UUID) -> Plan:
    async with services.db.autocommit() as conn:
        plan = await plans.get_plan(conn, plan_id=plan_id)
    if plan is None:
        raise NotFound(f"Plan {plan_id} not found")
    return plan


async def _standing(services: AgentServices, plan: Plan) -> PlanOutcome:
    """Where `plan` stands: `running_elsewhere` while it has not ended."""
    outcome = await outcome_of(services, plan)
    return outcome._replace(running_elsewhere=plan.status not in TERMINAL)


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
            run, invoker, opened.request, opened.past, opened.turn, opened.steps,
            routing_tools(opened.planner, services.tools), lease, Control.of(opened.plan),
            opened.planner,
        )  # fmt: skip

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
                "status_update", {"status": "executing"}, plan_id=self.plan.id,
                agent_id=self.run.agent.id,
            )  # fmt: skip
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
            system=prompts.with_date(prompts.PLANNER), segments=segments,
            tools=() if final else self.tools, earlier=earlier,
        )  # fmt: skip
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
            role="assistant", content=text, model=completion.model,
            usage=completion.usage, reasoning_content=completion.message.reasoning_content,
            metadata=metadata,
        )  # fmt: skip
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
        return PlanOutcome(self.plan.id, self.plan.session_id, "completed", final_strategy,
                           answer.content, answer.id, None)  # fmt: skip

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
            role="assistant", content=completion.text, model=completion.model,
            usage=completion.usage, tool_calls=wire_calls(stored),
            reasoning_content=completion.message.reasoning_content, metadata=metadata,
        )  # fmt: skip
        for call in calls:
            transition.event("tool_call", _call_data(row_id, call), agent_id=self.run.agent.id)
        decided.store(transition, self.plan)
        for call, text in decided.answers:
            self._tool_row(transition, call, text, None)
        if decided.draft is not None:
            step_ids = transition.add_steps(plan_checks.new_steps(decided.draft))
            transition.event("plan_created", _plan_data(decided.draft, step_ids),
                             agent_id=self.run.agent.id)  # fmt: skip
        account_call(transition, execution_id=self.run.execution.id, completion=completion,
                     agent_id=self.run.agent.id)  # fmt: skip
        transition.read_agent(self.run.agent.id)  # the calls' permission checks decide on it
        self._end_stream(transition)
        await self._write(transition)
        decided.raise_if_exhausted(self.services.settings.planner_plan_attempts)

    def _end_stream(self, transition: Transition) -> None:
        """The statement storing a streamed call ends its stream (when streams are counted)."""
        if self.run.emitter.pacer is not None:
            transition.end_stream()

    def _tool_row(
        self, transition: Transition, call: ToolCall, content: str, result: ToolResult | None,
        kind: str = "tool_result", stored: str | None = None,
    ) -> None:  # fmt: skip
        """A `tool` row answering `call` (holding `stored` when given, else `content`), and its
        `tool_result` event."""
        error = result.error if result else None
        row_id, slot = transition.chat_message(
            role="tool", content=content if stored is None else stored, tool_call_id=call.id,
            tool_name=call.name, metadata={"kind": kind, "error": error},
        )  # fmt: skip
        data: dict[str, JsonValue] = {
            "message_id": str(row_id), "tool_call_id": call.id, "tool_name": call.name,
            "ok": result.ok if result else True, "error": error, "content": clip(content),
        }  # fmt: skip
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
            plan_call, registry=services.tools, counter=services.tokens,
            executor_budget=services.executor_budget,
        )  # fmt: skip
        extra = [
            c for c in self.calls if c.name == control_tools.CREATE_PLAN and c is not plan_call
        ]
        self.answers += [(c, ONE_PLAN) for c in extra]
        if isinstance(read, PlanDraft):  # no goal written: the user's message is the goal
            self.draft = read if read.goal else read.model_copy(
                update={"goal": planner.request.content[:1000]})  # fmt: skip
            self.answers += [(c, NOT_RUN) for c in self.calls
                             if c.name != control_tools.CREATE_PLAN]  # fmt: skip
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
    return {"message_id": str(message_id), "tool_call_id": call.id, "tool_name": call.name,
            "tool_args": arguments}  # fmt: skip


def _plan_data(draft: PlanDraft, step_ids: Sequence[UUID]) -> dict[str, JsonValue]:
    return {
        "goal": draft.goal,
        "steps": [
            {"step_id": str(step_id), "step_number": s.step_number, "description": s.description,
             "assignee": s.assignee, "depends_on": list(s.depends_on), "tools": list(s.tools)}
            for step_id, s in zip(step_ids, draft.steps, strict=True)
        ],
    }  # fmt: skip
