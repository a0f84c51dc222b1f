"""Migrations: the final schema, round trips as a Supabase project's non-superuser owner, a
database that already has Supabase's own objects, an older database, and a server without
Supabase's roles.

Every database here starts as a Supabase project does (`tests/support/supabase_project.py`) and is
migrated as its owner, who is no superuser.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from alembic.config import Config
from alembic.script import ScriptDirectory

from local.migrate import ALEMBIC_INI, downgrade, upgrade
from shared.db import Database
from tests.support import ROOT, databases
from tests.support.factories import make_user, make_world
from tests.support.supabase_project import API_ROLES

VERSIONS = ROOT / "migrations" / "versions"
HEAD = ScriptDirectory.from_config(Config(str(ALEMBIC_INI))).get_current_head()

USER_TABLES = {
    "chat_sessions",
    "chat_messages",
    "agents",
    "agent_plans",
    "agent_plan_steps",
    "agent_chat_messages",
    "agent_executions",
    "agent_approvals",
    "projects",
    "tasks",
    "notes",
    "brain_dumps",
    "calendar_events",
}
PRIVATE_TABLES = {
    "alembic_version",
    "realtime_streams",
    "tool_call_receipts",
    "agent_prompts",
    "retention_marks",
    "execution_rollup",
    "plan_rollup",
    "plan_rollup_steps",
    "execution_stats_settled",
    "plan_outcomes_settled",
}
"""In `parley_private`: the service's only (RLS on where it holds user data, no grants; the
dashboard views' rollups readable by `service_role`, through the views)."""
VIEWS = {
    "execution_stats_daily",
    "plan_outcomes_daily",
    "permission_denials_daily",
    "session_timeline",
    "agent_chat_sessions",
}
PUBLISHED = {
    "chat_messages",
    "agent_chat_messages",
    "agent_plans",
    "agent_plan_steps",
    "agent_approvals",
}


@pytest.fixture
def empty_database(server_url: str) -> Iterator[str]:
    url = databases.create_database(server_url, template=None)
    yield url
    databases.drop_database(server_url, url)


def _names(conn: psycopg.Connection[tuple[object, ...]], query: str) -> set[str]:
    return {str(row[0]) for row in conn.execute(query).fetchall()}


def test_schema_at_head(database_url: str) -> None:
    with psycopg.connect(database_url) as conn:
        tables = _names(conn, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        rls = _names(
            conn,
            "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace "
            "AND relkind = 'r' AND relrowsecurity",
        )
        views = _names(
            conn,
            "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace "
            "AND relkind = 'v' AND 'security_invoker=true' = ANY(reloptions)",
        )
        published = _names(
            conn, "SELECT tablename FROM pg_publication_tables WHERE pubname = 'supabase_realtime'"
        )
        private = _names(
            conn,
            "SELECT relname FROM pg_class WHERE relnamespace = 'parley_private'::regnamespace "
            "AND relkind = 'r'",
        )
        receipts_rls = conn.execute(
            "SELECT bool_and(relrowsecurity) FROM pg_class WHERE oid = ANY(ARRAY["
            "'parley_private.tool_call_receipts', 'parley_private.agent_prompts', "
            "'parley_private.retention_marks']::regclass[])"
        ).fetchone()
    assert tables == USER_TABLES  # the version table is in parley_private
    assert rls == USER_TABLES
    assert views == VIEWS
    assert published == PUBLISHED
    assert private == PRIVATE_TABLES
    assert receipts_rls == (True,)


def test_upgrade_downgrade_upgrade_round_trips(empty_database: str) -> None:
    upgrade(empty_database)
    downgrade(empty_database)
    with psycopg.connect(empty_database) as conn:
        leftovers = _names(
            conn,
            "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace "
            "AND relkind IN ('r', 'v', 'S')",
        )
        functions = _names(
            conn,
            "SELECT proname FROM pg_proc "
            "WHERE pronamespace IN ('public'::regnamespace, 'parley_private'::regnamespace)",
        )
        private = _names(
            conn, "SELECT relname FROM pg_class WHERE relnamespace = 'parley_private'::regnamespace"
        )
        auth = conn.execute("SELECT to_regnamespace('auth')").fetchone()
    assert leftovers == set() and functions == set()
    assert private == {"alembic_version", "alembic_version_pkc"}  # Alembic's own, emptied
    assert auth == (None,)  # the compat schema was ours, so it went
    upgrade(empty_database)
    with psycopg.connect(empty_database) as conn:
        assert conn.execute("SELECT auth.uid()").fetchone() == (None,)
        assert conn.execute(
            "SELECT rolsuper FROM pg_roles WHERE rolname = current_user"
        ).fetchone() == (False,)


def test_a_version_table_left_in_public_is_moved_before_alembic_reads_it(
    empty_database: str,
) -> None:
    """A database migrated before the version table moved: Alembic must find its version
    (not start again from the first revision), and the table must leave the Data API."""
    upgrade(empty_database, "3f8a9c2d0301")
    with psycopg.connect(empty_database, autocommit=True) as conn:
        conn.execute("ALTER TABLE parley_private.alembic_version SET SCHEMA public")
        # What Supabase's default privileges gave it when an older Parley created it there.
        conn.execute("GRANT ALL ON public.alembic_version TO anon, authenticated, service_role")
    upgrade(empty_database)
    with psycopg.connect(empty_database) as conn:
        where = conn.execute(
            "SELECT table_schema FROM information_schema.tables "
            "WHERE table_name = 'alembic_version'"
        ).fetchall()
        version = conn.execute("SELECT version_num FROM parley_private.alembic_version").fetchall()
        moved = conn.execute(
            "SELECT to_regprocedure('parley_private.set_updated_at()') IS NOT NULL"
        ).fetchone()
        grants = conn.execute(
            "SELECT count(*) FROM information_schema.role_table_grants "
            "WHERE table_name = 'alembic_version' AND grantee = ANY(%s)",
            (list(API_ROLES),),
        ).fetchone()
    assert where == [("parley_private",)]
    assert version == [(HEAD,)]
    assert moved == (True,)
    assert grants == (0,)


def _compat_sql(name: str) -> str:
    """A statement of the first revision, as Alembic would run it."""
    (path,) = VERSIONS.glob("*-0a1c0e5b0001_*.py")
    spec = importlib.util.spec_from_file_location("compat_revision", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(getattr(module, name))


@pytest.fixture
def without_api_roles(server_url: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    """A superuser's open transaction on a server where Supabase's roles do not exist.

    Roles are cluster-wide and the suite's databases use them, so they are renamed away inside
    this transaction only: other sessions keep seeing them, and the rollback restores them.
    """
    with psycopg.connect(server_url) as conn:
        for role in API_ROLES:
            conn.execute(f"ALTER ROLE {role} RENAME TO parley_hidden_{role}")
        try:
            yield conn
        finally:
            conn.rollback()


def test_the_first_revision_stops_when_it_cannot_create_the_roles(
    without_api_roles: psycopg.Connection[tuple[object, ...]],
) -> None:
    """Plain Postgres whose owner is no superuser (RDS, Cloud SQL, Neon...): BYPASSRLS is out
    of its reach, so the revision stops, saying what to create and how."""
    conn = without_api_roles
    conn.execute("CREATE ROLE parley_managed_owner NOSUPERUSER CREATEROLE CREATEDB NOLOGIN")
    conn.execute("SET ROLE parley_managed_owner")
    with pytest.raises(psycopg.errors.InsufficientPrivilege) as raised, conn.transaction():
        conn.execute(_compat_sql("ROLES"))
    roles = conn.execute(
        "SELECT rolname FROM pg_roles WHERE rolname = ANY(%s)", (list(API_ROLES),)
    ).fetchall()
    diagnostic = raised.value.diag
    assert diagnostic.message_primary is not None and diagnostic.message_hint is not None
    assert "parley_managed_owner cannot create or join anon, authenticated, service_role" in (
        diagnostic.message_primary
    )
    for statement in (
        "CREATE ROLE anon NOLOGIN NOINHERIT;",
        "CREATE ROLE authenticated NOLOGIN NOINHERIT;",
        "CREATE ROLE service_role NOLOGIN NOINHERIT BYPASSRLS;",
        "GRANT anon, authenticated, service_role TO parley_managed_owner;",
    ):
        assert statement in diagnostic.message_hint
    assert roles == []  # the revision changed nothing


def test_the_first_revision_creates_the_roles_where_it_may(
    without_api_roles: psycopg.Connection[tuple[object, ...]],
) -> None:
    conn = without_api_roles
    conn.execute(_compat_sql("ROLES"))
    roles = conn.execute(
        "SELECT rolname, rolcanlogin, rolinherit, rolbypassrls FROM pg_roles "
        "WHERE rolname = ANY(%s) ORDER BY rolname",
        (list(API_ROLES),),
    ).fetchall()
    assert roles == [
        ("anon", False, False, False),
        ("authenticated", False, False, False),
        ("service_role", False, False, True),
    ]


SUPABASE_LIKE = """
CREATE SCHEMA auth;
CREATE TABLE auth.users (id uuid PRIMARY KEY, aud varchar(255), role varchar(255),
                         email varchar(255), encrypted_password varchar(255),
                         created_at timestamptz DEFAULT now());
CREATE FUNCTION auth.uid() RETURNS uuid LANGUAGE sql STABLE AS
  $$ SELECT nullif(current_setting('request.jwt.claim.sub', true), '')::uuid $$;
COMMENT ON FUNCTION auth.uid() IS 'Deprecated. Use auth.jwt() -> ''sub'' instead.';
CREATE FUNCTION auth.role() RETURNS text LANGUAGE sql STABLE AS
  $$ SELECT nullif(current_setting('request.jwt.claim.role', true), '')::text $$;
CREATE FUNCTION auth.jwt() RETURNS jsonb LANGUAGE sql STABLE AS
  $$ SELECT nullif(current_setting('request.jwt.claims', true), '')::jsonb $$;
CREATE SCHEMA extensions;
CREATE EXTENSION pg_trgm WITH SCHEMA extensions;
CREATE PUBLICATION supabase_realtime;
"""


def test_supabase_objects_are_reused_not_replaced(empty_database: str) -> None:
    with psycopg.connect(empty_database, autocommit=True) as conn:
        conn.execute(SUPABASE_LIKE)
    upgrade(empty_database)
    with psycopg.connect(empty_database) as conn:
        comment = conn.execute("SELECT obj_description('auth.uid()'::regprocedure)").fetchone()
        columns = _names(
            conn,
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = 'auth' AND table_name = 'users'",
        )
        published = _names(
            conn, "SELECT tablename FROM pg_publication_tables WHERE pubname = 'supabase_realtime'"
        )
    assert comment == ("Deprecated. Use auth.jwt() -> 'sub' instead.",)
    assert "encrypted_password" in columns
    assert published == PUBLISHED

    downgrade(empty_database)
    with psycopg.connect(empty_database) as conn:
        survivors = conn.execute(
            "SELECT to_regprocedure('auth.uid()') IS NOT NULL, "
            "EXISTS (SELECT FROM pg_publication WHERE pubname = 'supabase_realtime'), "
            "EXISTS (SELECT FROM pg_extension WHERE extname = 'pg_trgm')"
        ).fetchone()
    assert survivors == (True, True, True)  # Supabase's own objects are never dropped


BEFORE_PARTITIONING = "3f8a9c2d0301"


def _session_channel_visible(conn: psycopg.Connection[tuple[object, ...]], user: str) -> bool:
    """Whether the stored message of `session:<s>` is readable by `user` under the policy."""
    with conn.transaction(force_rollback=True):
        topic = conn.execute("SELECT 'session:' || id FROM chat_sessions").fetchone()
        assert topic is not None
        conn.execute(
            "SELECT set_config('role', 'authenticated', true), "
            "set_config('request.jwt.claim.sub', %s, true), "
            "set_config('realtime.topic', %s, true)",
            (user, topic[0]),
        )
        row = conn.execute(
            "SELECT count(*) FROM realtime.messages WHERE topic = %s", (topic[0],)
        ).fetchone()
    return row == (1,)


def test_a_database_that_ran_the_old_revision_upgrades_its_messages(empty_database: str) -> None:
    upgrade(empty_database, BEFORE_PARTITIONING)
    owner, other = "00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002"
    with psycopg.connect(empty_database, autocommit=True) as conn:
        conn.execute("INSERT INTO auth.users (id) VALUES (%s), (%s)", (owner, other))
        session = conn.execute(
            "INSERT INTO chat_sessions (user_id) VALUES (%s) RETURNING id", (owner,)
        ).fetchone()
        assert session is not None
        conn.execute(
            "INSERT INTO realtime.messages (topic, extension, payload, inserted_at) "
            "VALUES (%s, 'broadcast', '{\"kept\": true}', now() - interval '2 days')",
            (f"session:{session[0]}",),
        )
    upgrade(empty_database)
    with psycopg.connect(empty_database, autocommit=True) as conn:
        kind = conn.execute(
            "SELECT relkind FROM pg_class WHERE oid = 'realtime.messages'::regclass"
        ).fetchone()
        kept = conn.execute("SELECT payload FROM realtime.messages").fetchall()
        policies = _names(conn, "SELECT policyname FROM pg_policies WHERE tablename = 'messages'")
        assert (_session_channel_visible(conn, owner), _session_channel_visible(conn, other)) == (
            True,
            False,
        )
        conn.execute("SELECT realtime.send('{\"a\": 1}', 'e', 'anywhere', false)")
        sent = conn.execute("SELECT count(*) FROM realtime.messages").fetchone()
    assert kind == ("p",)
    assert kept == [({"kept": True},)]
    assert policies == {"parley_read_own_session_channels"}
    assert sent == (2,)  # today's partition exists

    downgrade(empty_database, BEFORE_PARTITIONING)
    with psycopg.connect(empty_database) as conn:
        kind = conn.execute(
            "SELECT relkind FROM pg_class WHERE oid = 'realtime.messages'::regclass"
        ).fetchone()
        rows = conn.execute("SELECT count(*) FROM realtime.messages").fetchone()
        send = conn.execute("SELECT to_regprocedure('realtime.send(jsonb,text,text,boolean)')")
        assert (kind, rows, send.fetchone()) == (("r",), (2,), (None,))
        assert _session_channel_visible(conn, owner)


SUPABASE_REALTIME = """
CREATE SCHEMA realtime;
CREATE TABLE realtime.messages (topic text NOT NULL, extension text NOT NULL, payload jsonb,
    event text, private boolean DEFAULT false, updated_at timestamp NOT NULL DEFAULT now(),
    inserted_at timestamp NOT NULL DEFAULT now(), id uuid NOT NULL DEFAULT gen_random_uuid(),
    binary_payload bytea) PARTITION BY RANGE (inserted_at);
ALTER TABLE realtime.messages ENABLE ROW LEVEL SECURITY;
CREATE FUNCTION realtime.topic() RETURNS text LANGUAGE sql STABLE AS
  $$ SELECT nullif(current_setting('realtime.topic', true), '')::text $$;
CREATE FUNCTION realtime.send(payload jsonb, event text, topic text, private boolean DEFAULT true)
  RETURNS void LANGUAGE sql AS $$ SELECT $$;
COMMENT ON FUNCTION realtime.send(jsonb, text, text, boolean) IS 'Supabase''s own';
"""


def test_supabase_realtime_objects_are_left_alone(empty_database: str) -> None:
    with psycopg.connect(empty_database, autocommit=True) as conn:
        conn.execute(SUPABASE_LIKE + SUPABASE_REALTIME)
    upgrade(empty_database)
    downgrade(empty_database)
    with psycopg.connect(empty_database) as conn:
        left = conn.execute(
            "SELECT obj_description('realtime.send(jsonb,text,text,boolean)'::regprocedure), "
            "(SELECT relkind FROM pg_class WHERE oid = 'realtime.messages'::regclass), "
            "(SELECT count(*) FROM pg_inherits WHERE inhparent = 'realtime.messages'::regclass), "
            "to_regprocedure('realtime.broadcast_changes(text,text,text,text,text,record,record,"
            "text)') IS NOT NULL"
        ).fetchone()
    # Supabase's send() kept; broadcast_changes() was missing, so Parley added and removed it;
    # partitions are the Realtime service's business.
    assert left == ("Supabase's own", "p", 0, False)


BEFORE_JSON_HASH = "6b2e9f4c0401"


def test_stored_approval_hashes_are_recomputed_both_ways(empty_database: str) -> None:
    """Revision 2c8f4e7a0501 rehashes existing approvals (every input is a column) and puts the
    old hash back on downgrade, leaving `updated_at` alone. (The rows are made at head, by
    today's repositories, then the schema goes back to before the revision.)"""
    migration = _revision("2c8f4e7a0501")
    upgrade(empty_database)

    async def world() -> None:
        async with Database(empty_database) as db:
            await make_world(db, await make_user(db))

    asyncio.run(world())
    downgrade(empty_database, BEFORE_JSON_HASH)
    hashes = (
        f"SELECT call_hash = {migration.CALL_HASH} AS new, "
        f"call_hash = {migration.OLD_CALL_HASH} AS old, updated_at FROM agent_approvals"
    )
    with psycopg.connect(empty_database, autocommit=True) as conn:
        conn.execute(f"UPDATE agent_approvals SET call_hash = {migration.OLD_CALL_HASH}")
        ((_, _, stamped),) = conn.execute(hashes).fetchall()
    upgrade(empty_database)
    with psycopg.connect(empty_database) as conn:
        assert conn.execute(hashes).fetchall() == [(True, False, stamped)]
    downgrade(empty_database, BEFORE_JSON_HASH)
    with psycopg.connect(empty_database) as conn:
        assert conn.execute(hashes).fetchall() == [(False, True, stamped)]


def _revision(revision: str) -> Any:
    path = next(VERSIONS.glob(f"*-{revision}_*.py"))
    spec = importlib.util.spec_from_file_location(f"revision_{revision}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
