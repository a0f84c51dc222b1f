"""An approval is bound to its exact call: the call id *and* the hash of tool name and arguments.

Parley's own call ids already keep a provider's repeated ids apart (tests/agents/
test_call_identity.py); these check the second half of the key on its own, so a decision can
never be applied to another call even if two calls of a plan ever shared an id.
"""

from __future__ import annotations

from typing import Any

from shared.db import Database, approvals
from shared.db.database import Connection
from shared.db.records import AgentThread, Approval
from tests.factories import make_thread, make_user


async def _ask(
    conn: Connection, thread: AgentThread, call_id: str, tool: str, args: dict[str, Any]
) -> tuple[Approval, bool]:
    return await approvals.request_approval(
        conn, plan_id=thread.plan_id, step_id=None, agent_id=thread.parent_agent_id,
        kind="tool_call", tool_call_id=call_id, tool_name=tool, tool_args=args,
    )  # fmt: skip


async def test_a_reused_call_id_with_other_arguments_is_a_new_pending_approval(
    db: Database,
) -> None:
    thread = await make_thread(db, await make_user(db))
    tool = "delete_calendar_event"
    async with db.service() as conn:
        first, created_first = await _ask(conn, thread, "call_0", tool, {"event_id": "dentist"})
        await approvals.decide(conn, approval_id=first.id, status="approved", response=None)
        second, created_second = await _ask(conn, thread, "call_0", tool, {"event_id": "party"})
        again, created_again = await _ask(conn, thread, "call_0", tool, {"event_id": "dentist"})

    assert (created_first, created_second, created_again) == (True, True, False)
    assert second.id != first.id and second.status == "pending"
    assert again.id == first.id and again.status == "approved"  # the same call finds its decision


async def test_the_hash_sees_arguments_in_jsonb_normal_form(db: Database) -> None:
    """Key order does not make a different call; a different value does."""
    thread = await make_thread(db, await make_user(db))
    async with db.service() as conn:
        first, _ = await _ask(
            conn, thread, "call_x", "update_task", {"task_id": "t1", "title": "A"}
        )
        reordered, created = await _ask(
            conn, thread, "call_x", "update_task", {"title": "A", "task_id": "t1"}
        )
        other, other_created = await _ask(
            conn, thread, "call_x", "update_task", {"task_id": "t1", "title": "B"}
        )
    assert (reordered.id, created) == (first.id, False)
    assert other.id != first.id and other_created
