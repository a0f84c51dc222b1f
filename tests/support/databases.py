"""Test databases: one migrated template per migration set, cloned cheaply per test module.

The server is `DATABASE_URL` when set (its user must be a superuser: it creates Supabase's
roles and the test databases), else the embedded Postgres under `.parley/`. Every test database
starts as a Supabase project does (`tests/support/supabase_project.py`: a non-superuser owner,
Supabase's roles and default privileges); the migrations run as that owner, and tests connect as it.
The template is named after a hash of `migrations/` and of that bootstrap, so a changed migration
gets a fresh template and an unchanged one is reused across runs. A clone gets the
`realtime.messages` partitions of its own day (the local Realtime server would create them).
"""

from __future__ import annotations

import hashlib
import itertools
import os
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
from psycopg import sql

from local.migrate import upgrade
from local.postgres import start_embedded, with_database
from local.realtime.messages.store import CREATE_PARTITIONS
from tests.support import ROOT, supabase_project

_counter = itertools.count()


def server_url() -> str:
    """The maintenance URL of the server tests run against."""
    return os.environ.get("DATABASE_URL") or start_embedded(ROOT / ".parley")


def migrations_digest() -> str:
    digest = hashlib.sha256()
    sources = [*(ROOT / "migrations").rglob("*.py"), Path(supabase_project.__file__)]
    for path in sorted(sources):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def admin(url: str) -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(url, autocommit=True, prepare_threshold=None)


def ensure_template(url: str) -> str:
    """Create (once, under an advisory lock) the migrated template; return its name."""
    name = f"parley_tpl_{migrations_digest()}"
    with admin(url) as conn:
        supabase_project.ensure_roles(conn)
        conn.execute("SELECT pg_advisory_lock(4242)")
        try:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (name,)
            ).fetchone()
            if not exists:
                building = f"{name}_building"
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(building)))
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(building)))
                supabase_project.prepare_database(url, building)
                upgrade(supabase_project.as_owner(with_database(url, building)))
                conn.execute(
                    sql.SQL("ALTER DATABASE {} RENAME TO {}").format(
                        sql.Identifier(building), sql.Identifier(name)
                    )
                )
        finally:
            conn.execute("SELECT pg_advisory_unlock(4242)")
    return name


def create_database(url: str, *, template: str | None) -> str:
    """A new, uniquely named database: a clone of `template`, or a Supabase project before
    Parley's migrations. Returns its URL as the project owner."""
    name = f"parley_test_{os.getpid()}_{next(_counter)}"
    query = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    if template:
        query += sql.SQL(" TEMPLATE {} OWNER {} STRATEGY FILE_COPY").format(
            sql.Identifier(template), sql.Identifier(supabase_project.OWNER)
        )
    with admin(url) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(query)
    if template:  # the template may be days old: give `realtime.send()` today's partitions
        with admin(with_database(url, name)) as conn:
            conn.execute(CREATE_PARTITIONS)
    else:
        supabase_project.prepare_database(url, name)
    return supabase_project.as_owner(with_database(url, name))


def drop_checked(url: str, database_url: str) -> None:
    """Drop a test database, having held every event sent in it against the events' schema
    (`tests/support/event_check.py`): how every event the suite produces is checked."""
    from tests.support.event_check import check_database_events

    try:
        check_database_events(database_url)
    finally:
        drop_database(url, database_url)


def drop_database(url: str, database_url: str) -> None:
    name = urlsplit(database_url).path.lstrip("/")
    with admin(url) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


def drop_stale(url: str) -> None:
    """Drop test databases left behind by runs that no longer exist."""
    with admin(url) as conn:
        rows = conn.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE 'parley\\_test\\_%'"
        ).fetchall()
        for (name,) in rows:
            pid = int(str(name).split("_")[2])
            if pid != os.getpid() and not _alive(pid):
                conn.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                        sql.Identifier(str(name))
                    )
                )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
