"""What Supabase's client roles can reach after Parley's migrations, on a Supabase-like database.

The test databases start as a Supabase project does (`tests/support/supabase_project.py`): the owner
is no superuser and its default privileges give `anon` and `authenticated` ALL on every table,
function and sequence it creates in `public`. These tests walk every object of every schema the Data
API exposes, and of Parley's private schema, and compare what `anon` and `authenticated` hold with
what Parley means them to hold: a grant too many fails here.

Privileges are read from the ACLs themselves (`aclexplode`), including grants to PUBLIC and the
built-in defaults (functions are executable by PUBLIC unless revoked).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from uuid import UUID

import psycopg
import pytest
from psycopg import sql
from psycopg.rows import dict_row

from shared.db import Database
from tests.support.factories import make_user
from tests.support.supabase_project import OWNER

EXPOSED = ("public", "graphql_public")
"""Supabase's default exposed schemas (Project settings → Data API → Exposed schemas)."""
PRIVATE = "parley_private"
CLIENT_ROLES = ("anon", "authenticated")

SERVICE_WRITTEN = (
    "chat_messages",
    "agents",
    "agent_plans",
    "agent_plan_steps",
    "agent_chat_sessions",
    "agent_chat_messages",
    "agent_executions",
    "agent_approvals",
)
DOMAIN = ("projects", "tasks", "notes", "brain_dumps", "calendar_events")
AUTHENTICATED: dict[str, set[str]] = {
    "chat_sessions": {
        "SELECT",
        "DELETE",
        "INSERT(title)",
        "INSERT(user_id)",
        "UPDATE(status)",
        "UPDATE(title)",
    },
    **{table: {"SELECT"} for table in SERVICE_WRITTEN},
    **{table: {"SELECT", "INSERT", "UPDATE", "DELETE"} for table in DOMAIN},
    "session_timeline": {"SELECT"},
}
"""Everything `authenticated` may do in the exposed schemas (RLS narrows it to own rows)."""
VIEWS = (
    "execution_stats_daily",
    "plan_outcomes_daily",
    "permission_denials_daily",
    "session_timeline",
    "agent_chat_sessions",
)
SEARCH_HELPERS = {
    f"parley_private.{table}_matching(text)"
    for table in ("projects", "tasks", "notes", "brain_dumps")
}
USER_HELPERS = SEARCH_HELPERS | {"parley_private.retention_removed()"}
"""What a user's unit of work may call in the private schema: the trigram lookups, and what
retention deleted (per kind of detail, through which plan end: no user data)."""

RELATIONS = """
SELECT c.relname AS name, c.relkind AS kind, c.relrowsecurity AS rls,
       coalesce('security_invoker=true' = ANY(c.reloptions), false) AS invoker,
       array(SELECT DISTINCT a.privilege_type
               FROM aclexplode(coalesce(c.relacl, acldefault(
                        CASE c.relkind WHEN 'S' THEN 's'::"char" ELSE 'r'::"char" END,
                        c.relowner))) a
              WHERE a.grantee IN (0, %(role)s::regrole)) AS privileges,
       array(SELECT DISTINCT a.privilege_type || '(' || att.attname || ')'
               FROM pg_attribute att, aclexplode(att.attacl) a
              WHERE att.attrelid = c.oid AND a.grantee IN (0, %(role)s::regrole)) AS columns
  FROM pg_class c
 WHERE c.relnamespace = %(schema)s::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
"""
FUNCTIONS = """
SELECT p.oid::regprocedure::text AS name
  FROM pg_proc p
 WHERE p.pronamespace = %(schema)s::regnamespace
   AND EXISTS (SELECT FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
                WHERE a.grantee IN (0, %(role)s::regrole) AND a.privilege_type = 'EXECUTE')
"""


@pytest.fixture(scope="module")
def catalog(database_url: str) -> Iterator[psycopg.Connection[dict[str, Any]]]:
    with psycopg.connect(database_url, row_factory=dict_row) as conn:
        yield conn


def _schemas(conn: psycopg.Connection[dict[str, Any]], names: tuple[str, ...]) -> list[str]:
    rows = conn.execute(
        "SELECT nspname FROM pg_namespace WHERE nspname = ANY(%s)", (list(names),)
    ).fetchall()
    return [row["nspname"] for row in rows]


def _reach(
    conn: psycopg.Connection[dict[str, Any]], role: str, schemas: list[str]
) -> dict[str, set[str]]:
    """Relation name → what `role` may do on it (table- and column-level), where non-empty."""
    reach: dict[str, set[str]] = {}
    for schema in schemas:
        for row in conn.execute(RELATIONS, {"role": role, "schema": schema}).fetchall():
            held = {*row["privileges"], *row["columns"]}
            if held:
                reach[row["name"]] = held
    return reach


def _executable(
    conn: psycopg.Connection[dict[str, Any]], role: str, schemas: list[str]
) -> set[str]:
    found: set[str] = set()
    for schema in schemas:
        rows = conn.execute(FUNCTIONS, {"role": role, "schema": schema}).fetchall()
        found |= {row["name"] for row in rows}
    return found


def test_the_database_was_migrated_like_a_supabase_project(catalog) -> None:
    """Guards the premise: a non-superuser owner with Supabase's default privileges."""
    owner = catalog.execute(
        "SELECT current_user AS name, rolsuper, rolcreaterole, rolbypassrls FROM pg_roles "
        "WHERE rolname = current_user"
    ).fetchone()
    defaults = catalog.execute(
        """SELECT d.defaclobjtype AS kind, array_agg(DISTINCT a.grantee::regrole::text) AS roles
             FROM pg_default_acl d, aclexplode(d.defaclacl) a
            WHERE d.defaclrole = current_user::regrole
              AND d.defaclnamespace = 'public'::regnamespace
            GROUP BY 1"""
    ).fetchall()
    tables_owner = catalog.execute(
        "SELECT DISTINCT tableowner FROM pg_tables WHERE schemaname = 'public'"
    ).fetchall()
    assert owner == {"name": OWNER, "rolsuper": False, "rolcreaterole": True, "rolbypassrls": True}
    assert {row["kind"]: set(row["roles"]) >= {"anon", "authenticated"} for row in defaults} == {
        "r": True,
        "f": True,
        "S": True,
    }
    assert tables_owner == [{"tableowner": OWNER}]


@pytest.mark.parametrize("role", CLIENT_ROLES)
def test_exposed_schemas_hold_only_what_parley_grants(catalog, role: str) -> None:
    reach = _reach(catalog, role, _schemas(catalog, EXPOSED))
    assert reach == (AUTHENTICATED if role == "authenticated" else {})


def test_everything_granted_in_exposed_schemas_is_under_rls(catalog) -> None:
    schemas = _schemas(catalog, EXPOSED)
    granted = set(_reach(catalog, "authenticated", schemas)) | set(_reach(catalog, "anon", schemas))
    unsafe = []
    for schema in schemas:
        for row in catalog.execute(RELATIONS, {"role": "anon", "schema": schema}).fetchall():
            if row["name"] not in granted:
                continue
            if (row["kind"] in ("r", "p") and not row["rls"]) or (
                row["kind"] == "v" and not row["invoker"]
            ):
                unsafe.append(row["name"])
            if row["kind"] not in ("r", "p", "v"):
                unsafe.append(row["name"])
    assert unsafe == []


def test_service_role_only_reads_the_views(catalog) -> None:
    """Supabase's default privileges would give it ALL on a view (as on a table); Parley's
    migrations leave it SELECT, as on plain Postgres."""
    held = {
        row["name"]: set(row["privileges"])
        for schema in _schemas(catalog, EXPOSED)
        for row in catalog.execute(RELATIONS, {"role": "service_role", "schema": schema})
        if row["kind"] == "v"
    }
    assert held == {view: {"SELECT"} for view in VIEWS}


@pytest.mark.parametrize("role", CLIENT_ROLES)
def test_no_function_in_an_exposed_schema_is_executable(catalog, role: str) -> None:
    assert _executable(catalog, role, _schemas(catalog, EXPOSED)) == set()


def test_the_private_schema_serves_only_the_user_helpers_and_the_rollups(catalog) -> None:
    usage = catalog.execute(
        """SELECT a.grantee::regrole::text AS role FROM pg_namespace n, aclexplode(n.nspacl) a
            WHERE n.nspname = %s AND a.privilege_type = 'USAGE' AND a.grantee <> n.nspowner""",
        (PRIVATE,),
    ).fetchall()
    version_table = catalog.execute(
        "SELECT table_schema FROM information_schema.tables WHERE table_name = 'alembic_version'"
    ).fetchall()
    # authenticated: the search helpers and what retention deleted; service_role: the rollups
    # the dashboard views read (the views run as their caller). No PUBLIC, no anon.
    assert sorted(row["role"] for row in usage) == ["authenticated", "service_role"]
    # ... and the ids' default: a user creating a session through the Data API makes its id.
    assert _executable(catalog, "authenticated", [PRIVATE]) == {
        *USER_HELPERS,
        "parley_private.new_id()",
    }
    assert _executable(catalog, "anon", [PRIVATE]) == set()
    assert _reach(catalog, "authenticated", [PRIVATE]) == {}
    assert _reach(catalog, "anon", [PRIVATE]) == {}
    dashboards = (
        "execution_rollup",
        "plan_rollup",
        "execution_stats_settled",
        "plan_outcomes_settled",
    )
    assert _reach(catalog, "service_role", [PRIVATE]) == {name: {"SELECT"} for name in dashboards}
    assert version_table == [{"table_schema": PRIVATE}]


@pytest.mark.parametrize("role", CLIENT_ROLES)
async def test_a_client_role_cannot_rewind_a_session_counter(db: Database, role: str) -> None:
    """The attack from the report: `select allocate_session_seq('<session>', -2)` as anon."""
    user = await make_user(db)
    async with db.service() as conn:
        cur = await conn.execute(
            "INSERT INTO chat_sessions (user_id) VALUES (%s) RETURNING id", (user,)
        )
        row = await cur.fetchone()
    assert row is not None
    session: UUID = row["id"]
    for function in ("public.allocate_session_seq", "parley_private.allocate_session_seq"):
        query = sql.SQL("SELECT {}(%s, -2)").format(sql.SQL(function))
        refused = (psycopg.errors.InsufficientPrivilege, psycopg.errors.UndefinedFunction)
        with pytest.raises(refused):
            async with db.service() as conn:
                await conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(role)))
                await conn.execute(query, (session,))
    async with db.service() as conn:
        cur = await conn.execute("SELECT last_seq FROM chat_sessions WHERE id = %s", (session,))
        assert await cur.fetchone() == {"last_seq": 0}


def test_every_security_definer_function_fixes_its_search_path(catalog) -> None:
    """A definer function runs with the owner's rights: with the caller's `search_path` it
    could be made to call the caller's objects (Supabase's Security Advisor lint 0011)."""
    rows = catalog.execute(
        """SELECT p.oid::regprocedure::text AS name,
                  coalesce(EXISTS (SELECT FROM unnest(p.proconfig) c
                                    WHERE c LIKE 'search\\_path=%'), false) AS fixed
             FROM pg_proc p
            WHERE p.prosecdef AND p.proowner = current_user::regrole"""
    ).fetchall()
    assert rows and [row["name"] for row in rows if not row["fixed"]] == []
