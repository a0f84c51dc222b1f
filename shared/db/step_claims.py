"""A step attempt claimed in one statement: the step leased, its thread, its agent, and what
the attempt resumes from (`claim_step`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from shared.db._rows import record_from_json, records_from_json
from shared.db.database import Connection
from shared.db.delegations import DIALOGUE
from shared.db.plans import ENDED_STEP
from shared.db.records import (
    Agent,
    AgentMessage,
    AgentThread,
    Execution,
    Plan,
    PlanStep,
)


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
    (SELECT jsonb_agg(to_jsonb(m) ORDER BY m.seq) FROM {DIALOGUE} m  -- values, not a join:
     WHERE m.plan_id = (SELECT plan_id FROM attempt)  -- they reach both parts' indexes
       AND m.agent_session_id = (SELECT agent_session_id FROM attempt)) AS messages,
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
        {
            "step": step_id,
            "attempt": attempt,
            "owner": owner,
            "seconds": seconds,
            "executor_only": executor_only,
        },
    )
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
