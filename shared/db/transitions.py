"""One statement per transition: the hot path of an agent run, written in single round trips.

A `Transition` collects what one step of a run changes — the rows it appends (`chat_messages`,
`agent_chat_messages`), one model call's usage, the plan's, a step's, a thread's, an agent's
and the executions' new state, and the events that announce all of it — and `run` writes it
all in one statement (CTEs), sent on a connection with no transaction open, so the statement
is its own transaction: no `BEGIN`/`COMMIT`, and every lock it takes is held for one round
trip. The statement returns what the run needs before its next model or tool call: the rows as
stored, and the plan's control state (`Control`: status, cancel flag, spend) — plus, on
request, the acting agent's row as it is now, which the permission check of the next tool call
decides on. So those checks cost no statement of their own.

Numbering. Every row and every event of the statement takes a number from one block reserved
on the session's counter (`chat_sessions.last_seq`); the same update adds the call's usage to
the session's totals (a row can be updated only once per statement). That row is locked
before the plan's, in every statement that writes both — concurrent runs of one session take
the two locks in the same order, so they queue rather than deadlock. Rows are inserted with
their number (`assign_session_seq` keeps a given `seq`); an event about a row carries the row's
number; the others their own. Numbers follow the order things were added. Events go out with
`parley_private.send_events` (`realtime.send()`): they exist exactly when the rows do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb
from pydantic import JsonValue

from shared.db._rows import record_from_json, records_from_json
from shared.db.database import Connection
from shared.db.leases import FREE, PARKED
from shared.db.plans import ENDED_STEP, SETTLED_STEP, TERMINAL_PLAN, NewStep
from shared.db.prompt_store import STORE_PROMPT, prompt_params
from shared.db.records import (
    Agent,
    AgentMessage,
    AgentStatus,
    AgentThread,
    ChatMessage,
    Execution,
    ExecutionStatus,
    MessageRole,
    Plan,
    PlanStep,
)
from shared.events.emitter import SEND, Outbox, str_or_none
from shared.events.models import Event, EventType
from shared.events.pacing import LOAD_SQL, Load, LoadQuery
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
        self._chat.append({
            "id": str(row_id), "slot": slot, "role": role, "content": content, "model": model,
            **usage.json(), "tool_calls": tool_calls, "tool_call_id": tool_call_id,
            "tool_name": tool_name, "metadata": metadata or {},
            "reasoning_content": reasoning_content,
        })  # fmt: skip
        return row_id, slot

    def agent_message(
        self,
        *,
        thread_id: UUID | None,
        message_type: str,
        content: str = "",
        sender_agent_id: UUID | None = None,
        receiver_agent_id: UUID | None = None,
        tool_name: str | None = None,
        tool_call_id: str | None = None,
        tool_args: dict[str, Any] | None = None,
        model: str | None = None,
        reasoning_content: str | None = None,
    ) -> tuple[UUID, int]:
        """Append an `agent_chat_messages` row (no thread: a denial in the planner's loop).
        The call that wrote it is accounted on its execution (`account`), not on the row."""
        row_id, slot = new_id(), self.number()
        self._dialogue.append(
            {
                "id": str(row_id),
                "slot": slot,
                "agent_session_id": str_or_none(thread_id),
                "sender_agent_id": str_or_none(sender_agent_id),
                "receiver_agent_id": str_or_none(receiver_agent_id),
                "message_type": message_type,
                "content": content,
                "tool_name": tool_name,
                "tool_call_id": tool_call_id,
                "tool_args": tool_args,
                "model": model,
                "reasoning_content": reasoning_content,
            }
        )
        return row_id, slot

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
        self.outbox.add(type, data, plan_id=self.plan_id, agent_id=agent_id, slot=slot,
                        totals_at=totals_at)  # fmt: skip

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
        self._plan = {"status": status, "strategy": strategy, "goal": goal, "error": error,
                      "release": release_lease}  # fmt: skip

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
        self._step = {"step": step_id, "step_status": status, "step_result": result,
                      "step_error": error, "step_agent": assigned_agent_id}  # fmt: skip

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
            {"id": str(step_id), "step_number": s.step_number, "description": s.description,
             "executor_required": s.executor_required, "depends_on": list(s.depends_on),
             "tools": list(s.tools)}
            for step_id, s in zip(ids, steps, strict=True)
        ]  # fmt: skip
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
            "new_agent": agent_id, "agent_session": chat_session_id, "agent_name": name,
            "agent_model": model, "agent_budget": token_budget,
            "agent_tools": list(allowed_tools) if allowed_tools is not None else None,
            "agent_parent": parent_agent_id, **prompt_params(system_prompt),
        }  # fmt: skip
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
            "new_execution": execution_id, "execution_agent": agent_id,
            "execution_role": agent_role, "execution_model": model, "execution_step": step_id,
            "execution_attempt": attempt, "execution_max_turns": max_turns,
            "execution_trace": trace_id,
        }  # fmt: skip
        return execution_id

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
        return Written(
            messages=records_from_json(ChatMessage, row["messages"]),
            dialogue=records_from_json(AgentMessage, row["dialogue"]),
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
        plan = self._plan or {"status": None, "strategy": None, "goal": None, "error": None,
                              "release": False}  # fmt: skip
        return {
            **self.outbox.params(),
            "numbers": self.reserved, "session": self.session_id, "user": self.user_id,
            "plan": self.plan_id, "p": usage.prompt_tokens, "c": usage.completion_tokens,
            "h": usage.cache_hit_tokens, "cost": usage.cost_usd,
            "chat": Jsonb(self._chat), "dialogue": Jsonb(self._dialogue),
            "steps": Jsonb(self._steps), "stored_results": Jsonb(self._stored_results),
            **execution, **plan,
            **(self._step or {"step": None, "step_status": None, "step_result": None,
                              "step_error": None, "step_agent": None}),
            **{k: v for new in self._new.values() for k, v in new.items()},
            **(self._thread or {"thread": None, "turns": 0, "thread_status": None,
                                "thread_error": None}),
            "agent_status_id": self._agent_status[0] if self._agent_status else None,
            "agent_status": self._agent_status[1] if self._agent_status else None,
            "read_agent": self._read_agent,
            **(self._load.params() if self._load is not None else {}),
        }  # fmt: skip

    def _sql(self) -> str:
        ctes = [SESSION_BLOCK, PLAN_UPDATE]
        if self._chat:
            ctes.append(CHAT_ROWS)
        if self._dialogue:
            ctes.append(DIALOGUE_ROWS)
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
        chat = "(SELECT jsonb_agg(to_jsonb(m) ORDER BY m.seq) FROM chat_rows m)"
        dialogue = "(SELECT jsonb_agg(to_jsonb(d) ORDER BY d.seq) FROM dialogue_rows d)"
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
                   {dialogue if self._dialogue else "NULL"} AS dialogue,
                   {step if self._step else "NULL"} AS step,
                   {thread if self._thread or "execution" in self._new else "NULL"} AS thread,
                   {execution if "execution" in self._new else "NULL"} AS execution,
                   {steps if self._steps else "NULL"} AS steps,
                   {agent} AS agent,
                   {"(SELECT load FROM stream_load)" if self._load else "NULL"} AS load
            FROM sess, plan_row, sent"""


NO_EXECUTION: dict[str, Any] = {
    "execution": None, "llm_calls": 0, "tool_calls": 0, "denials": 0, "close": None,
    "error": None, "close_open": False,
}  # fmt: skip
"""The execution parameters of a statement that accounts to no execution (shared: copy it to
change it)."""

TOTALS = """jsonb_build_object(
    'prompt_tokens', plan_row.prompt_tokens, 'completion_tokens', plan_row.completion_tokens,
    'cache_hit_tokens', plan_row.cache_hit_tokens, 'cost_usd', plan_row.cost_usd::text)"""
"""A plan's totals as events carry them (`Usage.json`)."""

SESSION_BLOCK = """sess AS (
    UPDATE chat_sessions SET last_seq = last_seq + %(numbers)s, last_message_at = now(),
        prompt_tokens = prompt_tokens + %(p)s, completion_tokens = completion_tokens + %(c)s,
        cache_hit_tokens = cache_hit_tokens + %(h)s, cost_usd = cost_usd + %(cost)s
    WHERE id = %(session)s
    RETURNING last_seq - %(numbers)s AS base)"""

PLAN_UPDATE = f"""plan_row AS (
    UPDATE agent_plans SET
        prompt_tokens = prompt_tokens + %(p)s, completion_tokens = completion_tokens + %(c)s,
        cache_hit_tokens = cache_hit_tokens + %(h)s, cost_usd = cost_usd + %(cost)s,
        status = coalesce(%(status)s, status),
        strategy = coalesce(%(strategy)s, strategy),
        goal = coalesce(%(goal)s, goal),
        error = coalesce(%(error)s, error),
        started_at = CASE WHEN %(status)s = 'executing' THEN coalesce(started_at, now())
                          ELSE started_at END,
        completed_at = CASE WHEN %(status)s IN {TERMINAL_PLAN} THEN now() ELSE completed_at END,
        lease_owner = CASE WHEN %(release)s THEN NULL ELSE lease_owner END,
        lease_expires_at = CASE WHEN %(release)s THEN NULL ELSE lease_expires_at END
    WHERE id = %(plan)s AND EXISTS (SELECT 1 FROM sess)  -- the session's row is locked first
    RETURNING *)"""

CHAT_ROWS = """chat_rows AS (
    INSERT INTO chat_messages (id, session_id, user_id, seq, role, content, plan_id, model,
        prompt_tokens, completion_tokens, cache_hit_tokens, cost_usd, tool_calls, tool_call_id,
        tool_name, metadata, reasoning_content)
    SELECT r.id, %(session)s, %(user)s, sess.base + r.slot, r.role, r.content, %(plan)s,
        r.model, r.prompt_tokens, r.completion_tokens, r.cache_hit_tokens, r.cost_usd,
        r.tool_calls, r.tool_call_id, r.tool_name, r.metadata, r.reasoning_content
    FROM sess, jsonb_to_recordset(%(chat)s) AS r(id uuid, slot int, role text, content text,
        model text, prompt_tokens int, completion_tokens int, cache_hit_tokens int,
        cost_usd numeric, tool_calls jsonb, tool_call_id text, tool_name text, metadata jsonb,
        reasoning_content text)
    RETURNING *)"""

DIALOGUE_ROWS = """dialogue_rows AS (
    INSERT INTO agent_chat_messages (id, agent_session_id, plan_id, session_id, user_id, seq,
        sender_agent_id, receiver_agent_id, message_type, content, tool_name, tool_call_id,
        tool_args, model, reasoning_content)
    SELECT r.id, r.agent_session_id, %(plan)s, %(session)s, %(user)s, sess.base + r.slot,
        r.sender_agent_id, r.receiver_agent_id, r.message_type, r.content, r.tool_name,
        r.tool_call_id, r.tool_args, r.model, r.reasoning_content
    FROM sess, jsonb_to_recordset(%(dialogue)s) AS r(id uuid, slot int, agent_session_id uuid,
        sender_agent_id uuid, receiver_agent_id uuid, message_type text, content text,
        tool_name text, tool_call_id text, tool_args jsonb, model text, reasoning_content text)
    RETURNING *)"""

EXECUTIONS = """executions_row AS (
    UPDATE agent_executions SET
        llm_calls = llm_calls + CASE WHEN id = %(execution)s THEN %(llm_calls)s ELSE 0 END,
        prompt_tokens = prompt_tokens + CASE WHEN id = %(execution)s THEN %(p)s ELSE 0 END,
        completion_tokens = completion_tokens
            + CASE WHEN id = %(execution)s THEN %(c)s ELSE 0 END,
        cache_hit_tokens = cache_hit_tokens
            + CASE WHEN id = %(execution)s THEN %(h)s ELSE 0 END,
        cost_usd = cost_usd + CASE WHEN id = %(execution)s THEN %(cost)s ELSE 0 END,
        tool_call_count = tool_call_count
            + CASE WHEN id = %(execution)s THEN %(tool_calls)s ELSE 0 END,
        permission_denials = permission_denials
            + CASE WHEN id = %(execution)s THEN %(denials)s ELSE 0 END,
        status = coalesce(%(close)s, status),
        error = CASE WHEN %(close)s IS NOT NULL THEN coalesce(error, %(error)s)
                     WHEN id = %(thread)s::uuid AND %(thread_status)s::text IS NOT NULL
                         THEN coalesce(error, %(thread_error)s::text)
                     ELSE error END,
        finished_at = CASE WHEN %(close)s IS NULL THEN finished_at ELSE now() END,
        turn_count = turn_count + CASE WHEN id = %(thread)s::uuid THEN %(turns)s::int ELSE 0 END,
        thread_status = CASE WHEN id = %(thread)s::uuid
                             THEN coalesce(%(thread_status)s::text, thread_status)
                             ELSE thread_status END
    WHERE id = %(execution)s OR id = %(thread)s::uuid
       OR (%(close_open)s AND plan_id = %(plan)s AND status IN ('pending', 'running'))
    RETURNING *)"""
"""The runs' accounting and, on a step attempt's run, its thread (one update of the row)."""

STEP_UPDATE = f"""step_row AS (
    UPDATE agent_plan_steps SET
        status = %(step_status)s,
        result = coalesce(%(step_result)s, result),
        error = coalesce(%(step_error)s, error),
        assigned_agent_id = coalesce(%(step_agent)s, assigned_agent_id),
        started_at = CASE WHEN %(step_status)s = 'running' THEN coalesce(started_at, now())
                          ELSE started_at END,
        completed_at = CASE WHEN %(step_status)s IN {ENDED_STEP} THEN now()
                            ELSE completed_at END,
        lease_owner = CASE WHEN %(step_status)s IN {SETTLED_STEP} THEN NULL
                           ELSE lease_owner END,
        lease_expires_at = CASE WHEN %(step_status)s IN {SETTLED_STEP} THEN NULL
                                ELSE lease_expires_at END
    WHERE id = %(step)s
    RETURNING *)"""

AGENT_STATUS = """agent_status_row AS (
    UPDATE agents SET status = %(agent_status)s,
        completed_at = CASE WHEN %(agent_status)s IN ('completed', 'failed') THEN now() END
    WHERE id = %(agent_status_id)s
    RETURNING id)"""

STEP_ROWS = """step_rows AS (
    INSERT INTO agent_plan_steps (id, plan_id, user_id, step_number, description,
                                  executor_required, depends_on, tools)
    SELECT s.id, %(plan)s, %(user)s, s.step_number, s.description, s.executor_required,
           s.depends_on, s.tools
    FROM jsonb_to_recordset(%(steps)s) AS s(id uuid, step_number int, description text,
         executor_required bool, depends_on int[], tools text[])
    RETURNING *)"""

NEW_ROWS = {
    "agent": """new_agent AS (
        INSERT INTO agents (id, user_id, chat_session_id, role, name, model, permissions,
                            token_budget, allowed_tools, parent_agent_id, prompt_id)
        VALUES (%(new_agent)s, %(user)s, %(agent_session)s, 'executor', %(agent_name)s,
                %(agent_model)s, 'read_only', %(agent_budget)s, %(agent_tools)s,
                %(agent_parent)s, %(prompt_id)s)
        RETURNING *)""",
    "execution": """new_execution AS (
        INSERT INTO agent_executions (id, user_id, plan_id, step_id, agent_id,
            agent_session_id, agent_role, model, attempt, status, started_at, trace_id,
            turn_count, max_turns, thread_status)
        VALUES (%(new_execution)s, %(user)s, %(plan)s, %(execution_step)s,
                %(execution_agent)s, %(new_execution)s, %(execution_role)s,
                %(execution_model)s, %(execution_attempt)s, 'running', now(),
                %(execution_trace)s, 0, %(execution_max_turns)s, 'active')
        RETURNING *)""",
}
"""The rows a step attempt opens with (`new_agent` only for an executor's step): its run holds
its thread."""


def thread_json(run: str, plan: str) -> str:
    """The thread (`agent_chat_sessions`' columns, as JSON) that the run row `run` of the plan
    row `plan` holds — for rows this statement wrote, which the view does not see yet."""
    return f"""jsonb_build_object('id', {run}.id, 'session_id', {plan}.session_id,
        'user_id', {run}.user_id, 'plan_id', {run}.plan_id, 'step_id', {run}.step_id,
        'parent_agent_id', {plan}.planner_agent_id, 'child_agent_id', {run}.agent_id,
        'status', {run}.thread_status, 'turn_count', {run}.turn_count,
        'max_turns', {run}.max_turns, 'error', {run}.error, 'created_at', {run}.created_at,
        'completed_at', CASE WHEN {run}.thread_status <> 'active' THEN {run}.finished_at END)"""


APPROVALS_CANCELLED = """approvals_cancelled AS (
    UPDATE agent_approvals SET status = 'cancelled', decided_at = now()
    WHERE plan_id = %(plan)s AND status = 'pending'
    RETURNING id)"""

RECEIPTS_NAMED = """receipts_named AS (
    UPDATE parley_private.tool_call_receipts r SET result = NULL
    FROM jsonb_each(%(stored_results)s) AS stored(call_id, payload)
    WHERE r.plan_id = %(plan)s AND r.tool_call_id = stored.call_id
      AND r.result = stored.payload
    RETURNING r.tool_call_id)"""
"""Write receipts whose result the statement's rows hold now: the copy goes (`db.receipts`
reads it from the row)."""

STREAM_ENDED = """stream_ended AS (
    UPDATE parley_private.realtime_streams SET ended_at = now(), expires_at = now()
    WHERE plan_id = %(plan)s AND ended_at IS NULL
    RETURNING plan_id)"""

STREAM_LOAD = f"stream_load AS (SELECT {LOAD_SQL} AS load)"

SENT = f"""sent AS (
    SELECT {SEND}, (SELECT base FROM sess), (SELECT {TOTALS} FROM plan_row)) AS seqs)"""


# --- opening a planner's run ---------------------------------------------------------------


def _planner_execution(plans: str, *, when: str = "true") -> str:
    """The CTEs `new_execution` and `execution`: the planner's plan-level execution of the
    plan the CTE `plans` holds (made on first use, in the plan's trace), when the SQL condition
    `when` holds."""
    return f"""new_execution AS (
    INSERT INTO agent_executions (user_id, plan_id, agent_id, agent_role, model, attempt,
                                  status, started_at, trace_id)
    SELECT p.user_id, p.id, a.id, 'planner', a.model, 1, 'running', now(), p.trace_id
    FROM {plans} p JOIN agents a ON a.id = p.planner_agent_id
    WHERE {when}
    ON CONFLICT ON CONSTRAINT agent_executions_attempt DO NOTHING
    RETURNING *),
execution AS (
    SELECT * FROM new_execution
    UNION ALL
    SELECT e.* FROM agent_executions e, {plans} p
    WHERE {when} AND e.plan_id = p.id AND e.attempt = 1 AND e.step_id IS NULL
      AND e.agent_role = 'planner'
      AND NOT EXISTS (SELECT 1 FROM new_execution))"""


@dataclass(frozen=True, slots=True)
class OpenedPlan:
    """A plan leased to a run, with everything its planner needs, read in the same statement."""

    plan: Plan
    was_parked: bool
    """The plan was waiting for steps handed to a queue (its lease parked)."""
    planner: Agent
    execution: Execution | None
    """The planner's execution (None when the run announced nothing: no model to call)."""
    request: ChatMessage
    turn: list[ChatMessage]
    """The plan's own messages so far (a resumed run's), in order."""
    past: list[ChatMessage]
    """The conversation before the request: user messages and final answers, oldest first."""
    steps: list[PlanStep]
    events: list[Event]
    tokens_last: int | None
    load: Load | None = None
    """The project's Realtime load, read as the first call's stream was registered."""


OPEN_PLAN = f"""
WITH session_lock AS (  -- the session's row first, as every statement that writes both does
    SELECT s.id FROM chat_sessions s JOIN agent_plans p ON p.session_id = s.id
    WHERE p.id = %(plan)s FOR UPDATE OF s),
prior AS (
    SELECT lease_owner AS prior_owner FROM agent_plans
    WHERE id = %(plan)s AND EXISTS (SELECT 1 FROM session_lock) FOR UPDATE),
leased AS (
    UPDATE agent_plans SET lease_owner = %(owner)s,
        lease_expires_at = now() + make_interval(secs => %(seconds)s),
        status = CASE WHEN prior.prior_owner = '{PARKED}' THEN agent_plans.status
                      ELSE 'executing' END,
        started_at = coalesce(started_at, now()),
        trace_id = coalesce(agent_plans.trace_id, %(trace)s)
    FROM prior
    WHERE id = %(plan)s AND ({FREE}) AND status NOT IN {TERMINAL_PLAN}
    RETURNING agent_plans.*, prior.prior_owner IS NOT DISTINCT FROM '{PARKED}' AS was_parked),
{_planner_execution("leased", when="%(announce)s")},
sess AS (
    UPDATE chat_sessions SET last_seq = last_seq + %(numbers)s, last_message_at = now()
    FROM leased l WHERE chat_sessions.id = l.session_id AND %(announce)s AND NOT l.was_parked
    RETURNING last_seq - %(numbers)s AS base),
sent AS (
    SELECT parley_private.send_events(l.session_id, jsonb_build_array(jsonb_build_object(
        'type', 'status_update', 'session_id', l.session_id, 'plan_id', l.id,
        'agent_id', l.planner_agent_id, 'seq', s.base + 1, 'ts', %(ts)s::text,
        'data', jsonb_build_object('status', 'thinking'))), %(private)s) AS seqs
    FROM leased l, sess s),
stream_load AS (  -- the first call streams: its stream registered, the Realtime load read
    SELECT {LOAD_SQL} AS load FROM sess WHERE %(load_plan)s::uuid IS NOT NULL)
SELECT to_jsonb(l) AS plan, l.was_parked, (SELECT base FROM sess) AS base,
    (SELECT seqs FROM sent) AS seqs, (SELECT load FROM stream_load) AS load,
    (SELECT to_jsonb(a) FROM agents a WHERE a.id = l.planner_agent_id) AS planner,
    (SELECT to_jsonb(e) FROM execution e LIMIT 1) AS execution,
    (SELECT to_jsonb(r) FROM chat_messages r WHERE r.id = l.user_message_id) AS request,
    (SELECT jsonb_agg(to_jsonb(m) ORDER BY m.seq) FROM chat_messages m
     WHERE m.plan_id = l.id) AS turn,
    (SELECT jsonb_agg(to_jsonb(h) ORDER BY h.seq) FROM (
        SELECT * FROM chat_messages h
        WHERE h.session_id = l.session_id
          AND h.seq < (SELECT seq FROM chat_messages WHERE id = l.user_message_id)
          AND (h.role = 'user' OR (h.role = 'assistant' AND h.metadata->>'kind' = 'answer'))
        ORDER BY h.seq DESC LIMIT %(history)s) h) AS past,
    (SELECT jsonb_agg(to_jsonb(s) ORDER BY s.step_number) FROM agent_plan_steps s
     WHERE s.plan_id = l.id) AS steps
FROM leased l"""


async def open_planner_run(
    conn: Connection,
    *,
    plan_id: UUID,
    owner: str,
    seconds: float,
    announce: bool,
    private: bool,
    tokens: int,
    history: int,
    trace_id: str | None = None,
    load: LoadQuery | None = None,
) -> OpenedPlan | None:
    """Lease the plan to `owner` and mark it `executing` (in trace `trace_id` if it has none
    yet: made while tracing was off), and read all the planner needs — one statement. With
    `announce` (a model can be called), it also makes sure the planner has its execution
    (in the plan's trace), sends `status_update{thinking}` and reserves `tokens` numbers for
    the first streamed call (with `load`: registers its stream and reads the Realtime load).

    None when another run holds the plan, or it has ended. A parked plan (waiting for steps
    handed to a queue) is leased as it stands: nothing is sent, nothing reserved."""
    numbers = 1 + tokens
    ts = datetime.now(UTC)
    cur = await conn.execute(
        OPEN_PLAN,
        {"plan": plan_id, "owner": owner, "seconds": seconds, "numbers": numbers,
         "history": history, "announce": announce, "private": private, "trace": trace_id,
         "ts": ts.isoformat().replace("+00:00", "Z"), **_load_params(load)},
    )  # fmt: skip
    row = await cur.fetchone()
    if row is None:
        return None
    plan = record_from_json(Plan, row["plan"])
    planner = record_from_json(Agent, row["planner"])
    events: list[Event] = []
    if row["base"] is not None:
        events.append(Event(
            type="status_update", session_id=plan.session_id, plan_id=plan.id,
            agent_id=planner.id, seq=int(row["base"]) + 1, ts=ts, data={"status": "thinking"},
        ))  # fmt: skip
    return OpenedPlan(
        plan=plan,
        was_parked=bool(row["was_parked"]),
        planner=planner,
        execution=record_from_json(Execution, row["execution"]) if row["execution"] else None,
        request=record_from_json(ChatMessage, row["request"]),
        turn=records_from_json(ChatMessage, row["turn"]),
        past=records_from_json(ChatMessage, row["past"]),
        steps=records_from_json(PlanStep, row["steps"]),
        events=events,
        tokens_last=int(row["base"]) + numbers if row["base"] is not None and tokens else None,
        load=Load.of(row["load"]),
    )


def _load_params(load: LoadQuery | None) -> dict[str, Any]:
    """`LOAD_SQL`'s parameters, all null when no stream is registered (the CTE reads none)."""
    if load is not None:
        return load.params()
    keys = ("load_plan", "load_seconds", "load_window", "load_private", "load_cap")
    return dict.fromkeys(keys)


# --- claiming a step ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClaimedStep:
    """A step as one statement found it, leased to the claiming run if `leased`."""

    step: PlanStep
    leased: bool
    plan: Plan
    execution: Execution | None
    """The attempt's execution, if it started."""
    agent: Agent | None
    thread: AgentThread | None
    messages: list[AgentMessage]
    """The attempt's thread, as stored (a resumed attempt's conversation)."""
    decided_at: datetime | None
    """When the user last decided something for the step."""
    dependencies: list[PlanStep]
    request: str | None
    """The user's message (what a plan without a goal is about)."""
    planner: Agent
    """The plan's planner (it works the plan's own write steps)."""


CLAIM_STEP = f"""
WITH step AS (
    SELECT * FROM agent_plan_steps WHERE id = %(step)s FOR UPDATE),
leased AS (
    UPDATE agent_plan_steps s SET lease_owner = %(owner)s,
        lease_expires_at = now() + make_interval(secs => %(seconds)s)
    FROM step
    WHERE s.id = step.id AND (step.executor_required OR NOT %(executor_only)s)
      AND step.status NOT IN {ENDED_STEP}
      AND (s.lease_owner IS NULL OR s.lease_expires_at <= now() OR s.lease_owner = %(owner)s)
    RETURNING s.*),
attempt AS (
    SELECT e.* FROM agent_executions e, step
    WHERE e.plan_id = step.plan_id AND e.step_id = step.id AND e.attempt = %(attempt)s)
SELECT coalesce((SELECT to_jsonb(l) FROM leased l), to_jsonb(step)) AS step,
    EXISTS (SELECT 1 FROM leased) AS leased,
    to_jsonb(p) AS plan,
    (SELECT to_jsonb(e) FROM attempt e) AS execution,
    (SELECT to_jsonb(a) FROM agents a, attempt e WHERE a.id = e.agent_id) AS agent,
    (SELECT to_jsonb(t) FROM agent_chat_sessions t, attempt e WHERE t.id = e.id) AS thread,
    (SELECT jsonb_agg(to_jsonb(m) ORDER BY m.seq) FROM agent_chat_messages m, attempt e
     WHERE m.plan_id = e.plan_id AND m.agent_session_id = e.agent_session_id) AS messages,
    (SELECT max(decided_at) FROM agent_approvals
     WHERE step_id = step.id AND status IN ('approved', 'rejected', 'answered')) AS decided_at,
    (SELECT jsonb_agg(to_jsonb(d) ORDER BY d.step_number) FROM agent_plan_steps d
     WHERE d.plan_id = step.plan_id AND d.step_number = ANY(step.depends_on)) AS dependencies,
    (SELECT content FROM chat_messages WHERE id = p.user_message_id) AS request,
    (SELECT to_jsonb(a) FROM agents a WHERE a.id = p.planner_agent_id) AS planner
FROM step JOIN agent_plans p ON p.id = step.plan_id"""


async def claim_step(
    conn: Connection,
    *,
    step_id: UUID,
    attempt: int,
    owner: str,
    seconds: float,
    executor_only: bool,
) -> ClaimedStep | None:
    """Lease the step to `owner` unless it has ended or another run holds it (or, with
    `executor_only`, it is the planner's own), and read what working on it needs — one
    statement. None when there is no such step."""
    cur = await conn.execute(
        CLAIM_STEP,
        {"step": step_id, "attempt": attempt, "owner": owner, "seconds": seconds,
         "executor_only": executor_only},
    )  # fmt: skip
    row = await cur.fetchone()
    if row is None:
        return None
    return ClaimedStep(
        step=record_from_json(PlanStep, row["step"]),
        leased=bool(row["leased"]),
        plan=record_from_json(Plan, row["plan"]),
        execution=record_from_json(Execution, row["execution"]) if row["execution"] else None,
        agent=record_from_json(Agent, row["agent"]) if row["agent"] else None,
        thread=record_from_json(AgentThread, row["thread"]) if row["thread"] else None,
        messages=records_from_json(AgentMessage, row["messages"]),
        decided_at=row["decided_at"],
        dependencies=records_from_json(PlanStep, row["dependencies"]),
        request=row["request"],
        planner=record_from_json(Agent, row["planner"]),
    )


# --- the planner answering a question ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PlannerView:
    """What the planner answers an executor's question from, read in one statement."""

    plan: Plan
    planner: Agent
    execution: Execution
    """The planner's plan-level execution (it pays for the answer)."""
    request: str | None
    steps: list[PlanStep]


PLANNER_VIEW = f"""
WITH plan AS (SELECT * FROM agent_plans WHERE id = %(plan)s),
{_planner_execution("plan")}
SELECT to_jsonb(p) AS plan,
    (SELECT to_jsonb(a) FROM agents a WHERE a.id = p.planner_agent_id) AS planner,
    (SELECT to_jsonb(e) FROM execution e LIMIT 1) AS execution,
    (SELECT content FROM chat_messages WHERE id = p.user_message_id) AS request,
    (SELECT jsonb_agg(to_jsonb(s) ORDER BY s.step_number) FROM agent_plan_steps s
     WHERE s.plan_id = p.id) AS steps
FROM plan p"""


async def planner_view(conn: Connection, *, plan_id: UUID) -> PlannerView | None:
    """The plan, its planner (with its plan-level execution, made if need be), the user's
    request and the steps so far — one statement. None when the plan or planner is gone."""
    cur = await conn.execute(PLANNER_VIEW, {"plan": plan_id})
    row = await cur.fetchone()
    if row is None or row["planner"] is None or row["execution"] is None:
        return None
    return PlannerView(
        plan=record_from_json(Plan, row["plan"]),
        planner=record_from_json(Agent, row["planner"]),
        execution=record_from_json(Execution, row["execution"]),
        request=row["request"],
        steps=records_from_json(PlanStep, row["steps"]),
    )
