"""Repository: retention — deleting the detail of turns that ended long enough ago, in batches.

Each kind of detail (`Retained`) is deleted plan by plan, in the order the plans ended
(`agent_plans.completed_at`, indexed), behind a mark: `parley_private.retention_marks` holds,
per kind, the `completed_at` through which that detail is gone. One statement deletes one
batch and moves the mark with it, so the mark never says more than was done, and readers can
tell a deleted detail from one that never was (`removed`). A plan that has not ended has no
`completed_at`: plans running, waiting for the user's approval or not started are never in a
batch; one that ended but is still leased stops the batch before it (it goes in a later one).

Only what the user does not see is deleted: their sessions, their messages and the answers,
plans, steps and approvals stay until they delete the session.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple
from uuid import UUID

from shared.db.database import Connection
from shared.db.records import Retained

RETAINED: tuple[Retained, ...] = ("dialogue", "tool_rounds", "receipts", "executions")

# Each kind finds its rows by `plan_id = ANY(ARRAY(SELECT id FROM batch))`, not `IN (SELECT id
# FROM batch)`: the batch is a window of `completed_at` between two computed bounds, whose size
# the planner cannot know; reading `IN`, it expected thousands of plans and read whole tables
# (379 ms a dialogue batch at a million turns). An array it takes as a few values: an index.
_DELETES: dict[Retained, str] = {
    # The agents' conversation: its messages, the steps' tasks their runs hold (the threads'
    # first messages: `db.delegations`) and the executor agents that spoke in them (found
    # through their runs, or the steps they were given; a planner lives as long as its
    # session). The threads are their runs' (`agent_executions`): they go with the runs.
    "dialogue": """
        gone_messages AS (
            DELETE FROM agent_chat_messages WHERE plan_id = ANY(ARRAY(SELECT id FROM batch))
            RETURNING 1),
        gone_tasks AS (
            UPDATE agent_executions SET delegation_seq = NULL, delegation_rest = NULL
            WHERE plan_id = ANY(ARRAY(SELECT id FROM batch)) AND delegation_seq IS NOT NULL
            RETURNING 1),
        gone_agents AS (
            DELETE FROM agents
            WHERE id IN (SELECT e.agent_id FROM agent_executions e
                          WHERE e.plan_id = ANY(ARRAY(SELECT id FROM batch))
                         UNION ALL
                         SELECT s.assigned_agent_id FROM agent_plan_steps s
                          WHERE s.plan_id = ANY(ARRAY(SELECT id FROM batch)))
              AND role = 'executor'
            RETURNING 1),
        gone AS (
            SELECT (SELECT count(*) FROM gone_messages) + (SELECT count(*) FROM gone_tasks)
                   + (SELECT count(*) FROM gone_agents) AS rows)""",
    # The planner's own tool calls and their results; its answer and the user's message stay.
    "tool_rounds": """
        gone_rows AS (
            DELETE FROM chat_messages
            WHERE plan_id = ANY(ARRAY(SELECT id FROM batch))
              AND (role = 'tool' OR (role = 'assistant' AND tool_calls IS NOT NULL))
            RETURNING 1),
        gone AS (SELECT count(*) AS rows FROM gone_rows)""",
    "receipts": """
        gone_rows AS (
            DELETE FROM parley_private.tool_call_receipts
            WHERE plan_id = ANY(ARRAY(SELECT id FROM batch))
            RETURNING 1),
        gone AS (SELECT count(*) AS rows FROM gone_rows)""",
    "executions": """
        gone_rows AS (
            DELETE FROM agent_executions WHERE plan_id = ANY(ARRAY(SELECT id FROM batch))
            RETURNING 1),
        gone AS (SELECT count(*) AS rows FROM gone_rows)""",
}

_BATCH = """
WITH cutoff AS (
    SELECT least(now() - make_interval(days => %(days)s), %(not_after)s::timestamptz) AS at),
mark AS (  -- one run per kind at a time: another sweep holding it is left to it
    SELECT removed_through FROM parley_private.retention_marks
    WHERE what = %(what)s FOR UPDATE SKIP LOCKED),
window_end AS (  -- the batch-th plan's end, ties included
    SELECT max(completed_at) AS at FROM (
        SELECT p.completed_at FROM agent_plans p, mark, cutoff
        WHERE p.completed_at > mark.removed_through AND p.completed_at <= cutoff.at
        ORDER BY p.completed_at LIMIT %(batch)s) first_ended),
held AS (  -- ended, but a run still holds it: the batch stops before it
    SELECT min(p.completed_at) AS at FROM agent_plans p, mark, window_end
    WHERE p.completed_at > mark.removed_through AND p.completed_at <= window_end.at
      AND (p.status NOT IN ('completed', 'failed', 'cancelled') OR p.lease_expires_at > now())),
upto AS (
    SELECT coalesce(held.at - interval '1 microsecond', window_end.at) AS at
    FROM window_end, held),
batch AS (
    SELECT p.id FROM agent_plans p, mark, upto
    WHERE p.completed_at > mark.removed_through AND p.completed_at <= upto.at),
{deletes},
moved AS (
    UPDATE parley_private.retention_marks m
    SET removed_through = upto.at, kept_days = %(days)s, updated_at = now()
    FROM upto WHERE m.what = %(what)s AND upto.at > m.removed_through
    RETURNING m.removed_through)
SELECT (SELECT count(*) FROM batch) AS plans, (SELECT rows FROM gone) AS rows,
       (SELECT removed_through FROM moved) AS through"""


class Batch(NamedTuple):
    """What one retention statement deleted."""

    plans: int
    """Plans whose detail it deleted."""
    rows: int
    through: datetime | None
    """The mark it left (None: it moved nothing)."""


async def delete_batch(
    conn: Connection, *, what: Retained, days: int, batch: int, not_after: datetime | None = None
) -> Batch:
    """Delete `what` of up to `batch` plans (more when several ended at the same instant) that
    ended `days` days ago or earlier — and not after `not_after` (what has not been counted
    yet where it must be) — in one statement (`conn` in autocommit: its own transaction)."""
    cur = await conn.execute(
        _BATCH.format(deletes=_DELETES[what]),
        {"what": what, "days": days, "batch": batch, "not_after": not_after},
    )
    row = await cur.fetchone()
    assert row is not None
    return Batch(int(row["plans"]), int(row["rows"] or 0), row["through"])


class Removed(NamedTuple):
    """A kind of detail retention has deleted of a plan."""

    plan_id: UUID
    what: Retained
    kept_days: int | None
    """The days it was kept after the plan ended (as the setting said when it was deleted)."""


async def removed(
    conn: Connection, *, plan_ids: Sequence[UUID], kinds: Sequence[Retained]
) -> list[Removed]:
    """What retention has deleted of these plans, of `kinds` — one statement, readable under a
    user's identity too (`parley_private.retention_removed()`; the plans through RLS)."""
    cur = await conn.execute(
        """SELECT p.id AS plan_id, r.what, r.kept_days
           FROM parley_private.retention_removed() r
           JOIN agent_plans p ON p.completed_at <= r.removed_through
           WHERE p.id = ANY(%s) AND r.what = ANY(%s)
             -- a turn answered directly had no dialogue and no tool rounds to delete
             AND NOT (p.strategy = 'direct' AND r.what IN ('dialogue', 'tool_rounds'))""",
        (list(plan_ids), list(kinds)),
    )
    return [Removed(row["plan_id"], row["what"], row["kept_days"]) for row in await cur.fetchall()]


_DELETED_LONG_AGO = (
    "s.status = 'deleted' AND s.updated_at <= now() - make_interval(days => %(days)s)"
)

_DELETED = f"""
    SELECT s.id FROM chat_sessions s
    WHERE {_DELETED_LONG_AGO}
      AND NOT EXISTS (  -- a turn still running, waiting or leased: left for a later sweep
          SELECT 1 FROM agent_plans p WHERE p.session_id = s.id
             AND (p.status NOT IN ('completed', 'failed', 'cancelled')
                  OR p.lease_expires_at > now()))
    ORDER BY s.updated_at"""

_DELETED_TURNS = f"""
WITH deleted AS ({_DELETED}),
batch AS (
    SELECT p.id, p.user_message_id FROM deleted d
    JOIN agent_plans p ON p.session_id = d.id
    LIMIT %(batch)s),
-- The turns' messages: the user's message takes its plan along (`user_message_id`, cascade),
-- and the plan its steps, approvals, dialogue, runs and receipts.
gone_rows AS (  -- (two indexed lookups: an OR of the two would read the whole table)
    DELETE FROM chat_messages
    WHERE id IN (SELECT user_message_id FROM batch
                 UNION ALL
                 SELECT m.id FROM chat_messages m WHERE m.plan_id IN (SELECT id FROM batch))
    RETURNING 1)
SELECT (SELECT count(*) FROM batch) AS plans, (SELECT count(*) FROM gone_rows) AS rows"""

_DELETED_SESSIONS = f"""
WITH emptied AS (  -- sessions whose turns are gone: what is left of them is a few rows each
    SELECT s.id FROM chat_sessions s
    WHERE {_DELETED_LONG_AGO}
      AND NOT EXISTS (SELECT 1 FROM agent_plans p WHERE p.session_id = s.id)
    LIMIT %(batch)s),
gone_rows AS (DELETE FROM chat_sessions WHERE id IN (SELECT id FROM emptied) RETURNING 1)
SELECT count(*) AS sessions FROM gone_rows"""


class Purge(NamedTuple):
    """What one call of the deleted sessions' purge deleted (its one or two statements)."""

    plans: int
    """Turns deleted (each with everything of it)."""
    sessions: int
    """Sessions deleted (with what was left of them)."""


async def purge_deleted_sessions(conn: Connection, *, days: int, batch: int) -> Purge:
    """Delete, for good, sessions their users deleted `days` days ago or earlier: a statement
    (`conn` in autocommit: its own transaction) deletes up to `batch` of their turns with all of
    each; once a session has no turn left, a statement deletes it (up to `batch` sessions).
    Sessions with a turn still running, waiting or leased are left for a later sweep."""
    params = {"days": days, "batch": batch}
    turns = await (await conn.execute(_DELETED_TURNS, params)).fetchone()
    assert turns is not None
    if turns["plans"] >= batch:
        return Purge(int(turns["plans"]), 0)
    sessions = await (await conn.execute(_DELETED_SESSIONS, params)).fetchone()
    assert sessions is not None
    return Purge(int(turns["plans"]), int(sessions["sessions"]))
