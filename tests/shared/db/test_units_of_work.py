"""Units of work: as the user (RLS applies), read-only (Postgres refuses writes), and unable
to leave their transaction, role or claims."""

from __future__ import annotations

from typing import Any, cast
from uuid import uuid4

import psycopg
import pytest

from shared.db import Database
from shared.db.database import UnitEscaped
from shared.db.user_statements import StatementRefused
from tests.support.factories import make_user
from tests.support.supabase_project import OWNER

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
    assert row == {
        "uid": user,
        "role": "authenticated",
        "email": "a@example.com",
        "db_role": "authenticated",
    }


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


# A user's unit cannot leave its transaction, role or claims -------------------------------

ESCAPES = [
    "COMMIT",
    "ROLLBACK",
    "END",
    "BEGIN",
    "SAVEPOINT s",
    "RESET ROLE",
    "RESET ALL",
    "SET ROLE anon",
    "SET LOCAL ROLE anon",
    "set local role anon",
    "SET SESSION AUTHORIZATION DEFAULT",
    "SET search_path TO public",
    "SET TRANSACTION READ WRITE",
    "SET LOCAL request.jwt.claims = '{}'",
    "SET LOCAL \"request.jwt.claims\" = '{}'",
    "SELECT set_config('request.jwt.claims', '{\"sub\": \"someone\"}', true)",
    "SELECT pg_catalog.set_config('role', 'authenticated', false)",
    "SELECT \"set_config\"('search_path', 'public', false)",
    "DISCARD ALL",
    "DO $$ BEGIN SET ROLE NONE; END $$",
    "SELECT 1; COMMIT",
    "/* a comment */ COMMIT",
]
ALLOWED = [
    "SET LOCAL statement_timeout = '5s'",
    "SET CONSTRAINTS ALL DEFERRED",
    "SELECT 'COMMIT; SET ROLE postgres' AS text",
    "SELECT $body$ RESET ROLE $body$ AS text",
    "SELECT 1 -- ; COMMIT",
    'SELECT 1 AS "commit"',
    "SELECT current_setting('request.jwt.claims', true) AS claims",
]


async def _session_state(db: Database) -> dict[str, object]:
    async with db.service() as conn:
        cur = await conn.execute(
            "SELECT current_user AS role, current_setting('search_path') AS search_path, "
            "auth.uid() AS uid"
        )
        row = await cur.fetchone()
    assert row is not None
    return row


@pytest.mark.parametrize("statement", ESCAPES)
async def test_a_user_unit_refuses_what_would_leave_it(db: Database, statement: str) -> None:
    user = await make_user(db)
    before = await _session_state(db)
    with pytest.raises(StatementRefused, match="not allowed in a user's unit of work"):
        async with db.as_user(user, read_only=True) as conn:
            await conn.execute(statement)
    assert await _session_state(db) == before


@pytest.mark.parametrize("statement", ALLOWED)
async def test_a_user_unit_runs_ordinary_statements(db: Database, statement: str) -> None:
    user = await make_user(db)
    async with db.as_user(user, read_only=True) as conn:
        await conn.execute(statement)
        cur = await conn.execute("SELECT current_user AS role")
        assert await cur.fetchone() == {"role": "authenticated"}


async def test_committing_cannot_turn_a_read_only_unit_into_the_owners(db: Database) -> None:
    """The finding: COMMIT ended the read-only, RLS-limited transaction, and what followed ran
    as the table owner, outside it."""
    user, other = await make_user(db), await make_user(db)
    with pytest.raises(StatementRefused):
        async with db.as_user(user, read_only=True) as conn:
            await conn.execute("COMMIT")
            await conn.execute("DELETE FROM projects")
    with pytest.raises(StatementRefused):
        async with db.as_user(user, read_only=True) as conn:
            await conn.commit()
    async with db.service() as conn:
        await conn.execute("INSERT INTO projects (user_id, name) VALUES (%s, 'theirs')", (other,))
    async with db.service() as conn:
        cur = await conn.execute("SELECT count(*) AS n FROM projects WHERE user_id = %s", (other,))
        assert await cur.fetchone() == {"n": 1}


async def test_a_transaction_ended_behind_the_guards_back_stops_the_unit(
    database_url: str,
) -> None:
    """Past the statement check (raw libpq here): the next statement finds the transaction
    gone and is refused, and the connection is closed rather than pooled."""
    async with Database(database_url, max_size=1) as single:
        user = await make_user(single)
        with pytest.raises(UnitEscaped):
            async with single.as_user(user, read_only=True) as conn:
                conn.pgconn.exec_(b"COMMIT")
                await conn.execute("SELECT 1")
        assert conn.closed
        state = await _session_state(single)
    assert state["role"] == OWNER and state["uid"] is None


async def test_session_state_set_inside_a_user_unit_does_not_reach_the_next_unit(
    db: Database, database_url: str
) -> None:
    """A function can set session state where no statement check sees it; the unit's end
    resets role, search_path and claims before the connection goes back to the pool."""
    async with Database(database_url, max_size=1) as single:  # one connection: reused
        before = await _session_state(single)
        async with single.service() as conn:
            await conn.execute(
                """CREATE FUNCTION public.leak_session() RETURNS void LANGUAGE plpgsql AS $$
                   BEGIN
                       PERFORM set_config('role', 'authenticated', false);
                       PERFORM set_config('search_path', 'extensions', false);
                       PERFORM set_config('request.jwt.claims', '{"sub": "%s"}', false);
                   END $$""".replace("%s", str(uuid4()))
            )
            await conn.execute("GRANT EXECUTE ON FUNCTION public.leak_session() TO authenticated")
        user = await make_user(single)
        try:
            async with single.as_user(user) as conn:
                await conn.execute("SELECT public.leak_session()")
            after = await _session_state(single)
        finally:
            async with db.service() as conn:  # another pool: this one may be the leaky one
                await conn.execute("DROP FUNCTION public.leak_session()")
    assert after == before


async def test_a_nul_in_the_users_claims_does_not_break_their_unit(db: Database) -> None:
    """User metadata in a Supabase JWT is the user's to write; `auth.jwt()` casts the claims
    to jsonb, which refuses U+0000."""
    user = await make_user(db)
    async with db.as_user(user, read_only=True, claims={"user_metadata": {"name": "A\x00B"}}) as c:
        cur = await c.execute(
            "SELECT auth.uid() AS uid, auth.jwt() -> 'user_metadata' ->> 'name' AS name"
        )
        row = await cur.fetchone()
    assert row == {"uid": user, "name": "A\ufffdB"}


# Ways out found after the first guard (the issue-11 audit, and reading Postgres's lexer): each
# test shows what would leave the unit.

UNREAD = [
    # A Unicode-escaped name hides what it names: escapes are refused, not decoded.
    "SELECT U&\"set\\005fconfig\"('role', '{owner}', true)",
    'SET LOCAL U&"rol\\0065" TO {owner}',
    "SELECT u&'\\0041' AS a",
    # Every non-ASCII character is part of a name: `é$$` opens no dollar quote.
    "SELECT 1 AS é$$; SELECT set_config('role', '{owner}', true); --$$",
    # An E'' string continued on the next line keeps its backslash escapes.
    "SELECT E''\n'\\', ' ; SELECT set_config($a$role$a$, $a${owner}$a$, true); -- '",
    # A `--` comment ends at a carriage return too.
    "SELECT 1 -- note\rSELECT set_config('role', '{owner}', true)",
    # With standard_conforming_strings off, '\'' would no longer end where the check reads it.
    "SET LOCAL standard_conforming_strings = off",
    # Built-ins that run SQL given as text.
    "SELECT ts_stat('SELECT set_config(''role'', ''{owner}'', true)::tsvector')",
    "SELECT query_to_xml('SELECT set_config(''role'', ''{owner}'', true)', true, true, '')",
    # A function's body is not read (DO is refused for the same reason).
    "CREATE FUNCTION pg_temp.out() RETURNS void LANGUAGE plpgsql "
    "AS $$BEGIN PERFORM set_config('role', '{owner}', true); END$$",
    "CREATE OR REPLACE PROCEDURE pg_temp.out() LANGUAGE sql AS 'SELECT 1'",
    "COPY (SELECT 1) TO STDOUT",
]


@pytest.mark.parametrize("statement", UNREAD)
async def test_what_the_check_cannot_read_is_refused(db: Database, statement: str) -> None:
    user = await make_user(db)
    before = await _session_state(db)
    with pytest.raises(StatementRefused, match="not allowed in a user's unit of work"):
        async with db.as_user(user) as conn:  # read-write: CREATE FUNCTION would run
            await conn.execute(statement.replace("{owner}", OWNER))
    assert await _session_state(db) == before


async def test_strings_read_otherwise_behind_the_checks_back_stop_the_unit(db: Database) -> None:
    """Past the statement check (raw libpq here): with standard_conforming_strings off, the
    check could no longer tell where a string ends, so nothing more is sent."""
    user = await make_user(db)
    with pytest.raises(StatementRefused, match="standard_conforming_strings"):
        async with db.as_user(user, read_only=True) as conn:
            conn.pgconn.exec_(b"SET LOCAL standard_conforming_strings = off")
            await conn.execute("SELECT 1")
    async with db.service() as conn:
        cur = await conn.execute("SHOW standard_conforming_strings")
        assert await cur.fetchone() == {"standard_conforming_strings": "on"}


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT 'it''s' AS a, E'\\'' AS b, E'a'\n'\\'' AS c, 'x'\n'y' AS d",
        "SELECT 'U&' AS u, 1 AS \"é\", $é$ set_config $é$ AS e",
        "SELECT content FROM notes -- set_config\n",
    ],
)
async def test_strings_and_names_are_read_as_postgres_reads_them(
    db: Database, statement: str
) -> None:
    user = await make_user(db)
    async with db.as_user(user, read_only=True) as conn:
        await conn.execute(statement)


@pytest.mark.parametrize("way", ["server_cursor", "copy"])
async def test_other_cursors_cannot_leave_the_unit(db: Database, way: str) -> None:
    user = await make_user(db)
    escape = f"SELECT set_config('role', '{OWNER}', true)"
    with pytest.raises(StatementRefused):
        async with db.as_user(user, read_only=True) as conn:
            if way == "server_cursor":
                async with conn.cursor(name="unchecked") as named:
                    await named.execute(escape)
                    await named.fetchall()
            else:
                async with conn.cursor() as cur, cur.copy(f"COPY ({escape}) TO STDOUT") as copy:
                    async for _ in copy:
                        pass
            cur = await conn.execute("SELECT current_user AS role")
            assert await cur.fetchone() == {"role": "authenticated"}


async def test_named_cursors_still_work_for_the_service(db: Database) -> None:
    async with db.service() as conn, conn.cursor(name="paged") as named:
        await named.execute("SELECT generate_series(1, 3) AS n")
        assert [row["n"] for row in await named.fetchall()] == [1, 2, 3]


async def test_a_query_the_check_cannot_read_is_refused(db: Database) -> None:
    """Fail closed: a query object that is not text or psycopg.sql (e.g. a t-string)."""

    class Opaque:
        def __str__(self) -> str:
            return "SELECT 1"

    user = await make_user(db)
    with pytest.raises(StatementRefused, match="Opaque query"):
        async with db.as_user(user, read_only=True) as conn:
            await conn.execute(cast(Any, Opaque()))


async def test_a_temporary_table_does_not_reach_the_next_users_unit(database_url: str) -> None:
    """A read-write unit may create a temporary table (PUBLIC has TEMPORARY on the database);
    it must not outlive the unit on the pooled connection, where the next user's unit could
    read it."""
    async with Database(database_url, max_size=1) as single:  # one connection: reused
        owner, other = await make_user(single), await make_user(single)
        async with single.service() as conn:
            await conn.execute(
                "INSERT INTO notes (user_id, content) VALUES (%s, 'A secret')", (owner,)
            )
        async with single.as_user(owner) as conn:
            await conn.execute("CREATE TEMPORARY TABLE stash AS SELECT content FROM notes")
        async with single.as_user(other, read_only=True) as conn:
            cur = await conn.execute("SELECT to_regclass('pg_temp.stash') IS NULL AS gone")
            assert await cur.fetchone() == {"gone": True}


async def test_listening_does_not_outlive_the_unit(database_url: str) -> None:
    async with Database(database_url, max_size=1) as single:
        user = await make_user(single)
        async with single.as_user(user) as conn:
            await conn.execute("LISTEN parley_audit")
        async with single.service() as conn:
            cur = await conn.execute("SELECT count(*) AS n FROM pg_listening_channels()")
            assert await cur.fetchone() == {"n": 0}


async def test_held_cursors_and_session_locks_do_not_outlive_the_unit(database_url: str) -> None:
    """A `WITH HOLD` cursor keeps the user's rows past the COMMIT; a session advisory lock
    would block whoever takes it next."""
    async with Database(database_url, max_size=1) as single:
        owner, other = await make_user(single), await make_user(single)
        async with single.service() as conn:
            await conn.execute(
                "INSERT INTO notes (user_id, content) VALUES (%s, 'A secret')", (owner,)
            )
        async with single.as_user(owner, read_only=True) as conn:
            await conn.execute("DECLARE kept CURSOR WITH HOLD FOR SELECT content FROM notes")
            await conn.execute("SELECT pg_advisory_lock(4711)")
        async with single.as_user(other, read_only=True) as conn:
            cur = await conn.execute("SELECT count(*) AS n FROM pg_cursors")
            assert await cur.fetchone() == {"n": 0}
        async with single.service() as conn:
            cur = await conn.execute(
                "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' "
                "AND pid = pg_backend_pid()"
            )
            assert await cur.fetchone() == {"n": 0}
