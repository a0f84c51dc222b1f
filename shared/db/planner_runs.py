"""A planner run's statements: opening it — the plan leased, its history, its steps and the
stream's load, in one round trip (`open_planner_run`) — and the planner's view of a plan
(`planner_view`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from uuid import UUID

from shared.db._rows import record_from_json, records_from_json
from shared.db.chats import as_json, kind
from shared.db.database import Connection
from shared.db.leases import FREE, PARKED
from shared.db.plans import TERMINAL_PLAN
from shared.db.records import (
    Agent,
    ChatMessage,
    Execution,
    Plan,
    PlanStep,
)
from shared.db.transition_sql import load_params, planner_execution
from shared.events.models import Event
from shared.events.pacing import LOAD_SQL, Load, LoadQuery


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
{planner_execution("leased", when="%(announce)s")},
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
    (SELECT jsonb_agg({as_json("m")} ORDER BY m.seq) FROM chat_messages m
     WHERE m.plan_id = l.id) AS turn,
    (SELECT jsonb_agg({as_json("h")} ORDER BY h.seq) FROM (
        SELECT * FROM chat_messages h
        WHERE h.session_id = l.session_id
          AND h.seq < (SELECT seq FROM chat_messages WHERE id = l.user_message_id)
          AND (h.role = 'user' OR (h.role = 'assistant' AND {kind("h")} = 'answer'))
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
        {
            "plan": plan_id,
            "owner": owner,
            "seconds": seconds,
            "numbers": numbers,
            "history": history,
            "announce": announce,
            "private": private,
            "trace": trace_id,
            "ts": ts.isoformat().replace("+00:00", "Z"),
            **load_params(load),
        },
    )
    row = await cur.fetchone()
    if row is None:
        return None
    plan = record_from_json(Plan, row["plan"])
    planner = record_from_json(Agent, row["planner"])
    events: list[Event] = []
    if row["base"] is not None:
        events.append(
            Event(
                type="status_update",
                session_id=plan.session_id,
                plan_id=plan.id,
                agent_id=planner.id,
                seq=int(row["base"]) + 1,
                ts=ts,
                data={"status": "thinking"},
            )
        )
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
{planner_execution("plan")}
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
