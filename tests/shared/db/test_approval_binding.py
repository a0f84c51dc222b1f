"""An approval is bound to its exact call: the call id *and* the hash of tool name and arguments.

Parley's own call ids already keep a provider's repeated ids apart (tests/shared/agents/
test_call_identity.py); these check the second half of the key on its own, so a decision can
never be applied to another call even if two calls of a plan ever shared an id.
"""

from __future__ import annotations

import importlib.util
from typing import Any
from uuid import UUID

from shared.db import Database, approvals, plans
from shared.db.database import Connection
from shared.db.records import AgentThread, Approval
from tests.support import ROOT
from tests.support.factories import make_thread, make_user

VERSIONS = ROOT / "migrations" / "versions"


async def _ask(
    conn: Connection, thread: AgentThread, call_id: str, tool: str, args: dict[str, Any]
) -> tuple[Approval, bool]:
    return await approvals.request_approval(
        conn,
        plan_id=thread.plan_id,
        step_id=None,
        agent_id=thread.parent_agent_id,
        kind="tool_call",
        tool_call_id=call_id,
        tool_name=tool,
        tool_args=args,
    )


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


async def _step(db: Database, thread: AgentThread) -> UUID:
    async with db.service() as conn:
        (step,) = await plans.add_steps(
            conn,
            plan_id=thread.plan_id,
            user_id=thread.user_id,
            steps=[plans.NewStep(1, "ask the user", executor_required=True)],
        )
    return step.id


async def test_no_field_of_the_call_can_stand_in_for_another(db: Database) -> None:
    """The hashed input is a JSON array: a missing tool name is `null`, not skipped, so a reason
    that starts with a tool name is not that tool name (as it was with `concat_ws`)."""
    thread = await make_thread(db, await make_user(db))
    step = await _step(db, thread)
    asked: list[tuple[Approval, bool]] = []
    async with db.service() as conn:
        for tool, reason in (("escalate", "Which one?"), (None, "escalate\nWhich one?")):
            asked.append(
                await approvals.request_approval(
                    conn,
                    plan_id=thread.plan_id,
                    step_id=step,
                    agent_id=thread.parent_agent_id,
                    kind="escalation",
                    tool_call_id="call_e",
                    tool_name=tool,
                    reason=reason,
                )
            )
    (first, created_first), (second, created_second) = asked
    assert (created_first, created_second) == (True, True) and first.id != second.id


async def test_the_migration_hashes_stored_rows_as_the_repository_does(db: Database) -> None:
    """Revision 2c8f4e7a0501 recomputes every stored hash with its own copy of the expression."""
    path = next(VERSIONS.glob("*-2c8f4e7a0501_*.py"))
    spec = importlib.util.spec_from_file_location("unambiguous_approval_hash", path)
    assert spec is not None and spec.loader is not None
    migration = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(migration)
    thread = await make_thread(db, await make_user(db))
    step = await _step(db, thread)
    async with db.service() as conn:
        await _ask(conn, thread, "call_t", "update_task", {"task_id": "t1", "title": 'é\n"x"'})
        await approvals.request_approval(
            conn,
            plan_id=thread.plan_id,
            step_id=step,
            agent_id=thread.parent_agent_id,
            kind="escalation",
            tool_call_id="call_e",
            tool_name="escalate",
            reason="Which?",
        )
        cur = await conn.execute(
            f"SELECT count(*) AS n, count(*) FILTER (WHERE call_hash = {migration.CALL_HASH}) "
            "AS same FROM agent_approvals WHERE plan_id = %s",
            (thread.plan_id,),
        )
        assert await cur.fetchone() == {"n": 2, "same": 2}
