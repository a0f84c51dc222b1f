"""Units of work: as the user (RLS applies), read-only (Postgres refuses writes)."""

from __future__ import annotations

import psycopg
import pytest

from shared.db import Database
from tests.factories import make_user

WRITES = [
    "INSERT INTO projects (user_id, name) VALUES (auth.uid(), 'sneaky')",
    "UPDATE projects SET name = 'renamed'",
    "DELETE FROM projects",
]


async def test_as_user_sets_identity(db: Database) -> None:
    user = await make_user(db)
    async with db.as_user(user, claims={"email": "a@example.com"}) as conn:
        cur = await conn.execute(
            "SELECT auth.uid() AS uid, auth.role() AS role, auth.jwt() ->> 'email' AS email, "
            "current_user AS db_role"
        )
        row = await cur.fetchone()
    assert row == {"uid": user, "role": "authenticated", "email": "a@example.com",
                   "db_role": "authenticated"}  # fmt: skip


async def test_claims_do_not_leak_into_the_next_transaction(db: Database) -> None:
    user = await make_user(db)
    async with db.as_user(user):
        pass
    async with db.service() as conn:
        cur = await conn.execute("SELECT auth.uid() AS uid, current_user AS db_role")
        row = await cur.fetchone()
    assert row is not None and row["uid"] is None and row["db_role"] != "authenticated"


@pytest.mark.parametrize("statement", WRITES)
async def test_read_only_unit_refuses_writes(db: Database, statement: str) -> None:
    user = await make_user(db)
    async with db.service() as conn:
        await conn.execute("INSERT INTO projects (user_id, name) VALUES (%s, 'mine')", (user,))
    verb = statement.split()[0]
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction, match=f"cannot execute {verb}"):
        async with db.as_user(user, read_only=True) as conn:
            await conn.execute(statement)
    async with db.service() as conn:
        cur = await conn.execute("SELECT name FROM projects WHERE user_id = %s", (user,))
        assert await cur.fetchall() == [{"name": "mine"}]


async def test_read_only_unit_still_reads(db: Database) -> None:
    user = await make_user(db)
    async with db.service() as conn:
        await conn.execute("INSERT INTO notes (user_id, content) VALUES (%s, 'hello')", (user,))
    async with db.as_user(user, read_only=True) as conn:
        cur = await conn.execute("SELECT content FROM notes")
        assert await cur.fetchall() == [{"content": "hello"}]
