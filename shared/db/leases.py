"""Repository: run leases on plans and steps (`lease_owner`, `lease_expires_at`).

A lease is taken, renewed and given back by single `UPDATE`s on the row, so two invocations
racing for it are ordered by the row lock: the second re-reads the row the first committed and
finds the lease held. The database's clock decides expiry, never a caller's.
"""

from __future__ import annotations

from typing import Literal
from uuid import UUID

from psycopg import sql

from shared.db._rows import fetch_optional
from shared.db.database import Connection
from shared.db.records import Plan, columns

LeasedTable = Literal["agent_plans", "agent_plan_steps"]
Renewal = Literal["renewed", "released", "taken"]
"""`released`: nobody holds it (the run settled); `taken`: another owner holds it now."""

PARKED = "parked"
"""The owner of a plan's lease while the plan waits for steps handed to a queue: no run holds
it, so any run may take it (the resume a settled step sends); it expires like a run's lease,
and an expired one is re-driven by the sweeper. While it lasts the plan counts as running."""
FREE = (
    f"lease_owner IS NULL OR lease_expires_at <= now() OR lease_owner = %(owner)s "
    f"OR lease_owner = '{PARKED}'"
)
"""When a lease may be taken: nobody holds it, its holder stopped renewing, it is ours, or
the plan is parked waiting for its steps."""


async def take_plan_lease(
    conn: Connection, *, plan_id: UUID, owner: str, seconds: float
) -> Plan | None:
    """Lease the plan to `owner` for `seconds`: the plan, or None when someone else holds it
    (or it has ended)."""
    return await fetch_optional(
        conn,
        Plan,
        f"""UPDATE agent_plans
            SET lease_owner = %(owner)s,
                lease_expires_at = now() + make_interval(secs => %(seconds)s)
            WHERE id = %(id)s AND ({FREE})
              AND status NOT IN ('completed', 'failed', 'cancelled')
            RETURNING {columns(Plan)}""",
        {"id": plan_id, "owner": owner, "seconds": seconds},
    )


async def renew(
    conn: Connection, *, table: LeasedTable, row_id: UUID, owner: str, seconds: float
) -> Renewal:
    """Extend `owner`'s lease by `seconds` from now, or say why it cannot be."""
    cur = await conn.execute(
        sql.SQL(
            """UPDATE {table} SET lease_expires_at = now() + make_interval(secs => %(seconds)s)
               WHERE id = %(id)s AND lease_owner = %(owner)s RETURNING id"""
        ).format(table=sql.Identifier(table)),
        {"id": row_id, "owner": owner, "seconds": seconds},
    )
    if await cur.fetchone() is not None:
        return "renewed"
    cur = await conn.execute(
        sql.SQL("SELECT lease_owner FROM {table} WHERE id = %s").format(
            table=sql.Identifier(table)
        ),
        (row_id,),
    )
    row = await cur.fetchone()
    return "taken" if row is not None and row["lease_owner"] is not None else "released"


async def release(conn: Connection, *, table: LeasedTable, row_id: UUID, owner: str) -> None:
    """Give the lease back (a no-op unless `owner` still holds it)."""
    await conn.execute(
        sql.SQL(
            """UPDATE {table} SET lease_owner = NULL, lease_expires_at = NULL
               WHERE id = %s AND lease_owner = %s"""
        ).format(table=sql.Identifier(table)),
        (row_id, owner),
    )


async def park_plan(conn: Connection, *, plan_id: UUID, owner: str, seconds: float) -> bool:
    """Hand `owner`'s lease on the plan over to `PARKED` for `seconds`; False if `owner` no
    longer holds it."""
    cur = await conn.execute(
        """UPDATE agent_plans SET lease_owner = %(parked)s,
                  lease_expires_at = now() + make_interval(secs => %(seconds)s)
           WHERE id = %(id)s AND lease_owner = %(owner)s RETURNING id""",
        {"parked": PARKED, "seconds": seconds, "id": plan_id, "owner": owner},
    )
    return await cur.fetchone() is not None


async def lease_is_live(conn: Connection, *, table: LeasedTable, row_id: UUID) -> bool:
    """Whether someone holds an unexpired lease on the row now."""
    cur = await conn.execute(
        sql.SQL("SELECT lease_expires_at > now() AS live FROM {table} WHERE id = %s").format(
            table=sql.Identifier(table)
        ),
        (row_id,),
    )
    row = await cur.fetchone()
    return bool(row and row["live"])
