"""One statement per transition: the hot path of an agent run, written in single round trips.

A `Transition` collects what one step of a run changes — the rows it appends (`chat_messages`,
`agent_chat_messages`), one model call's usage, the plan's, a step's, a thread's, an agent's
and the executions' new state, and the events that announce all of it — and `run` writes it
all in one statement (CTEs from `transition_sql`), sent on a connection with no transaction
open, so the statement is its own transaction: no `BEGIN`/`COMMIT`, and every lock it takes is
held for one round trip. The statement returns what the run needs before its next model or
tool call: the rows as stored, and the plan's control state (`Control`: status, cancel flag,
spend) — plus, on request, the acting agent's row as it is now, which the permission check of
the next tool call decides on. So those checks cost no statement of their own.

Numbering. Every row and every event of the statement takes a number from one block reserved
on the session's counter (`chat_sessions.last_seq`); the same update adds the call's usage to
the session's totals (a row can be updated only once per statement). That row is locked
before the plan's, in every statement that writes both — concurrent runs of one session take
the two locks in the same order, so they queue rather than deadlock. Rows are inserted with
their number (`assign_session_seq` keeps a given `seq`); an event about a row carries the row's
number; the others their own. Numbers follow the order things were added. Events go out with
`parley_private.send_events` (`realtime.send()`): they exist exactly when the rows do.

The runs' other single statements: `planner_runs` (a planner run opened, the planner's view of
a plan) and `step_claims` (a step attempt claimed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb
from pydantic import JsonValue

from shared.db._rows import record_from_json, records_from_json
from shared.db.chats import as_json, stored_metadata
from shared.db.database import Connection
from shared.db.plans import NewStep
from shared.db.prompt_store import STORE_PROMPT, prompt_params
from shared.db.records import (
    Agent,
    AgentMessage,
    AgentStatus,
    AgentThread,
    ChatMessage,
    DialogueEntry,
    Execution,
    ExecutionStatus,
    MessageRole,
    Plan,
    PlanStep,
)
from shared.db.transition_sql import (
    AGENT_STATUS,
    ANSWERED_ROWS,
    APPROVALS_CANCELLED,
    CHAT_ROWS,
    DIALOGUE_ROWS,
    EXECUTIONS,
    NEW_ROWS,
    NO_EXECUTION,
    PLAN_UPDATE,
    RECEIPTS_NAMED,
    SENT,
    SESSION_BLOCK,
    STEP_ROWS,
    STEP_UPDATE,
    STREAM_ENDED,
    STREAM_LOAD,
    TOTALS,
    thread_json,
)
from shared.events.emitter import Outbox, str_or_none
from shared.events.models import Event, EventType
from shared.events.pacing import Load, LoadQuery
from shared.kernel.ids import new_id
from shared.kernel.usage import Usage


@dataclass(frozen=True, slots=True)
class Control:
    """A plan's state as a statement left it: what the checks before a call decide on."""

    status: str
    cancel_requested: bool
    cost_usd: Decimal

    @classmethod
    def of(cls, plan: Plan) -> Control:
        return cls(plan.status, plan.cancel_requested_at is not None, plan.cost_usd)


@dataclass(frozen=True, slots=True)
class Written:
    """What a transition's statement stored and sent."""

    messages: list[ChatMessage]
    dialogue: list[AgentMessage]
    plan: Plan
    events: list[Event]
    agent: Agent | None
    step: PlanStep | None
    thread: AgentThread | None
    execution: Execution | None
    steps: list[PlanStep]
    tokens_last: int | None
    """The last number reserved for the next streamed call's tokens (None: none reserved)."""
    load: Load | None = None
    """The project's Realtime load, read as the statement registered the call's stream."""

    @property
    def control(self) -> Control:
        return Control.of(self.plan)


@dataclass(slots=True)
class Transition:
    """One transition of a run, built up, then written by `run` in one statement."""

    session_id: UUID
    user_id: UUID
    plan_id: UUID
    outbox: Outbox
    numbers: int = 0
    _chat: list[dict[str, Any]] = field(default_factory=list)
    _dialogue: list[dict[str, Any]] = field(default_factory=list)
    _answers: list[dict[str, Any]] = field(default_factory=list)
    _usage: Usage = field(default_factory=Usage)
    _execution: dict[str, Any] | None = None
    _plan: dict[str, Any] = field(default_factory=dict)
    _step: dict[str, Any] | None = None
    _thread: dict[str, Any] | None = None
    _agent_status: tuple[UUID, AgentStatus] | None = None
    _read_agent: UUID | None = None
    _tokens: int = 0
    _load: LoadQuery | None = None
    _end_stream: bool = False
    _steps: list[dict[str, Any]] = field(default_factory=list)
    _cancel_approvals: bool = False
    _stored_results: dict[str, Any] = field(default_factory=dict)
    _new: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def reserved(self) -> int:
        """The numbers the statement reserves: its rows' and events', then the tokens'."""
        return self.numbers + self._tokens

    def number(self) -> int:
        """The next number of the statement's block (an offset from its base)."""
        self.numbers += 1
        return self.numbers

    def chat_message(
        self,
        *,
        role: MessageRole,
        content: str,
        model: str | None = None,
        usage: Usage | None = None,
        tool_calls: list[dict[str, Any]] | None = None,
        tool_call_id: str | None = None,
        tool_name: str | None = None,
        metadata: dict[str, Any] | None = None,
        reasoning_content: str | None = None,
    ) -> tuple[UUID, int]:
        """Append a `chat_messages` row of the plan; returns its id and number."""
        row_id, slot, usage = new_id(), self.number(), usage or Usage()
        self._chat.append(
            {
                "id": str(row_id),
                "slot": slot,
                "role": role,
                "content": content,
                "model": model,
                **usage.json(),
                "tool_calls": tool_calls,
                "tool_call_id": tool_call_id,
                "tool_name": tool_name,
                "metadata": stored_metadata(role, tool_calls, metadata),
                "reasoning_content": reasoning_content,
            }
        )
        return row_id, slot

    def agent_message(self, entry: DialogueEntry, *, thread_id: UUID | None) -> tuple[UUID, int]:
        """Append an `agent_chat_messages` row (no thread: a denial in the planner's loop).
        The call that wrote it is accounted on its execution (`account`), not on the row."""
        row_id, slot = new_id(), self.number()
        row = {"id": str(row_id), "slot": slot, "agent_session_id": str_or_none(thread_id)}
        for name, value in entry._asdict().items():
            row[name] = str_or_none(value) if isinstance(value, UUID) else value
        self._dialogue.append(row)
        return row_id, slot

    def answer_call(self, call_row: UUID, content: str) -> int:
        """Store a tool call's result in the call's own `tool_call` row (`call_row`), which
        becomes its `tool_result`: one row for the call and its result instead of two. The row
        keeps its sender, receiver and arguments and takes the result's number (returned), so
        a reader catching up after the call's number reads it again, answered."""
        slot = self.number()
        self._answers.append({"id": str(call_row), "slot": slot, "content": content})
        return slot

    def event(
        self,
        type: EventType,
        data: dict[str, JsonValue],
        *,
        agent_id: UUID | None,
        row: int | None = None,
        totals_at: str | None = None,
    ) -> None:
        """An event of the plan: about a row added here (`row`: its number), or with a number
        of its own; `totals_at` puts the plan's totals (as this statement leaves them) there."""
        slot = row if row is not None else self.number()
        self.outbox.add(
            type, data, plan_id=self.plan_id, agent_id=agent_id, slot=slot, totals_at=totals_at
        )

    def account(
        self,
        execution_id: UUID,
        usage: Usage = Usage(),  # noqa: B008 - frozen
        *,
        llm_calls: int = 0,
        tool_calls: int = 0,
        denials: int = 0,
        close: ExecutionStatus | None = None,
        error: str | None = None,
        close_open: bool = False,
    ) -> None:
        """Add to an execution's counters (a model call's usage also goes to the plan and the
        session); `close` ends it, `close_open` ends the plan's other open executions too.
        One execution per statement: counters add up over calls."""
        self._usage = self._usage + usage
        current = self._execution or {**NO_EXECUTION, "execution": execution_id}
        assert current["execution"] == execution_id, "one execution per statement"
        current["llm_calls"] += llm_calls
        current["tool_calls"] += tool_calls
        current["denials"] += denials
        if close is not None:
            current["close"], current["error"] = close, error
        current["close_open"] = current["close_open"] or close_open
        self._execution = current

    def set_plan(
        self,
        *,
        status: str | None = None,
        strategy: str | None = None,
        goal: str | None = None,
        error: str | None = None,
        release_lease: bool = False,
    ) -> None:
        """Change the plan's row (its usage is added anyway); `release_lease` gives the run's
        lease back (a run that settles the plan)."""
        self._plan = {
            "status": status,
            "strategy": strategy,
            "goal": goal,
            "error": error,
            "release": release_lease,
        }

    def set_step(
        self,
        step_id: UUID,
        *,
        status: str,
        result: str | None = None,
        error: str | None = None,
        assigned_agent_id: UUID | None = None,
    ) -> None:
        """Move a step to `status` (a settled one gives its lease back)."""
        self._step = {
            "step": step_id,
            "step_status": status,
            "step_result": result,
            "step_error": error,
            "step_agent": assigned_agent_id,
        }

    def set_thread(
        self,
        thread_id: UUID,
        *,
        turns: int = 0,
        status: str | None = None,
        error: str | None = None,
    ) -> None:
        """Count turns on a thread and/or close it (a completed thread's result is its
        step's). The thread is its run's row: with `account` on that run, one update does
        both."""
        self._thread = {
            "thread": thread_id,
            "turns": turns,
            "thread_status": status,
            "thread_error": error,
        }

    def set_agent_status(self, agent_id: UUID, status: AgentStatus) -> None:
        self._agent_status = (agent_id, status)

    def add_steps(self, steps: Sequence[NewStep]) -> list[UUID]:
        """Store the plan's steps (validated already); returns their ids, in order."""
        ids = [new_id() for _ in steps]
        self._steps = [
            {
                "id": str(step_id),
                "step_number": s.step_number,
                "description": s.description,
                "executor_required": s.executor_required,
                "depends_on": list(s.depends_on),
                "tools": list(s.tools),
            }
            for step_id, s in zip(ids, steps, strict=True)
        ]
        return ids

    def new_agent(
        self,
        *,
        chat_session_id: UUID,
        name: str,
        model: str,
        token_budget: int,
        allowed_tools: Sequence[str] | None,
        parent_agent_id: UUID,
        system_prompt: str,
    ) -> UUID:
        """An executor's `agents` row (`read_only`: the row decides what it may do)."""
        agent_id = new_id()
        self._new["agent"] = {
            "new_agent": agent_id,
            "agent_session": chat_session_id,
            "agent_name": name,
            "agent_model": model,
            "agent_budget": token_budget,
            "agent_tools": list(allowed_tools) if allowed_tools is not None else None,
            "agent_parent": parent_agent_id,
            **prompt_params(system_prompt),
        }
        return agent_id

    def new_execution(
        self,
        *,
        agent_id: UUID,
        agent_role: str,
        model: str,
        step_id: UUID,
        attempt: int,
        max_turns: int,
        trace_id: str | None = None,
    ) -> UUID:
        """A step attempt's `agent_executions` row, `running` (unique on step and attempt), with
        the trace of the invocation opening it — and its thread (`agent_chat_sessions`: the
        run's id), `active`, of at most `max_turns` turns."""
        execution_id = new_id()
        self._new["execution"] = {
            "new_execution": execution_id,
            "execution_agent": agent_id,
            "execution_role": agent_role,
            "execution_model": model,
            "execution_step": step_id,
            "execution_attempt": attempt,
            "execution_max_turns": max_turns,
            "execution_trace": trace_id,
            "delegation_slot": None,
            "delegation_rest": None,
        }
        return execution_id

    def delegate(self, rest: str | None) -> int:
        """The new step attempt's delegation, held by its run (`new_execution`): its number
        (returned: its `agent_message` event's), and what it says after the opening its step
        and plan hold (`db.delegations`)."""
        slot = self.number()
        self._new["execution"] |= {"delegation_slot": slot, "delegation_rest": rest}
        return slot

    def result_stored(self, call_id: str, payload: dict[str, Any]) -> None:
        """The row this statement stores holds `payload`, the result of the write call
        `call_id`: its receipt names the row instead of keeping a copy (`db.receipts`) — when
        the receipt holds exactly that result."""
        self._stored_results[call_id] = payload

    def cancel_pending_approvals(self) -> None:
        """Close the plan's undecided approvals `cancelled` (the plan ends)."""
        self._cancel_approvals = True

    def read_agent(self, agent_id: UUID) -> None:
        """Return this agent's row as it is when the statement runs (a permission check)."""
        self._read_agent = agent_id

    def reserve_tokens(self, count: int, load: LoadQuery | None = None) -> None:
        """Reserve `count` numbers, after everything else, for the next call's tokens; with
        `load`, register the plan's stream and read the project's Realtime load too."""
        self._tokens = count
        self._load = load

    def end_stream(self) -> None:
        """The plan's streamed call has ended (its stream stops counting; its last batch is
        counted among the streams ended lately)."""
        self._end_stream = True

    async def run(self, conn: Connection) -> Written:
        """Write everything in one statement; `conn` must have no transaction open."""
        params = self._params()
        cur = await conn.execute(self._sql(), params)
        row = await cur.fetchone()
        assert row is not None, "the plan or its session is gone"
        plan = record_from_json(Plan, row["plan"])
        totals = row["totals"]
        dialogue = records_from_json(AgentMessage, row["dialogue"])
        answered = {UUID(answer["id"]) for answer in self._answers}
        if not answered <= {message.id for message in dialogue}:
            raise LookupError(f"a tool call's row to answer is gone: {answered}")
        return Written(
            messages=records_from_json(ChatMessage, row["messages"]),
            dialogue=dialogue,
            plan=plan,
            events=self.outbox.stamped(row["seqs"], totals) if self.outbox else [],
            agent=record_from_json(Agent, row["agent"]) if row["agent"] else None,
            step=record_from_json(PlanStep, row["step"]) if row["step"] else None,
            thread=record_from_json(AgentThread, row["thread"]) if row["thread"] else None,
            execution=record_from_json(Execution, row["execution"]) if row["execution"] else None,
            steps=records_from_json(PlanStep, row["steps"]),
            tokens_last=int(row["base"]) + self.reserved if self._tokens else None,
            load=Load.of(row["load"]) if self._load is not None else None,
        )

    # --- the statement ------------------------------------------------------------------

    def _params(self) -> dict[str, Any]:
        usage = self._usage
        execution = self._execution or NO_EXECUTION
        plan = self._plan or {
            "status": None,
            "strategy": None,
            "goal": None,
            "error": None,
            "release": False,
        }
        return {
            **self.outbox.params(),
            "numbers": self.reserved,
            "session": self.session_id,
            "user": self.user_id,
            "plan": self.plan_id,
            "p": usage.prompt_tokens,
            "c": usage.completion_tokens,
            "h": usage.cache_hit_tokens,
            "cost": usage.cost_usd,
            "chat": Jsonb(self._chat),
            "dialogue": Jsonb(self._dialogue),
            "answers": Jsonb(self._answers),
            "steps": Jsonb(self._steps),
            "stored_results": Jsonb(self._stored_results),
            **execution,
            **plan,
            **(
                self._step
                or {
                    "step": None,
                    "step_status": None,
                    "step_result": None,
                    "step_error": None,
                    "step_agent": None,
                }
            ),
            **{k: v for new in self._new.values() for k, v in new.items()},
            **(
                self._thread
                or {"thread": None, "turns": 0, "thread_status": None, "thread_error": None}
            ),
            "agent_status_id": self._agent_status[0] if self._agent_status else None,
            "agent_status": self._agent_status[1] if self._agent_status else None,
            "read_agent": self._read_agent,
            **(self._load.params() if self._load is not None else {}),
        }

    def _sql(self) -> str:
        ctes = [SESSION_BLOCK, PLAN_UPDATE]
        if self._chat:
            ctes.append(CHAT_ROWS)
        if self._dialogue:
            ctes.append(DIALOGUE_ROWS)
        if self._answers:
            ctes.append(ANSWERED_ROWS)
        if self._execution or self._thread:
            ctes.append(EXECUTIONS)
        if self._step:
            ctes.append(STEP_UPDATE)
        if self._agent_status:
            ctes.append(AGENT_STATUS)
        if self._steps:
            ctes.append(STEP_ROWS)
        if self._cancel_approvals:
            ctes.append(APPROVALS_CANCELLED)
        if self._stored_results:
            ctes.append(RECEIPTS_NAMED)
        if "agent" in self._new:
            ctes.append(STORE_PROMPT)
        ctes += [NEW_ROWS[kind] for kind in ("agent", "execution") if kind in self._new]
        if self._end_stream:
            ctes.append(STREAM_ENDED)
        if self._load is not None:
            ctes.append(STREAM_LOAD)
        ctes.append(SENT if self.outbox else "sent AS (SELECT NULL::bigint[] AS seqs)")
        chat = f"(SELECT jsonb_agg({as_json('m')} ORDER BY m.seq) FROM chat_rows m)"
        stored = " UNION ALL ".join(
            f"SELECT * FROM {cte}"
            for cte, used in (("dialogue_rows", self._dialogue), ("answered_rows", self._answers))
            if used
        )
        dialogue = f"(SELECT jsonb_agg(to_jsonb(d) ORDER BY d.seq) FROM ({stored}) d)"
        step = "(SELECT to_jsonb(s) FROM step_row s)"
        thread = f"(SELECT {thread_json('t', 'plan_row')} FROM executions_row t "
        thread += "WHERE t.id = %(thread)s::uuid)"
        if "execution" in self._new:
            thread = f"(SELECT {thread_json('t', 'plan_row')} FROM new_execution t)"
        execution = "(SELECT to_jsonb(e) FROM new_execution e)"
        agent = "(SELECT to_jsonb(a) FROM agents a WHERE a.id = %(read_agent)s)"
        if "agent" in self._new:
            agent = "(SELECT to_jsonb(a) FROM new_agent a)"
        steps = "(SELECT jsonb_agg(to_jsonb(s) ORDER BY s.step_number) FROM step_rows s)"
        return f"""WITH {", ".join(ctes)}
            SELECT sess.base, sent.seqs, to_jsonb(plan_row) AS plan, {TOTALS} AS totals,
                   {chat if self._chat else "NULL"} AS messages,
                   {dialogue if self._dialogue or self._answers else "NULL"} AS dialogue,
                   {step if self._step else "NULL"} AS step,
                   {thread if self._thread or "execution" in self._new else "NULL"} AS thread,
                   {execution if "execution" in self._new else "NULL"} AS execution,
                   {steps if self._steps else "NULL"} AS steps,
                   {agent} AS agent,
                   {"(SELECT load FROM stream_load)" if self._load else "NULL"} AS load
            FROM sess, plan_row, sent"""
