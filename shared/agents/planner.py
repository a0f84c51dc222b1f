"""`run_plan`: the planner's whole job for one plan, resumable from the tables at any point.

The planner's turn is one loop over its stored messages (`chat_messages` with the plan's id):

1. No answer yet and nothing pending → call the model (streamed) with the write tools it may
   use and `create_plan` (`routing_tools`: reads are delegated). Text only is the answer
   (strategy `direct` if it is the first call); write calls make the strategy `tool`; a valid
   `create_plan` makes it `complex` and stores the steps with the call; an invalid one is
   answered with its problems (bounded retries).
2. Calls without results → run them (the tool executor checks permission; destructive tools
   ask the approval gate) and store each result.
3. An accepted `create_plan` without a result → run the steps (`plan_runner`); their outcomes
   become that call's result, and the next model call (sent no tools) writes the final answer.

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
finds nothing new (`plan_runner.has_work`) does nothing. Parking and a step settling can
cross: after parking, the run looks at the steps again and goes on if one settled meanwhile.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING
from uuid import UUID

from pydantic import JsonValue

from shared.agents import control_tools, plan_checks, prompts
from shared.agents.accounting import account_call, emit_usage
from shared.agents.budget import Segment
from shared.agents.errors import PlanNotWritten
from shared.agents.events import clip
from shared.agents.finishing import TERMINAL, finish_plan, handed_off, outcome_of
from shared.agents.history import PlannerTurn, conversation_segments, planner_turn, wire_calls
from shared.agents.invoker import InProcessInvoker, Invoker
from shared.agents.leases import Lease, LeaseLost, holding, new_owner
from shared.agents.model_calls import AgentRun, build_request, call_model, tool_schemas
from shared.agents.outcomes import PlanOutcome
from shared.agents.plan_runner import StepScheduler, has_work
from shared.agents.plan_schema import PlanDraft
from shared.agents.tool_runs import run_tool
from shared.db import agents, chats, executions, leases, plans
from shared.db.database import Connection
from shared.db.leases import PARKED
from shared.db.records import Agent, ChatMessage, Plan, PlanStep, PlanStrategy
from shared.errors import NotFound
from shared.events import EventEmitter
from shared.llm import Completion, ToolCall, ToolSchema, UserMessage
from shared.tools import ToolRegistry, ToolResult, TurnCache, offered_tools

if TYPE_CHECKING:
    from shared.services import Services

PLAN_RESULTS = "plan_results"
"""`metadata.kind` of the tool row holding an accepted plan's step outcomes."""
NOT_RUN = "Not run: you wrote a plan in the same turn; its steps do this work."
HISTORY_LOADED = 200
"""Past messages (requests and answers) loaded for the planner's history, newest first."""
ONE_PLAN = "Not used: write one plan per turn."


async def run_plan(
    services: Services, *, plan_id: UUID, emitter: EventEmitter, invoker: Invoker | None = None
) -> PlanOutcome:
    """Answer the plan's user message: decide, act, delegate, synthesize — or resume doing so.

    Executor steps go through `invoker` (default: in this process, events to the emitter's
    publisher). Ends with exactly one `done` event — unless the invoker hands steps off and
    the run ended waiting for them (`handed_off`): the run that finishes the plan sends it.
    """
    async with services.db.service() as conn:
        plan = await plans.get_plan(conn, plan_id=plan_id)
    if plan is None:
        raise NotFound(f"Plan {plan_id} not found")
    ways = invoker or InProcessInvoker(services, emitter.publisher)
    if plan.status in TERMINAL:
        return await finish_plan(
            services, plan, emitter, lambda: _answer(services, plan, emitter, ways)
        )
    if _parked(plan) and not await _news(services, plan.id):
        return await handed_off(services, plan.id)
    while True:
        outcome = await _run_leased(services, plan.id, emitter, ways)
        if not outcome.handed_off or not await _news(services, plan.id):
            return outcome
        # A step settled while this run was parking the plan (its resume found the plan
        # leased and left): go on with it here.


async def _run_leased(
    services: Services, plan_id: UUID, emitter: EventEmitter, invoker: Invoker
) -> PlanOutcome:
    """One run holding the plan's lease (or where the plan stands, if another run holds it)."""
    lease = Lease("agent_plans", plan_id, new_owner(), services.settings.run_lease_seconds)
    async with services.db.service() as conn:
        leased = await leases.take_plan_lease(
            conn, plan_id=plan_id, owner=lease.owner, seconds=lease.seconds
        )
    if leased is None:
        return await _elsewhere(services, plan_id)
    try:
        async with holding(services.db, lease):
            outcome = await finish_plan(
                services, leased, emitter, lambda: _answer(services, leased, emitter, invoker)
            )
            if outcome.handed_off:
                lease.park_seconds = services.settings.plan_park_seconds
            return outcome
    except LeaseLost:
        return await _elsewhere(services, plan_id)


def _parked(plan: Plan) -> bool:
    """Whether the plan waits for handed-off steps (its parked lease not expired)."""
    expires = plan.lease_expires_at
    return plan.lease_owner == PARKED and expires is not None and expires > datetime.now(UTC)


async def _news(services: Services, plan_id: UUID) -> bool:
    """Whether a plan waiting for handed-off steps has something to do now."""
    async with services.db.service() as conn:
        steps = await plans.list_steps(conn, plan_id=plan_id)
    return has_work(steps)


async def _elsewhere(services: Services, plan_id: UUID) -> PlanOutcome:
    """What a run that did not get (or lost) the plan's lease returns: where the plan stands."""
    async with services.db.service() as conn:
        plan = await plans.get_plan(conn, plan_id=plan_id)
    if plan is None:
        raise NotFound(f"Plan {plan_id} not found")
    outcome = await outcome_of(services, plan)
    return replace(outcome, running_elsewhere=plan.status not in TERMINAL)


async def _answer(
    services: Services, plan: Plan, emitter: EventEmitter, invoker: Invoker
) -> ChatMessage:
    run = await PlannerRun.open(services, plan, emitter, invoker)
    return await run.drive()


@dataclass(slots=True)
class PlannerRun:
    """The planner working on one plan in this invocation."""

    run: AgentRun
    invoker: Invoker
    request: ChatMessage
    tools: list[ToolSchema]
    cache: TurnCache = field(default_factory=TurnCache)

    @classmethod
    async def open(
        cls, services: Services, plan: Plan, emitter: EventEmitter, invoker: Invoker
    ) -> PlannerRun:
        """Mark the plan executing and gather what the planner needs (its row, its run)."""
        services.llm  # noqa: B018 - fail now, before any state changes, if it is not configured
        async with services.db.service() as conn:
            planner = await agents.get_agent(conn, agent_id=plan.planner_agent_id)
            request = await chats.get_message(conn, message_id=plan.user_message_id)
            if planner is None or request is None:
                raise NotFound(f"the planner or the message of plan {plan.id} is gone")
            execution = await executions.start_planner_execution(
                conn, user_id=plan.user_id, session_id=plan.session_id, plan_id=plan.id,
                agent_id=planner.id, model=planner.model,
            )  # fmt: skip
            plan = await plans.update_plan(conn, plan_id=plan.id, status="executing")
        await emitter.emit("status_update", {"status": "thinking"}, plan_id=plan.id,
                           agent_id=planner.id)  # fmt: skip
        return cls(AgentRun(services, emitter, plan, planner, execution), invoker, request,
                   routing_tools(planner, services.tools))  # fmt: skip

    @property
    def services(self) -> Services:
        return self.run.services

    async def drive(self) -> ChatMessage:
        """Loop over the stored turn until the answer is stored; return it."""
        while True:
            turn = await self._turn()
            if turn.answer is not None:
                return turn.answer
            last = turn.last
            if last is not None and last.unanswered:
                await self._answer_calls(last.unanswered)
            else:
                await self._call_model(turn)

    async def _turn(self) -> PlannerTurn:
        async with self.services.db.service() as conn:
            return planner_turn(await chats.list_plan_messages(conn, plan_id=self.run.plan.id))

    async def _answer_calls(self, calls: Sequence[ToolCall]) -> None:
        for call in calls:
            if call.name != control_tools.CREATE_PLAN:
                result = await run_tool(self.run, call, turn=self.cache)
                await self._store_result(call, result.content(), result)
        plan_call = next((c for c in calls if c.name == control_tools.CREATE_PLAN), None)
        if plan_call is not None:  # unanswered create_plan = the accepted plan: run it
            await self._status("executing")
            steps = await StepScheduler(self.run, self.invoker).run()
            await self._store_result(plan_call, self._plan_results(steps), None, PLAN_RESULTS)

    async def _call_model(self, turn: PlannerTurn) -> None:
        synthesis = turn.last is not None and PLAN_RESULTS in turn.last.kinds.values()
        rounds = sum(1 for t in turn.turns if t.calls)
        final = synthesis or rounds >= self.services.settings.planner_max_tool_rounds
        segments, earlier = await self._segments(turn)
        request, _ = build_request(  # a call that may not call tools is sent none to call
            self.run, system=prompts.with_date(prompts.PLANNER), segments=segments,
            tools=() if final else self.tools, earlier=earlier,
        )  # fmt: skip
        completion = await call_model(self.run, request, stream_text=True)
        await self._store_turn(completion, turn, final=final)

    async def _status(self, status: str) -> None:
        await self.run.emitter.emit(
            "status_update", {"status": status}, plan_id=self.run.plan.id,
            agent_id=self.run.agent.id,
        )  # fmt: skip

    async def _segments(self, turn: PlannerTurn) -> tuple[list[Segment], str | None]:
        """The conversation so far and the current turn; and what is not loaded of it."""
        async with self.services.db.service() as conn:
            past = await chats.list_conversation(
                conn, session_id=self.run.plan.session_id, before_seq=self.request.seq,
                limit=HISTORY_LOADED,
            )  # fmt: skip
        earlier = None
        if len(past) == HISTORY_LOADED:  # there may be more: say so rather than hide it
            earlier = f"messages before the last {HISTORY_LOADED} of this chat are not shown"
        current = (UserMessage(self.request.content), *turn.messages())
        return [*conversation_segments(past), Segment(current, pinned=True)], earlier

    async def _store_turn(self, completion: Completion, turn: PlannerTurn, *, final: bool) -> None:
        calls = () if final else completion.tool_calls
        decided = _Decision(calls, turn)
        if decided.plan_call is not None:
            decided.read(self)
        async with self.services.db.service() as conn:
            plan = await plans.get_plan(conn, plan_id=self.run.plan.id)
            assert plan is not None
            row = await chats.add_message(
                conn, session_id=plan.session_id, user_id=plan.user_id, role="assistant",
                content=completion.text, plan_id=plan.id, model=completion.model,
                usage=completion.usage, tool_calls=wire_calls(calls) if calls else None,
                reasoning_content=completion.message.reasoning_content,
                metadata={"kind": "tool_round" if calls else "answer"},
            )  # fmt: skip
            await account_call(conn, plan=plan, execution_id=self.run.execution.id,
                               usage=completion.usage)  # fmt: skip
            steps = await decided.store(conn, plan)
            answered = [await self._tool_row(conn, plan, c, text) for c, text in decided.answers]
        await self._announce(row, calls, answered, steps, decided, completion)
        decided.raise_if_exhausted(self.services.settings.planner_plan_attempts)

    async def _tool_row(
        self, conn: Connection, plan: Plan, call: ToolCall, content: str
    ) -> ChatMessage:
        return await chats.add_message(
            conn, session_id=plan.session_id, user_id=plan.user_id, role="tool",
            content=content, plan_id=plan.id, tool_call_id=call.id, tool_name=call.name,
            metadata={"kind": "tool_result"},
        )  # fmt: skip

    async def _store_result(
        self, call: ToolCall, content: str, result: ToolResult | None, kind: str = "tool_result"
    ) -> None:
        plan = self.run.plan
        async with self.services.db.service() as conn:
            row = await chats.add_message(
                conn, session_id=plan.session_id, user_id=plan.user_id, role="tool",
                content=content, plan_id=plan.id, tool_call_id=call.id, tool_name=call.name,
                metadata={"kind": kind, "error": result.error if result else None},
            )  # fmt: skip
        await self._emit_tool_result(row, result)

    async def _emit_tool_result(self, row: ChatMessage, result: ToolResult | None) -> None:
        data: dict[str, JsonValue] = {
            "message_id": str(row.id), "tool_call_id": row.tool_call_id,
            "tool_name": row.tool_name, "ok": result.ok if result else True,
            "error": result.error if result else None, "content": clip(row.content),
        }  # fmt: skip
        if result is not None and result.error == "permission_denied":
            await self.run.emitter.emit(
                "permission_denied",
                {"tool_name": row.tool_name, "tool_call_id": row.tool_call_id,
                 "reason": str(result.payload.get("message", ""))},
                plan_id=self.run.plan.id, agent_id=self.run.agent.id,
            )  # fmt: skip
        await self.run.emitter.emit("tool_result", data, plan_id=self.run.plan.id,
                                    agent_id=self.run.agent.id, seq=row.seq)  # fmt: skip

    async def _announce(
        self,
        row: ChatMessage,
        calls: Sequence[ToolCall],
        answered: Sequence[ChatMessage],
        steps: Sequence[PlanStep],
        decided: _Decision,
        completion: Completion,
    ) -> None:
        emitter, plan_id, agent_id = self.run.emitter, self.run.plan.id, self.run.agent.id
        for call in calls:
            await emitter.emit(
                "tool_call",
                {"message_id": str(row.id), "tool_call_id": call.id, "tool_name": call.name,
                 "arguments": _arguments(call)},
                plan_id=plan_id, agent_id=agent_id,
            )  # fmt: skip
        for tool_row in answered:
            await self._emit_tool_result(tool_row, None)
        if decided.draft is not None:
            await emitter.emit("plan_created", _plan_data(decided.draft, steps),
                               plan_id=plan_id, agent_id=agent_id)  # fmt: skip
        await emit_usage(emitter, plan_id=plan_id, agent_id=agent_id, model=completion.model,
                         usage=completion.usage, db=self.services.db)  # fmt: skip

    def _plan_results(self, steps: Sequence[PlanStep]) -> str:
        lines = [prompts.PLAN_RESULTS, ""]
        for step in steps:  # each step's description is in the plan above: not repeated
            lines.append(f"Step {step.step_number}: {step.status}")
            if step.result:
                lines.append(f"Result: {step.result}")
            if step.error:
                lines.append(f"Problem: {step.error}")
        return "\n".join(lines)


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
        settings = planner.services.settings
        read = plan_checks.read_plan(
            plan_call, registry=planner.services.tools, counter=planner.services.tokens,
            executor_budget=settings.executor_token_budget,
        )  # fmt: skip
        extra = [
            c for c in self.calls if c.name == control_tools.CREATE_PLAN and c is not plan_call
        ]
        self.answers += [(c, ONE_PLAN) for c in extra]
        if isinstance(read, PlanDraft):
            self.draft = read
            self.answers += [(c, NOT_RUN) for c in self.calls
                             if c.name != control_tools.CREATE_PLAN]  # fmt: skip
        else:
            self.problems = read
            text = "The plan was not accepted. Fix these problems and call create_plan again:\n"
            self.answers.insert(0, (plan_call, text + "\n".join(f"- {p}" for p in read)))

    async def store(self, conn: Connection, plan: Plan) -> list[PlanStep]:
        """Record the strategy (and the steps of an accepted plan) with the turn."""
        if self.draft is not None:
            await plans.update_plan(conn, plan_id=plan.id, strategy="complex", goal=self.draft.goal)
            return await plans.add_steps(conn, plan_id=plan.id, user_id=plan.user_id,
                                         steps=plan_checks.new_steps(self.draft))  # fmt: skip
        domain = [c for c in self.calls if c.name != control_tools.CREATE_PLAN]
        if plan.strategy is None and (domain or not self.calls):
            strategy: PlanStrategy = "tool" if domain else "direct"
            await plans.update_plan(conn, plan_id=plan.id, strategy=strategy)
        return []

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
    """What the planner is offered when it decides: the write tools it may use (it does every
    write itself) and `create_plan`, which names every tool a step may list. Reads are the
    executors' job: their schemas would only make each planner call dearer."""
    offered = offered_tools(planner, registry)
    writes = tool_schemas([tool for tool in offered if tool.access == "write"])
    return [*writes, control_tools.create_plan([tool.name for tool in offered])]


def _arguments(call: ToolCall) -> JsonValue:
    return dict(call.arguments) if call.valid else {"unparsed": call.arguments_json[:2000]}


def _plan_data(draft: PlanDraft, steps: Sequence[PlanStep]) -> dict[str, JsonValue]:
    return {
        "goal": draft.goal,
        "steps": [
            {"step_id": str(s.id), "step_number": s.step_number, "description": s.description,
             "assignee": "executor" if s.executor_required else "planner",
             "depends_on": list(s.depends_on), "tools": list(s.tools)}
            for s in steps
        ],
    }  # fmt: skip
