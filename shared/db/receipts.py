"""Repository: receipts of write tool calls (`parley_private.tool_call_receipts`), the
idempotency keys.

A receipt is keyed on (plan, call id, hash of tool name and canonical arguments). Internal:
only the service reads and writes it — also inside a user's write transaction, which
`record_with_write` ends as the service (`database.back_to_service`) for that one insert, so
the receipt commits or rolls back with the write itself.

The receipt holds the call's result until the row answering the call is stored (the planner's
`tool` message, an agent's `tool_result`): the statement that stores that row clears the
receipt's copy when it is exactly the row's content (`Transition.result_stored`), and readers
take the result from the row then (`RESULT`). A receipt done (`completed_at`) whose result and
row are both gone (retention deleted the row first) reads as done with `GONE`: the call is
never made again.
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
    call_hash: bytes
    """SHA-256 of the tool's name and the canonical arguments (stored as its 32 bytes)."""

    @classmethod
    def of(cls, plan_id: UUID, call_id: str, tool_name: str, canonical: str) -> CallKey:
        digest = hashlib.sha256(f"{tool_name}\n{canonical}".encode()).digest()
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


GONE: dict[str, Any] = {
    "done": True,
    "note": "This call was made earlier; its result is no longer stored.",
}
"""The result of a receipt done whose result is no longer stored anywhere."""

_TABLE = "parley_private.tool_call_receipts"
RESULT = """coalesce(r.result,
    (SELECT m.content::jsonb FROM public.chat_messages m
      WHERE m.plan_id = r.plan_id AND m.tool_call_id = r.tool_call_id AND m.role = 'tool'
      LIMIT 1),
    (SELECT d.content::jsonb FROM public.agent_chat_messages d
      WHERE d.plan_id = r.plan_id AND d.tool_call_id = r.tool_call_id
        AND d.message_type = 'tool_result'
      LIMIT 1),
    CASE WHEN r.completed_at IS NOT NULL THEN %(gone)s::jsonb END) AS result"""
"""A receipt's result: its own copy, else the stored row answering its call (a write tool's
result: JSON), else `GONE` when the call is done."""
_COLUMNS = f"r.plan_id, r.tool_call_id, r.tool_name, {RESULT}, r.created_at, r.completed_at"
_KEY = "r.plan_id = %(plan)s AND r.tool_call_id = %(call)s AND r.call_hash = %(hash)s"


async def find(conn: Connection, key: CallKey) -> Receipt | None:
    """The call's receipt, if it has one."""
    return await fetch_optional(
        conn,
        Receipt,
        f"SELECT {_COLUMNS} FROM {_TABLE} r WHERE {_KEY}",
        {**key.params(), "gone": Jsonb(GONE)},
    )


async def list_completed(conn: Connection, *, plan_id: UUID) -> list[Receipt]:
    """The plan's write calls that were done (in the order they were), for telling the user
    what a turn that failed had already changed."""
    return await fetch_all(
        conn,
        Receipt,
        f"""SELECT {_COLUMNS} FROM {_TABLE} r
            WHERE r.plan_id = %(plan)s AND r.completed_at IS NOT NULL ORDER BY r.completed_at""",
        {"plan": plan_id, "gone": Jsonb(GONE)},
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
        f"""INSERT INTO {_TABLE} AS r (plan_id, tool_call_id, call_hash, user_id, tool_name)
            VALUES (%(plan)s, %(call)s, %(hash)s, %(user)s, %(tool)s)
            ON CONFLICT DO NOTHING
            RETURNING r.plan_id, r.tool_call_id, r.tool_name, r.result, r.created_at,
                      r.completed_at""",
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
        f"""UPDATE {_TABLE} r SET result = %(result)s, completed_at = now()
            WHERE {_KEY} AND r.result IS NULL AND r.completed_at IS NULL""",
        {**key.params(), "result": Jsonb(result)},
    )
