"""Migrations: the final schema, a round trip, and a database that already looks like Supabase."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from local.migrate import downgrade, upgrade
from tests import databases

USER_TABLES = {
    "chat_sessions", "chat_messages", "agents", "agent_plans", "agent_plan_steps",
    "agent_chat_sessions", "agent_chat_messages", "agent_executions", "agent_approvals",
    "projects", "tasks", "notes", "brain_dumps", "calendar_events",
}  # fmt: skip
INTERNAL_TABLES = {"tool_call_receipts"}
"""Written and read by the service only: RLS on, no policy, nothing granted to client roles."""
VIEWS = {"execution_stats_daily", "plan_outcomes_daily", "permission_denials_daily",
         "session_timeline"}  # fmt: skip
PUBLISHED = {"chat_messages", "agent_chat_messages", "agent_plans", "agent_plan_steps",
             "agent_approvals"}  # fmt: skip


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
        granted = _names(
            conn,
            "SELECT DISTINCT table_name FROM information_schema.role_table_grants "
            "WHERE grantee IN ('anon', 'authenticated') AND table_schema = 'public'",
        )
    assert tables == USER_TABLES | INTERNAL_TABLES | {"alembic_version"}
    assert rls == USER_TABLES | INTERNAL_TABLES
    assert views == VIEWS
    assert published == PUBLISHED
    assert granted & INTERNAL_TABLES == set()


def test_upgrade_downgrade_upgrade_round_trips(empty_database: str) -> None:
    upgrade(empty_database)
    downgrade(empty_database)
    with psycopg.connect(empty_database) as conn:
        leftovers = _names(
            conn,
            "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace "
            "AND relkind IN ('r', 'v') AND relname <> 'alembic_version'",
        )
        auth = conn.execute("SELECT to_regnamespace('auth')").fetchone()
    assert leftovers == set()
    assert auth == (None,)  # the compat schema was ours, so it went
    upgrade(empty_database)
    with psycopg.connect(empty_database) as conn:
        assert conn.execute("SELECT auth.uid()").fetchone() == (None,)


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
