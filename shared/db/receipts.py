"""Repository: receipts of write tool calls (`parley_private.tool_call_receipts`), the
idempotency keys.

A receipt is keyed on (plan, call id, hash of tool name and canonical arguments). Internal:
only the service reads and writes it — also inside a user's write transaction, which
`record_with_write` ends as the service (`database.back_to_service`) for that one insert, so
the receipt commits or rolls back with the write itself.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg import errors
from psycopg.types.json import Jsonb

from shared.db._rows import fetch_all, fetch_optional
from shared.db.database import Connection, back_to_service

PRIMARY_KEY = "tool_call_receipts_pkey"


@dataclass(frozen=True, slots=True)
class CallKey:
    """The idempotency key of one write tool call of a plan."""

    plan_id: UUID
    call_id: str
    call_hash: str

    @classmethod
    def of(cls, plan_id: UUID, call_id: str, tool_name: str, canonical: str) -> CallKey:
        digest = hashlib.sha256(f"{tool_name}\n{canonical}".encode()).hexdigest()
        return cls(plan_id, call_id, digest)

    def params(self) -> dict[str, Any]:
        return {"plan": self.plan_id, "call": self.call_id, "hash": self.call_hash}


@dataclass(frozen=True, slots=True)
class Receipt:
    plan_id: UUID
    tool_call_id: str
    tool_name: str
    result: dict[str, Any] | None
    """What the call returned; None while an external call's outcome is unknown."""
    created_at: datetime
    completed_at: datetime | None


_TABLE = "parley_private.tool_call_receipts"
_COLUMNS = "plan_id, tool_call_id, tool_name, result, created_at, completed_at"
_KEY = "plan_id = %(plan)s AND tool_call_id = %(call)s AND call_hash = %(hash)s"


async def find(conn: Connection, key: CallKey) -> Receipt | None:
    """The call's receipt, if it has one."""
    return await fetch_optional(
        conn,
        Receipt,
        f"SELECT {_COLUMNS} FROM parley_private.tool_call_receipts WHERE {_KEY}",
        key.params(),
    )


async def list_completed(conn: Connection, *, plan_id: UUID) -> list[Receipt]:
    """The plan's write calls that were done (in the order they were), for telling the user
    what a turn that failed had already changed."""
    return await fetch_all(
        conn,
        Receipt,
        f"""SELECT {_COLUMNS} FROM {_TABLE}
            WHERE plan_id = %s AND completed_at IS NOT NULL ORDER BY completed_at""",
        (plan_id,),
    )


async def record_with_write(
    conn: Connection, key: CallKey, *, user_id: UUID, tool_name: str, result: dict[str, Any]
) -> None:
    """Record the call as done, in the transaction of its write (a user's unit: this runs the
    rest of it as the service — call it last). A receipt that already exists raises
    `UniqueViolation` (`is_duplicate`), which rolls the write back."""
    await back_to_service(conn)
    await conn.execute(
        f"""INSERT INTO {_TABLE}
             (plan_id, tool_call_id, call_hash, user_id, tool_name, result, completed_at)
           VALUES (%(plan)s, %(call)s, %(hash)s, %(user)s, %(tool)s, %(result)s, now())""",
        {**key.params(), "user": user_id, "tool": tool_name, "result": Jsonb(result)},
    )


def is_duplicate(exc: BaseException) -> bool:
    """Whether `exc` is `record_with_write` finding the call's receipt already there."""
    return isinstance(exc, errors.UniqueViolation) and exc.diag.constraint_name == PRIMARY_KEY


async def begin(
    conn: Connection, key: CallKey, *, user_id: UUID, tool_name: str
) -> tuple[Receipt, bool]:
    """The receipt of a call about to be sent elsewhere: (receipt, True) when created now,
    (the earlier one, False) when an earlier attempt got this far."""
    created = await fetch_optional(
        conn,
        Receipt,
        f"""INSERT INTO {_TABLE} (plan_id, tool_call_id, call_hash, user_id, tool_name)
            VALUES (%(plan)s, %(call)s, %(hash)s, %(user)s, %(tool)s)
            ON CONFLICT DO NOTHING RETURNING {_COLUMNS}""",
        {**key.params(), "user": user_id, "tool": tool_name},
    )
    if created is not None:
        return created, True
    earlier = await find(conn, key)
    assert earlier is not None
    return earlier, False


async def complete(conn: Connection, key: CallKey, *, result: dict[str, Any]) -> None:
    """Record what a call that was sent elsewhere returned."""
    await conn.execute(
        f"""UPDATE {_TABLE} SET result = %(result)s, completed_at = now()
            WHERE {_KEY} AND result IS NULL""",
        {**key.params(), "result": Jsonb(result)},
    )
