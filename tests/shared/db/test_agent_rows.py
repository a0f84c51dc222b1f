"""`agents` rows: an agent's role is fixed for its life."""

from __future__ import annotations

import psycopg
import pytest

from shared.db import Database, agents
from tests.support.factories import make_thread, make_user


async def test_two_agents_cannot_swap_roles_in_one_transaction(db: Database) -> None:
    """Each row alone passes the CHECK and the one-planner index; the swap must still fail."""
    thread = await make_thread(db, await make_user(db))
    with pytest.raises(psycopg.errors.CheckViolation, match="role never changes"):
        async with db.service() as conn:
            await conn.execute(
                """UPDATE agents SET
                       role = CASE role WHEN 'planner' THEN 'executor' ELSE 'planner' END,
                       permissions = CASE role WHEN 'planner' THEN 'read_only'
                                               ELSE 'read_write' END
                   WHERE id IN (%s, %s)""",
                (thread.parent_agent_id, thread.child_agent_id),
            )
    async with db.service() as conn:
        planner = await agents.get_agent(conn, agent_id=thread.parent_agent_id)
        executor = await agents.get_agent(conn, agent_id=thread.child_agent_id)
    assert planner is not None and executor is not None
    assert (planner.role, executor.role) == ("planner", "executor")


async def test_other_columns_of_an_agent_still_change(db: Database) -> None:
    thread = await make_thread(db, await make_user(db))
    async with db.service() as conn:
        await conn.execute(
            "UPDATE agents SET status = 'completed', role = role WHERE id = %s",
            (thread.child_agent_id,),
        )
        executor = await agents.get_agent(conn, agent_id=thread.child_agent_id)
    assert executor is not None and executor.status == "completed"
