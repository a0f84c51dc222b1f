"""A database in the state a new Supabase project is in before Parley's migrations run.

Taken from Supabase's own setup (`supabase/postgres`, `migrations/db/`):

* `init-scripts/00000000000000-initial-schema.sql` — roles `anon`, `authenticated` (NOLOGIN),
  `service_role` (NOLOGIN, BYPASSRLS) and `authenticator` (LOGIN NOINHERIT, member of the
  three); `USAGE` on `public` for them; and, for objects the project owner creates in
  `public`, the default privileges `GRANT ALL ON TABLES, FUNCTIONS, SEQUENCES TO postgres, anon,
  authenticated, service_role` — so every table, function and sequence a migration creates
  there is open to the anon key until the migration revokes it;
* `migrations/10000000000000_demote-postgres.sql` — the owner `postgres` is no superuser:
  `NOSUPERUSER CREATEDB CREATEROLE LOGIN REPLICATION BYPASSRLS`, and it owns the database;
* `migrations/20230201083204_grant_auth_roles_to_postgres.sql` — `postgres` is a member of
  `anon`, `authenticated` and `service_role` (so it can `SET ROLE` to them);
* `migrations/20230529180330_alter_api_roles_for_inherit.sql` — the three API roles INHERIT;
* `init-scripts/00000000000003-post-setup.sql` — `postgres`'s `search_path` is
  `"$user", public, extensions`.

The test server's own superuser is usually called `postgres`, so the project owner here is
`supabase_postgres`; nothing in Parley depends on the owner's name. Supabase's `auth`,
`extensions` and `realtime` schemas are not reproduced: Parley's compatibility revisions create
their plain-Postgres stand-ins (tests/migrations/test_migrations.py checks that Supabase's own
are reused instead when present).

Roles are cluster-wide: `ensure_roles` creates them once per server and sets their attributes;
`prepare_database` gives one new database its owner and privileges.
"""

from __future__ import annotations

from urllib.parse import quote, urlsplit, urlunsplit

import psycopg
from psycopg import sql

OWNER = "supabase_postgres"
"""Plays Supabase's `postgres`: the role migrations and the service run as."""
OWNER_PASSWORD = "parley-test-owner"
API_ROLES = ("anon", "authenticated", "service_role")

_ROLES = {
    "anon": "NOLOGIN INHERIT",
    "authenticated": "NOLOGIN INHERIT",
    "service_role": "NOLOGIN INHERIT BYPASSRLS",
    "authenticator": "LOGIN NOINHERIT",
    OWNER: "NOSUPERUSER CREATEDB CREATEROLE LOGIN REPLICATION BYPASSRLS",
}
_DATABASE = """
GRANT USAGE ON SCHEMA public TO {owner}, anon, authenticated, service_role;
ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA public
    GRANT ALL ON TABLES TO {owner}, anon, authenticated, service_role;
ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA public
    GRANT ALL ON FUNCTIONS TO {owner}, anon, authenticated, service_role;
ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA public
    GRANT ALL ON SEQUENCES TO {owner}, anon, authenticated, service_role;
"""


def ensure_roles(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    """Create (or correct) Supabase's roles and the project owner; `conn` is a superuser's."""
    conn.execute("SELECT pg_advisory_lock(4243)")  # roles are shared by concurrent test runs
    try:
        for role, attributes in _ROLES.items():
            exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
            verb = "ALTER" if exists else "CREATE"
            conn.execute(
                sql.SQL("{} ROLE {} {}").format(
                    sql.SQL(verb), sql.Identifier(role), sql.SQL(attributes)
                )
            )
        conn.execute(
            sql.SQL("ALTER ROLE {} PASSWORD {}").format(
                sql.Identifier(OWNER), sql.Literal(OWNER_PASSWORD)
            )
        )
        conn.execute(
            sql.SQL('ALTER ROLE {} SET search_path TO "$user", public, extensions').format(
                sql.Identifier(OWNER)
            )
        )
        api = sql.SQL(", ").join(map(sql.Identifier, API_ROLES))
        for member in ("authenticator", OWNER):
            conn.execute(sql.SQL("GRANT {} TO {}").format(api, sql.Identifier(member)))
    finally:
        conn.execute("SELECT pg_advisory_unlock(4243)")


def prepare_database(superuser_url: str, database: str) -> None:
    """Give the new, empty `database` to the owner with Supabase's privileges on `public`."""
    with psycopg.connect(superuser_url, autocommit=True, prepare_threshold=None) as conn:
        conn.execute(
            sql.SQL("ALTER DATABASE {} OWNER TO {}").format(
                sql.Identifier(database), sql.Identifier(OWNER)
            )
        )
    target = urlunsplit(urlsplit(superuser_url)._replace(path=f"/{database}"))
    with psycopg.connect(target, autocommit=True, prepare_threshold=None) as conn:
        conn.execute(sql.SQL(_DATABASE).format(owner=sql.Identifier(OWNER)))


def as_owner(url: str) -> str:
    """The same database URL, logging in as the project owner."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{OWNER}:{quote(OWNER_PASSWORD, safe='')}@{host}"))
