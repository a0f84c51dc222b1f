"""Repository: approvals (destructive calls and escalations waiting for the user)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from shared.db._rows import fetch_all, fetch_one, fetch_optional
from shared.db.database import Connection
from shared.db.records import Approval, ApprovalKind, ApprovalStatus, columns

APPROVAL = columns(Approval)
CALL_HASH = (
    "encode(sha256(convert_to(jsonb_build_array(%(kind)s::text, %(tool)s::text, "
    "%(args)s::jsonb, %(reason)s::text)::text, 'UTF8')), 'hex')"
)
"""The call's fingerprint: SHA-256 of the JSON array [kind, tool name, arguments, reason] —
arguments in `jsonb`'s normal form (keys sorted, whitespace dropped), a missing field `null` —
so no two different calls share an input. Migration 2c8f4e7a0501 computes the same over stored
rows."""


async def request_approval(
    conn: Connection,
    *,
    plan_id: UUID,
    step_id: UUID | None,
    agent_id: UUID,
    kind: ApprovalKind,
    tool_call_id: str,
    tool_name: str | None = None,
    tool_args: Mapping[str, Any] | None = None,
    reason: str | None = None,
) -> tuple[Approval, bool]:
    """The approval of one call: (row, True if it was asked for just now, as `pending`).

    Keyed on (plan, step, call id, call hash): asking again — every resume does — finds the
    same row, with whatever the user decided meanwhile; a decision never applies to another
    call, even one that reuses the id.
    """
    params = {
        "plan": plan_id,
        "step": step_id,
        "agent": agent_id,
        "kind": kind,
        "call": tool_call_id,
        "tool": tool_name,
        "args": Jsonb(dict(tool_args)) if tool_args is not None else None,
        "reason": reason,
    }
    created = await fetch_optional(
        conn,
        Approval,
        f"""INSERT INTO agent_approvals (plan_id, session_id, user_id, step_id, agent_id, kind,
                                         tool_call_id, tool_name, tool_args, reason, call_hash)
            SELECT p.id, p.session_id, p.user_id, %(step)s, %(agent)s, %(kind)s, %(call)s,
                   %(tool)s, %(args)s, %(reason)s, {CALL_HASH}
              FROM agent_plans p WHERE p.id = %(plan)s
            ON CONFLICT ON CONSTRAINT agent_approvals_call DO NOTHING
            RETURNING {APPROVAL}""",
        params,
    )
    if created is not None:
        return created, True
    existing = await fetch_one(
        conn,
        Approval,
        f"""SELECT {APPROVAL} FROM agent_approvals
            WHERE plan_id = %(plan)s AND step_id IS NOT DISTINCT FROM %(step)s
              AND tool_call_id = %(call)s AND call_hash = {CALL_HASH}""",
        params,
    )
    return existing, False


async def get_approval(
    conn: Connection, *, approval_id: UUID, plan_id: UUID, lock: bool = False
) -> Approval | None:
    """One approval of the plan; `lock` holds its row until the transaction ends."""
    query = f"SELECT {APPROVAL} FROM agent_approvals WHERE id = %s AND plan_id = %s"
    return await fetch_optional(
        conn, Approval, query + " FOR UPDATE" if lock else query, (approval_id, plan_id)
    )


async def list_approvals(
    conn: Connection, *, plan_id: UUID, status: ApprovalStatus | None = None
) -> list[Approval]:
    """The plan's approvals in the order they were asked for (only `status`, when given)."""
    return await fetch_all(
        conn,
        Approval,
        f"""SELECT {APPROVAL} FROM agent_approvals
            WHERE plan_id = %(plan)s AND (%(status)s::text IS NULL OR status = %(status)s)
            ORDER BY created_at, id""",
        {"plan": plan_id, "status": status},
    )


async def decide(
    conn: Connection, *, approval_id: UUID, status: ApprovalStatus, response: str | None
) -> Approval:
    """Record the user's decision on a pending approval and count it on its plan."""
    decided = await fetch_one(
        conn,
        Approval,
        f"""UPDATE agent_approvals SET status = %s, response = %s, decided_at = now()
            WHERE id = %s AND status = 'pending' RETURNING {APPROVAL}""",
        (status, response, approval_id),
    )
    await conn.execute(
        "UPDATE agent_plans SET decisions = decisions + 1 WHERE id = %s", (decided.plan_id,)
    )
    return decided


async def cancel_pending(conn: Connection, *, plan_id: UUID) -> None:
    """Close the plan's undecided approvals: the plan ended without them."""
    await conn.execute(
        """UPDATE agent_approvals SET status = 'cancelled', decided_at = now()
           WHERE plan_id = %s AND status = 'pending'""",
        (plan_id,),
    )


async def last_decision_at(conn: Connection, *, step_id: UUID) -> datetime | None:
    """When the user last decided something for the step (None if never)."""
    cur = await conn.execute(
        """SELECT max(decided_at) AS at FROM agent_approvals
           WHERE step_id = %s AND status IN ('approved', 'rejected', 'answered')""",
        (step_id,),
    )
    row = await cur.fetchone()
    at = row["at"] if row else None
    return at if isinstance(at, datetime) else None
