"""Benchmark: Parley on a grown database — many users, months of history, one heavy user.

    .venv/bin/python -m bench.scale --turns 100000 [--database NAME] [--regrow] [--only ...]

Grows a database to `--turns` turns by copying real turns — one of each kind of
`tests.support.turn_kinds` (direct, tool, complex), run once through the chat function's own path
against the fake model — into many users (`--turns-per-user`, 20: the issue's 100,000 turns
for 5,000 users, in sessions of 5 turns), one user with `--heavy-sessions` sessions of one turn
(10,000, at most a tenth of the turns) and one session of `--long-session` turns (1,000). Turns
are spread over `--months` months (6); each copy's timestamps are stretched around its start
by a factor drawn log-uniformly from `--stretch` (50–2,000: the fake model answers in
milliseconds, a real one in seconds), so durations spread as a real model's would. The kinds
take turns, a third each.

Growing is set-based SQL, a batch of turns per statement per table (`INSERT ... SELECT` over
the seed rows), the turns in the order they started and each batch's rows in the order of
their timestamps, as a live database receives them. What is copied is read from the catalog,
not listed here: every table of `public` and `parley_private` with a `user_id`, each column
as it stands — so a column or table added later is copied without a change here. A row
belongs to a turn through its `session_id`, `chat_session_id` or `plan_id` (or to the user,
for the domain tables: copied once per user). Ids are mapped (a row's id, and every `uuid`
column pointing at a copied row, to `md5(id, copy)`, its first 48 bits the copy's time when
the seed's id is time-ordered, as `parley_private.new_id()` makes them), so the copies keep
their references and their index entries sit where a live database's would; `user_id` to the
copy's user, the seed sessions to the copy's session, the seed planners to the session's one
planner; the copies' `seq`s follow each other in a session. Columns referencing tables that
are not copied (shared rows: a prompt stored once) keep their value. Copies are written with
`session_replication_role = replica` (no foreign-key checks, no triggers: the copies are
consistent by construction), then the tables are vacuumed and analyzed, and anything the
triggers would have kept (the daily rollups) is rebuilt from the rows.

The grown database is kept on the server (`--database`, default `parley_scale_<turns>`) and
reused by later runs (migrated to the current head first: a later revision's migration runs
on it as on a deployment); `--regrow` drops it first. Then it prints:

* Parley's own time per turn kind (as `bench.turn_overhead`: a turn's wall time less the time
  model calls were in flight), on the grown database and on an empty one, alternately in
  `--rounds` rounds, and their ratio;
* each read route (`GET /sessions`, `/sessions/{id}/timeline`, `/sessions/{id}/messages`,
  the planner's `GET /plans/{id}`), served in-process by the functions' own apps, p50/p95, for
  ordinary users, the heavy user and the long session;
* the dashboards: `GET /dashboards/daily?days=30` and the SQL views it reads, p50/p95;
* the sweeper's queries (run in transactions rolled back, the rollups' fold among them),
  p50/p95;
* bytes per turn per table: heap, indexes, TOAST (and what the rows take in all);
* with `--only rollup-cost`: the daily rollups' cost on the hot path — own time per kind with
  the rollup triggers on, off, and off with the index a watermark job would need
  (`updated_at`), alternately — and what such a job reads each minute.

After growing, every foreign key of the copies is checked (`orphans`): a run stops if a copy
points nowhere.

`DATABASE_URL` picks the server (a superuser's URL, as for the tests); without it, the
embedded one. Figures on a shared machine are noisy: counts (rows, bytes) are not.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import importlib.util
import json
import random
import statistics
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from bench.turn_overhead import measure
from local.auth.keys import mint_token
from local.migrate import upgrade
from local.postgres import with_database
from local.realtime.messages.store import CREATE_PARTITIONS
from shared.db import plans, retention_batches, rollups
from shared.services import get_services
from tests.functions.conftest import SECRET
from tests.support import databases, supabase_project
from tests.support.turn_kinds import KINDS, Harness, Kind, harness, send

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ("public", "parley_private")
TURN_KEYS = ("session_id", "chat_session_id", "plan_id")
"""A row belongs to a turn through the first of these columns it has (`chat_sessions`: its id)."""
MARK = "parley bench.scale"
OPERATOR = {"app_metadata": {"parley_role": "operator"}}


# --- the layout: which user, session and time each copied turn gets ----------------------


@dataclass(frozen=True, slots=True)
class Layout:
    turns: int
    turns_per_user: int = 20
    turns_per_session: int = 5
    heavy_sessions: int = 10_000
    long_session: int = 1_000
    months: float = 6
    stretch: tuple[float, float] = (50, 2000)
    seed: int = 28

    @property
    def heavy(self) -> int:
        return min(self.heavy_sessions, self.turns // 10)

    @property
    def long(self) -> int:
        return min(self.long_session, self.turns // 10)

    @property
    def ordinary(self) -> int:
        return self.turns - self.heavy - self.long

    @property
    def ordinary_sessions(self) -> int:
        return -(-self.ordinary // self.turns_per_session)

    @property
    def ordinary_users(self) -> int:
        return -(-self.ordinary // self.turns_per_user)

    @property
    def heavy_user(self) -> int:
        return self.ordinary_users

    @property
    def long_user(self) -> int:
        return self.ordinary_users + 1

    @property
    def long_session_number(self) -> int:
        return self.ordinary_sessions + self.heavy

    def sql(self) -> str:
        """Rows (g: turn number, s: session, j: place in the session, u: user, t: its start,
        stretch, session_t: its session's start, o: its place in time) for every copied
        turn."""
        period = f"{self.months * 30} days"
        lo, hi = self.stretch
        stretch = f"exp(ln({lo}) + random() * ln({hi / lo}))"
        spread = f"now() - interval '{period}' + random() * interval '{period}'"
        per_session, per_user = self.turns_per_session, self.turns_per_user
        return f"""
        SELECT setseed(0.{self.seed});
        CREATE TEMP TABLE layout ON COMMIT PRESERVE ROWS AS
        WITH sessions AS (
            SELECT s, {spread} AS start FROM generate_series(0, {self.ordinary_sessions - 1}) s),
        ordinary AS (
            SELECT g, g / {per_session} AS s, g % {per_session} AS j, g / {per_user} AS u
            FROM generate_series(0, {self.ordinary - 1}) g),
        heavy AS (
            SELECT {self.ordinary} + h AS g, {self.ordinary_sessions} + h AS s, 0 AS j,
                   {self.heavy_user} AS u, {spread} AS t
            FROM generate_series(0, {self.heavy - 1}) h),
        long AS (
            SELECT {self.ordinary + self.heavy} + k AS g, {self.long_session_number} AS s,
                   k AS j, {self.long_user} AS u,
                   now() - interval '{period}' + k * interval '{period}' / {max(self.long, 1)}
                       AS t
            FROM generate_series(0, {self.long - 1}) k)
        SELECT g, s, j, u, t, stretch, kind, n, first_of_user, session_t,
               row_number() OVER (ORDER BY t, g) - 1 AS o
        FROM (
            SELECT g, s, j, u, t, {stretch} AS stretch,
                   (ARRAY{list(KINDS)})[g % 3 + 1] AS kind,
                   count(*) OVER (PARTITION BY s) AS n,
                   row_number() OVER (PARTITION BY u ORDER BY s, j) = 1 AS first_of_user,
                   min(t) OVER (PARTITION BY s) AS session_t
            FROM (
                SELECT o.g, o.s, o.j, o.u, x.start + o.j * interval '3 minutes' AS t
                FROM ordinary o JOIN sessions x USING (s)
                UNION ALL SELECT * FROM heavy
                UNION ALL SELECT * FROM long) turns) numbered;
        CREATE INDEX ON layout (o);
        ANALYZE layout;
        """


# --- growing -------------------------------------------------------------------------------


@dataclass(slots=True)
class Table:
    name: str  # schema-qualified, quoted
    columns: list[tuple[str, str]]  # (name, type)
    references: dict[str, str] = field(default_factory=dict)  # column -> referenced table
    turn_key: str | None = None
    """The column that ties a row to its turn (None: the user's own rows)."""


def user_uuid(db: str, u: int) -> uuid.UUID:
    """The id of the copied user number `u` (as SQL's `md5(...)::uuid` makes it)."""
    return uuid.UUID(hashlib.md5(f"{db}:u:{u}".encode()).hexdigest())


def session_key(db: str, s: int) -> bytes:
    """The part of session number `s`'s id that is not its start time (`TIME_ORDERED`)."""
    return hashlib.md5(f"{db}:s:{s}".encode()).digest()[7:]


async def session_ids(url: str, db: str, owners: dict[int, uuid.UUID]) -> dict[int, uuid.UUID]:
    """The ids of the sessions numbered as `owners`' keys, found among their users'."""
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute(
            "SELECT id FROM chat_sessions WHERE user_id = ANY(%s)", (list(set(owners.values())),)
        )
        found = {row[0].bytes[7:]: row[0] for row in await cur.fetchall()}
    return {s: found[session_key(db, s)] for s in owners}


def tables(conn: psycopg.Connection[Any]) -> list[Table]:
    """Every table of Parley's schemas with a `user_id`, with its columns as they stand."""
    rows = conn.execute(
        """SELECT c.oid::regclass::text AS name,
                  array_agg(a.attname::text ORDER BY a.attnum) AS columns,
                  array_agg(format_type(a.atttypid, a.atttypmod) ORDER BY a.attnum) AS types
             FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
            WHERE c.relkind IN ('r', 'p') AND c.relnamespace = ANY(%s::regnamespace[])
              AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
              AND a.attidentity = '' AND c.relname <> 'alembic_version'
            GROUP BY c.oid HAVING 'user_id' = ANY(array_agg(a.attname::text))
            ORDER BY 1""",
        (list(SCHEMAS),),
    ).fetchall()
    refs = conn.execute(
        """SELECT k.conrelid::regclass::text AS name, a.attname::text AS col,
                  k.confrelid::regclass::text AS target
             FROM pg_constraint k
             JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = ANY(k.conkey)
            WHERE k.contype = 'f' AND cardinality(k.conkey) = 1"""
    ).fetchall()
    found = []
    for row in rows:
        table = Table(row["name"], list(zip(row["columns"], row["types"], strict=True)))
        table.references = {r["col"]: r["target"] for r in refs if r["name"] == row["name"]}
        names = {c for c, _ in table.columns}
        if table.name == "chat_sessions":
            table.turn_key = "id"
        else:
            table.turn_key = next((k for k in TURN_KEYS if k in names), None)
        found.append(table)
    return found


@dataclass(slots=True)
class Seed:
    """The real turns the copies are made of: one of each kind, each in a session of its own."""

    user: uuid.UUID
    sessions: dict[Kind, uuid.UUID]
    planners: list[uuid.UUID]
    span: int
    """Numbers (`seq`) a turn takes in its session, at most: the copies' step in a session."""


def find_seed(conn: psycopg.Connection[Any], user: uuid.UUID) -> Seed:
    rows = conn.execute(
        """SELECT p.session_id, p.strategy, p.planner_agent_id, s.last_seq
             FROM agent_plans p JOIN chat_sessions s ON s.id = p.session_id
            WHERE p.user_id = %s ORDER BY p.created_at""",
        (user,),
    ).fetchall()
    sessions = {row["strategy"]: row["session_id"] for row in rows}
    assert set(sessions) == set(KINDS), sessions
    return Seed(
        user=user,
        sessions=sessions,
        planners=[row["planner_agent_id"] for row in rows],
        span=max(int(row["last_seq"]) for row in rows) + 1,
    )


def column_expression(
    db: str, table: Table, column: str, kind: str, seed: Seed, copied: set[str]
) -> str:
    """The SQL that gives `column` of a copy, from the seed row `r` and the layout row `l`."""
    if column == "user_id":
        return f"md5('{db}:u:' || l.u)::uuid"
    ident = f"r.{sql.Identifier(column).as_string(None)}"
    per_turn = table.turn_key is not None
    if kind == "uuid":
        target = table.references.get(column)
        if target == "auth.users":
            return f"md5('{db}:u:' || l.u)::uuid"
        if target is not None and target not in copied:
            return ident  # a shared row (not one of the user's): referenced as it is
        if not per_turn:
            return f"md5({ident}::text || ':{db}:u:' || l.u)::uuid"
        cases = [
            f"WHEN '{s}' THEN pg_temp.at_time(md5('{db}:s:' || l.s)::uuid, l.session_t)"
            for s in seed.sessions.values()
        ]
        cases += [
            f"WHEN '{p}' THEN pg_temp.at_time(md5('{db}:p:' || l.s)::uuid, l.session_t)"
            for p in seed.planners
        ]
        copy = f"md5({ident}::text || ':{db}:' || l.s || ':' || l.j)::uuid"
        return (
            f"CASE {ident} {' '.join(cases)} "
            f"ELSE pg_temp.copy_id({ident}, {copy}, l.t, l.stretch, r.seed_start) END"
        )
    if kind.startswith("timestamp"):
        if per_turn:  # stretched around the turn's start, which moves to the copy's
            return f"l.t + ({ident} - r.seed_start) * l.stretch"
        return f"{ident} + (l.t - r.seed_start)"
    if column == "seq" and per_turn:
        return f"{ident} + l.j * {seed.span}"
    if table.name == "chat_sessions" and column == "last_seq":
        return f"l.n * {seed.span}"
    if column == "client_message_id":
        return f"{ident} || ':' || l.s || ':' || l.j"
    return ident


TIME_ORDERED = """
CREATE FUNCTION pg_temp.at_time(id uuid, at timestamptz) RETURNS uuid LANGUAGE sql IMMUTABLE
AS $$ SELECT encode(set_byte(overlay(uuid_send(id)
        PLACING substring(int8send((extract(epoch FROM at) * 1000)::bigint) FROM 3)
        FROM 1 FOR 6), 6, (get_byte(uuid_send(id), 6) & 15) | 112), 'hex')::uuid $$;
CREATE FUNCTION pg_temp.copy_id(seed uuid, copy uuid, t timestamptz, stretch float8,
                                seed_start timestamptz) RETURNS uuid LANGUAGE sql IMMUTABLE
AS $$ SELECT CASE WHEN substr(seed::text, 15, 1) = '7' THEN pg_temp.at_time(copy,
        t + (to_timestamp(('x' || substr(replace(seed::text, '-', ''), 1, 12))::bit(48)::bigint
                          / 1000.0) - seed_start) * stretch)
        ELSE copy END $$;
"""
"""A copy's id as a live database makes it (`parley_private.new_id()`, UUIDv7): a seed row's
time-ordered id gets the time its copy stands for (stretched as the copy's timestamps are), in
front of bits of its own; a random id (a domain row's) stays random. So a copy's index entries
sit where a live database's would, and `grow` writes them in time order as one does."""


def copy_statement(db: str, table: Table, seed: Seed, copied: set[str]) -> str:
    """`INSERT ... SELECT` of one batch of copies (`%(lo)s <= l.o < %(hi)s`: turns in the order
    they started) into `table`, rows in the order their copies were made."""
    names = ", ".join(sql.Identifier(c).as_string(None) for c, _ in table.columns)
    values = ", ".join(column_expression(db, table, c, k, seed, copied) for c, k in table.columns)
    kinds = dict(table.columns)
    order = ""
    if "created_at" in kinds:
        created = column_expression(db, table, "created_at", kinds["created_at"], seed, copied)
        order = f"ORDER BY {created}"
    source = f"seed_{table.name.replace('.', '_')}"
    if table.turn_key is None:  # the user's own rows: once per user, from their first turn
        where = "l.first_of_user"
        join = f"{source} r CROSS JOIN layout l"
    else:
        where = "l.j = 0" if table.name == "chat_sessions" else "true"
        join = f"{source} r JOIN layout l ON l.kind = r.seed_kind"
    return f"""INSERT INTO {table.name} ({names})
        SELECT {values} FROM {join}
        WHERE l.o >= %(lo)s AND l.o < %(hi)s AND {where} {order}
        ON CONFLICT DO NOTHING"""


def seed_tables(conn: psycopg.Connection[Any], found: list[Table], seed: Seed) -> None:
    """Each table's seed rows in a temporary table, with the kind of turn each belongs to."""
    kinds = ", ".join(f"('{s}'::uuid, '{k}')" for k, s in seed.sessions.items())
    conn.execute(f"""
        CREATE TEMP TABLE seed_kind ON COMMIT PRESERVE ROWS AS
        SELECT v.session, v.kind, p.id AS plan, p.created_at AS start
          FROM (VALUES {kinds}) v(session, kind) JOIN agent_plans p ON p.session_id = v.session;
        CREATE TEMP TABLE seed_first ON COMMIT PRESERVE ROWS AS SELECT min(start) AS start
          FROM seed_kind""")
    for table in found:
        source = f"seed_{table.name.replace('.', '_')}"
        if table.turn_key is None:
            conn.execute(
                f"""CREATE TEMP TABLE {source} AS SELECT t.*, f.start AS seed_start
                    FROM {table.name} t, seed_first f WHERE t.user_id = %s""",
                (seed.user,),
            )
            continue
        key = "plan" if table.turn_key == "plan_id" else "session"
        conn.execute(
            f"""CREATE TEMP TABLE {source} AS
                SELECT t.*, k.kind AS seed_kind, k.start AS seed_start
                FROM {table.name} t JOIN seed_kind k ON k.{key} = t.{table.turn_key}
                WHERE t.user_id = %s""",
            (seed.user,),
        )


def grow(admin_url: str, db: str, layout: Layout, seed_user: uuid.UUID, batch: int) -> None:
    """Copy the seed turns into the layout, a batch of turns at a time in the order they
    started (as a live database receives them)."""
    with psycopg.connect(admin_url, row_factory=dict_row, autocommit=True) as conn:
        conn.execute("SET session_replication_role = replica")
        conn.execute("SET synchronous_commit = off")
        seed = find_seed(conn, seed_user)
        found = tables(conn)
        copied = {t.name for t in found}
        seed_tables(conn, found, seed)
        conn.execute(TIME_ORDERED)
        conn.execute(layout.sql())
        statements = [(t, copy_statement(db, t, seed, copied)) for t in found]
        users = f"""INSERT INTO auth.users (id, email)
            SELECT DISTINCT md5('{db}:u:' || u)::uuid, md5('{db}:u:' || u) || '@scale.local'
            FROM layout WHERE o >= %(lo)s AND o < %(hi)s ON CONFLICT DO NOTHING"""
        started = time.perf_counter()
        for lo in range(0, layout.turns, batch):
            bounds = {"lo": lo, "hi": lo + batch}
            with conn.transaction():
                conn.execute(users, bounds)
                for _, statement in statements:
                    conn.execute(statement, bounds)
            done = min(lo + batch, layout.turns)
            print(
                f"  grown {done:,}/{layout.turns:,} turns ({time.perf_counter() - started:.0f} s)",
                file=sys.stderr,
                flush=True,
            )
    with psycopg.connect(admin_url, autocommit=True) as conn:
        for table in found:
            conn.execute(f"VACUUM (ANALYZE) {table.name}")
        conn.execute("VACUUM (ANALYZE) auth.users")


def orphans(url: str) -> dict[str, int]:
    """Rows whose foreign key points at no row, per constraint of Parley's schemas (the copies
    are written without the checks: this is how a run makes sure they hold)."""
    found = {}
    with psycopg.connect(url, row_factory=dict_row) as conn:
        keys = conn.execute(
            """SELECT k.conname, k.conrelid::regclass::text AS child,
                      k.confrelid::regclass::text AS parent,
                      array(SELECT attname FROM unnest(k.conkey) WITH ORDINALITY c(n, i)
                            JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = c.n
                            ORDER BY i)::text[] AS columns,
                      array(SELECT attname FROM unnest(k.confkey) WITH ORDINALITY c(n, i)
                            JOIN pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = c.n
                            ORDER BY i)::text[] AS targets
                 FROM pg_constraint k
                WHERE k.contype = 'f' AND k.connamespace = ANY(%s::regnamespace[])""",
            (list(SCHEMAS),),
        ).fetchall()
        for key in keys:
            child = ", ".join(f"c.{sql.Identifier(c).as_string(None)}" for c in key["columns"])
            parent = ", ".join(f"p.{sql.Identifier(c).as_string(None)}" for c in key["targets"])
            row = conn.execute(
                f"""SELECT count(*) AS n FROM {key["child"]} c
                     WHERE ({child}) IS NOT NULL AND NOT EXISTS (
                           SELECT FROM {key["parent"]} p WHERE ({parent}) = ({child}))"""
            ).fetchone()
            if row and row["n"]:
                found[str(key["conname"])] = int(row["n"])
    return found


# --- the database -------------------------------------------------------------------------


def admin_url(server: str, db: str) -> str:
    return with_database(server, db)


def exists(server: str, db: str) -> str | None:
    """The database's mark (what was grown in it), None if it does not exist."""
    with databases.admin(server) as conn:
        row = conn.execute(
            "SELECT coalesce(shobj_description(oid, 'pg_database'), '') FROM pg_database "
            "WHERE datname = %s",
            (db,),
        ).fetchone()
    return None if row is None else str(row[0])


def prepare(server: str, db: str, layout: Layout, *, regrow: bool, batch: int) -> str:
    """The grown database's owner URL: reused if grown already (migrated to head), else made."""
    mark = f"{MARK}: {json.dumps({'turns': layout.turns, 'seed': layout.seed})}"
    found = exists(server, db)
    owner = supabase_project.as_owner(admin_url(server, db))
    if found == mark and not regrow:
        print(
            f"reusing {db} (grown to {layout.turns:,} turns); migrating it to head", file=sys.stderr
        )
        started = time.perf_counter()
        upgrade(owner)
        print(f"  migrated in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        with databases.admin(admin_url(server, db)) as conn:
            conn.execute(CREATE_PARTITIONS)
        return owner
    with databases.admin(server) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(db)))
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {} OWNER {} STRATEGY FILE_COPY").format(
                sql.Identifier(db),
                sql.Identifier(databases.ensure_template(server)),
                sql.Identifier(supabase_project.OWNER),
            )
        )
    with databases.admin(admin_url(server, db)) as conn:
        conn.execute(CREATE_PARTITIONS)
    print(
        f"growing {db} to {layout.turns:,} turns: {layout.ordinary_users:,} users of "
        f"{layout.turns_per_user} turns, one user with {layout.heavy:,} sessions, one "
        f"session of {layout.long:,} turns",
        file=sys.stderr,
    )
    seed_user = asyncio.run(run_seed(owner))
    started = time.perf_counter()
    grow(admin_url(server, db), db, layout, seed_user, batch)
    rebuilt = rebuild_rollups(admin_url(server, db))
    print(f"  grown in {time.perf_counter() - started:.0f} s{rebuilt}", file=sys.stderr)
    broken = orphans(admin_url(server, db))
    if broken:
        raise RuntimeError(f"the copies broke foreign keys: {broken}")
    with databases.admin(server) as conn:
        conn.execute(
            sql.SQL("COMMENT ON DATABASE {} IS {}").format(sql.Identifier(db), sql.Literal(mark))
        )
    return owner


async def run_seed(url: str) -> uuid.UUID:
    """One real turn of each kind, in sessions of their own, for a new user: the seed."""
    with harness(database_url=url) as h:
        services = h.services()
        user = await h.user()
        try:
            for kind in KINDS:
                await send(services, user, kind)
        finally:
            await services.aclose()
    return user.id


def rollups_revision() -> Any | None:
    """The rollups' migration module (None before it exists: a run on an older checkout)."""
    path = next((ROOT / "migrations" / "versions").glob("*-5a0c1e2b0701_*.py"), None)
    if path is None:
        return None
    spec = importlib.util.spec_from_file_location("rollups_revision", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def detail_queries() -> dict[str, str]:
    """The two dashboard views' queries over the detail rows, as they were before the rollups
    (the rollups' migration keeps them for its downgrade)."""
    module = rollups_revision()
    assert module is not None
    text: str = module.DETAIL_VIEWS
    queries = {}
    for view in ("execution_stats_daily", "plan_outcomes_daily"):
        start = text.index(f"VIEW public.{view} WITH (security_invoker = true) AS")
        queries[view] = text[start:].split(" AS\n", 1)[1].split(";", 1)[0]
    return queries


async def same_as_detail(url: str) -> list[str]:
    """The views' last 30 days against the same aggregates over the detail rows: the rows
    whose exact columns differ, and the worst relative error of a percentile."""
    if rollups_revision() is None:
        return []
    out = [" the dashboard views against the detail rows' aggregates (last 30 days):"]
    since = "WHERE day > (now() AT TIME ZONE 'UTC')::date - 30"
    async with await psycopg.AsyncConnection.connect(url, row_factory=dict_row) as conn:
        for view, detail in detail_queries().items():
            rolled = await (
                await conn.execute(f"SELECT * FROM {view} {since} ORDER BY 1, 2, 3")
            ).fetchall()
            exact = await (
                await conn.execute(f"SELECT * FROM ({detail}) d {since} ORDER BY 1, 2, 3")
            ).fetchall()
            percentiles = {"p50_duration_ms", "p95_duration_ms"}
            differ, worst = 0, 0.0
            for got, want in zip(rolled, exact, strict=False):
                differ += {k: v for k, v in got.items() if k not in percentiles} != {
                    k: v for k, v in want.items() if k not in percentiles
                }
                for name in percentiles & set(want):
                    if want[name]:
                        worst = max(worst, float(abs(got[name] - want[name]) / want[name]))
            differ += abs(len(rolled) - len(exact))
            out.append(
                f"  {view:<24} {len(rolled):>5} rows, {differ} differing in an exact "
                f"column; worst percentile {worst:.2%} off (bound 3.125%)"
            )
    return out


def rebuild_rollups(url: str) -> str:
    """Rebuild what the rollup triggers keep, when the schema has them (the copies were written
    with triggers off): the migration's own backfill."""
    module = rollups_revision()
    if module is None:
        return ""
    with databases.admin(url) as conn:
        found = conn.execute("SELECT to_regclass(%s)", (module.EXECUTION_ROLLUP,)).fetchone()
        if found is None or found[0] is None:
            return ""
        started = time.perf_counter()
        conn.execute(module.REBUILD)
    return f"; rollups rebuilt in {time.perf_counter() - started:.1f} s"


# --- measuring ----------------------------------------------------------------------------


def quantiles(ms: list[float]) -> tuple[float, float]:
    ordered = sorted(ms)
    p95 = statistics.quantiles(ordered, n=20)[18] if len(ordered) > 1 else ordered[0]
    return statistics.median(ordered), p95


async def timed(call: Callable[[], Awaitable[Any]], *, samples: int, budget: float) -> list[float]:
    """`call`'s times (ms) over `samples` runs (fewer if they take over `budget` seconds),
    after one unmeasured run."""
    await call()
    times: list[float] = []
    deadline = time.perf_counter() + budget
    while len(times) < samples and (len(times) < 3 or time.perf_counter() < deadline):
        started = time.perf_counter()
        await call()
        times.append((time.perf_counter() - started) * 1000)
    return times


def line(name: str, times: list[float]) -> str:
    p50, p95 = quantiles(times)
    return f"  {name:<52} p50 {p50:8.1f} ms   p95 {p95:8.1f} ms   (n={len(times)})"


async def wal_per_turn(h: Harness, kind: Kind, turns: int) -> float:
    """Write-ahead log (bytes) a turn of `kind` writes in the turns right after a checkpoint:
    what a turn costs the log when the pages it touches have not been written since (a full
    page image each). A count of the server's own (this server's WAL position moves with its
    other databases too: on a shared server, a rough one)."""
    server = databases.server_url()
    services = h.services()
    user = await h.user()
    try:
        await send(services, user, kind)  # warm up
        with databases.admin(server) as conn:
            conn.execute("CHECKPOINT")
            start = conn.execute("SELECT pg_current_wal_lsn()").fetchone()
            for _ in range(turns):
                await send(services, user, kind)
            row = conn.execute("SELECT pg_current_wal_lsn() - %s::pg_lsn", start).fetchone()
    finally:
        await services.aclose()
    assert row is not None
    return float(str(row[0])) / turns


async def own_times(url: str, rounds: int, turns: int) -> dict[str, dict[str, float]]:
    """Own time p50 per kind on the grown database and on an empty one, alternately; and the
    write-ahead log a turn writes after a checkpoint (`wal:<kind>`, bytes)."""
    taken: dict[str, dict[str, list[float]]] = {"grown": {}, "empty": {}, "ratio": {}}
    for number in range(rounds):
        for name in ("grown", "empty"):
            with harness(database_url=url if name == "grown" else None) as h:
                for kind in KINDS:
                    own = await measure(h, kind, turns)
                    taken[name].setdefault(kind, []).append(statistics.median(own) * 1000)
                    if number == 0:
                        wal = await wal_per_turn(h, kind, 10)
                        taken[name].setdefault(f"wal:{kind}", []).append(wal)
        for kind in KINDS:  # each round's own ratio: both sides taken under the same load
            ratio = taken["grown"][kind][-1] / taken["empty"][kind][-1]
            taken["ratio"].setdefault(kind, []).append(ratio)
    return {
        name: {k: statistics.median(v) for k, v in kinds.items()} for name, kinds in taken.items()
    }


@asynccontextmanager
async def clients(h: Harness) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    """The chat and planner apps, served in-process, on the harness's database."""
    from functions.agent_planner.app import create_app as planner_app
    from functions.chat.app import create_app as chat_app

    services = h.services()
    apps = [chat_app(), planner_app()]
    for app in apps:
        app.dependency_overrides[get_services] = lambda: services
    transports = [httpx.ASGITransport(app=app) for app in apps]
    try:
        async with (
            httpx.AsyncClient(transport=transports[0], base_url="http://chat") as chat,
            httpx.AsyncClient(transport=transports[1], base_url="http://planner") as planner,
        ):
            yield chat, planner
    finally:
        await services.aclose()


def bearer(user: uuid.UUID, **claims: Any) -> dict[str, str]:
    return {"Authorization": f"Bearer {mint_token(SECRET, sub=user, extra=claims)}"}


async def requests(
    client: httpx.AsyncClient, calls: list[tuple[str, dict[str, str]]], budget: float
) -> list[float]:
    """The times (ms) of `calls` (GETs answered 200) after the first (unmeasured), fewer when
    they take over `budget` seconds."""

    async def get(path: str, headers: dict[str, str]) -> None:
        answer = await client.get(path, headers=headers)
        assert answer.status_code == 200, (path, answer.status_code, answer.text[:300])

    await get(*calls[0])
    times: list[float] = []
    deadline = time.perf_counter() + budget
    for path, headers in calls[1:]:
        if len(times) >= 3 and time.perf_counter() > deadline:
            break
        started = time.perf_counter()
        await get(path, headers)
        times.append((time.perf_counter() - started) * 1000)
    return times


async def first_plans(url: str, sessions: set[uuid.UUID]) -> dict[uuid.UUID, uuid.UUID]:
    async with await psycopg.AsyncConnection.connect(url, row_factory=dict_row) as conn:
        cur = await conn.execute(
            "SELECT DISTINCT ON (session_id) session_id, id FROM agent_plans "
            "WHERE session_id = ANY(%s) ORDER BY session_id, created_at",
            (list(sessions),),
        )
        return {row["session_id"]: row["id"] for row in await cur.fetchall()}


async def fold_all(url: str) -> int:
    """Fold the rollups as the sweeper does each minute (the turns measured here added rows of
    their backends'), until nothing is left to fold; returns the groups folded."""
    folded = 0
    async with await psycopg.AsyncConnection.connect(
        url, autocommit=True, row_factory=dict_row
    ) as conn:
        while (done := await rollups.fold_rollups(conn)) > 0:
            folded += done
    return folded


async def read_routes(
    h: Harness, db: str, layout: Layout, samples: int, budget: float
) -> list[str]:
    rng = random.Random(layout.seed)
    n = samples + 1
    ordinary = [rng.randrange(layout.ordinary_sessions) for _ in range(n)]
    heavy = [layout.ordinary_sessions + rng.randrange(max(layout.heavy, 1)) for _ in range(n)]
    per_user = layout.turns_per_user // layout.turns_per_session
    owners = {s: user_uuid(db, s // per_user) for s in ordinary}
    owners |= {s: user_uuid(db, layout.heavy_user) for s in heavy}
    ids = await session_ids(h.url, db, owners)
    plan_ids = await first_plans(h.url, set(ids.values()))
    groups: list[tuple[str, list[int], Callable[[int], uuid.UUID]]] = [
        ("ordinary users", ordinary, lambda s: user_uuid(db, s // per_user)),
        (
            f"the user with {layout.heavy:,} sessions",
            heavy,
            lambda s: user_uuid(db, layout.heavy_user),
        ),
    ]
    out = []
    async with clients(h) as (chat, planner):
        for label, sessions, owner in groups:
            out.append(f" {label}:")
            tokens = {s: bearer(owner(s)) for s in sessions}
            routes: list[tuple[str, httpx.AsyncClient, Callable[[int], str]]] = [
                ("GET /sessions", chat, lambda s: "/sessions"),
                ("GET /sessions/{id}/timeline", chat, lambda s: f"/sessions/{ids[s]}/timeline"),
                ("GET /sessions/{id}/messages", chat, lambda s: f"/sessions/{ids[s]}/messages"),
                ("GET /plans/{id}", planner, lambda s: f"/plans/{plan_ids[ids[s]]}"),
            ]
            for name, client, path in routes:
                calls = [(path(s), tokens[s]) for s in sessions]
                out.append(line(name, await requests(client, calls, budget)))
        if layout.long:
            out += await long_session(h, db, layout, chat, n, budget)
        folded = await fold_all(h.url)
        out.append(f" dashboards (after the sweeper's fold: {folded} groups folded first):")
        operator_id = user_uuid(db, -1)
        async with await psycopg.AsyncConnection.connect(h.url) as conn:
            await conn.execute(
                "INSERT INTO auth.users (id, email) VALUES (%s, 'operator@scale.local') "
                "ON CONFLICT DO NOTHING",
                (operator_id,),
            )
            await conn.commit()
        operator = bearer(operator_id, **OPERATOR)
        calls = [("/dashboards/daily?days=30", operator)] * n
        out.append(line("GET /dashboards/daily?days=30", await requests(chat, calls, budget)))
    async with await psycopg.AsyncConnection.connect(h.url) as conn:
        for view in ("execution_stats_daily", "plan_outcomes_daily"):
            for label, where in (
                ("last 30 days", "WHERE day > (now() AT TIME ZONE 'UTC')::date - 30"),
                ("all days", ""),
            ):

                async def query(view: str = view, where: str = where) -> None:
                    await (await conn.execute(f"SELECT * FROM {view} {where}")).fetchall()

                out.append(
                    line(
                        f"SELECT * FROM {view} ({label})",
                        await timed(query, samples=samples, budget=budget),
                    )
                )
    return out


async def long_session(
    h: Harness, db: str, layout: Layout, chat: httpx.AsyncClient, n: int, budget: float
) -> list[str]:
    owner = user_uuid(db, layout.long_user)
    session = (await session_ids(h.url, db, {layout.long_session_number: owner}))[
        layout.long_session_number
    ]
    async with await psycopg.AsyncConnection.connect(h.url) as conn:
        cur = await conn.execute("SELECT last_seq FROM chat_sessions WHERE id = %s", (session,))
        row = await cur.fetchone()
    assert row is not None
    late = int(row[0]) - 3 * layout.turns_per_session * 20  # the last few turns
    out = [f" the session of {layout.long:,} turns:"]
    headers = bearer(owner)
    for name, path in (
        ("GET /sessions/{id}/timeline (first page)", f"/sessions/{session}/timeline"),
        (
            "GET /sessions/{id}/timeline?after_seq=(last turns)",
            f"/sessions/{session}/timeline?after_seq={late}",
        ),
        ("GET /sessions/{id}/messages (first page)", f"/sessions/{session}/messages"),
        (
            "GET /sessions/{id}/messages?after_seq=(last turns)",
            f"/sessions/{session}/messages?after_seq={late}",
        ),
    ):
        out.append(line(name, await requests(chat, [(path, headers)] * n, budget)))
    return out


async def sweeper_queries(url: str, samples: int, budget: float) -> list[str]:
    out = [" the sweeper's queries (each in a transaction rolled back):"]
    async with await psycopg.AsyncConnection.connect(url, row_factory=dict_row) as conn:
        queries: list[tuple[str, Callable[[Any], Awaitable[Any]]]] = [
            ("too_old_plans", lambda c: plans.too_old_plans(c, max_age_seconds=3600)),
            (
                "redrive_plans",
                lambda c: plans.redrive_plans(c, grace_seconds=60, max_age_seconds=3600),
            ),
            ("redrive_steps", lambda c: plans.redrive_steps(c)),
            ("fold_rollups", lambda c: rollups.fold_rollups(c)),
            *[
                (
                    f"retention: {what}, a batch of 200 turns",
                    lambda c, what=what: retention_batches.delete_batch(
                        c, what=what, days=30, batch=200
                    ),
                )
                for what in retention_batches.RETAINED
            ],
        ]
        for name, query in queries:

            async def call(query: Callable[[Any], Awaitable[Any]] = query) -> None:
                async with conn.transaction(force_rollback=True):
                    await query(conn)

            out.append(line(name, await timed(call, samples=samples, budget=budget)))
        out += await purge_queries(conn, samples, budget)
    return out


async def purge_queries(conn: Any, samples: int, budget: float) -> list[str]:
    """Retention's purge of deleted sessions, with one session in a hundred deleted 40 days
    ago: a batch of 200 turns; then, their turns gone, the statement deleting up to 200
    sessions — each rolled back."""

    async def purge() -> None:
        async with conn.transaction(force_rollback=True):
            await retention_batches.purge_deleted_sessions(conn, days=30, batch=200)

    out = []
    async with conn.transaction(force_rollback=True):
        marked = await _delete_sessions(conn)
        label = f"purge_deleted_sessions ({marked:,} deleted: a batch, up to 200 turns)"
        out.append(line(label, await timed(purge, samples=samples, budget=budget)))
    async with conn.transaction(force_rollback=True):
        await _delete_sessions(conn)
        await conn.execute(  # their turns gone (a message takes its plan along)
            """DELETE FROM chat_messages m USING chat_sessions s
               WHERE m.session_id = s.id AND s.status = 'deleted'"""
        )
        label = "purge_deleted_sessions (their turns gone: up to 200 sessions)"
        out.append(line(label, await timed(purge, samples=samples, budget=budget)))
    return out


async def _delete_sessions(conn: Any) -> int:
    """Mark one session in a hundred deleted 40 days ago (in the caller's transaction)."""
    await conn.execute("ALTER TABLE chat_sessions DISABLE TRIGGER chat_sessions_updated_at")
    cur = await conn.execute(
        """UPDATE chat_sessions SET status = 'deleted', updated_at = now() - interval '40 days'
           WHERE id IN (SELECT id FROM chat_sessions ORDER BY md5(id::text)
                        LIMIT (SELECT count(*) / 100 FROM chat_sessions))"""
    )
    return int(cur.rowcount)


SIZES = """
SELECT c.oid::regclass::text AS name,
       pg_relation_size(c.oid) + pg_relation_size(c.oid, 'fsm') + pg_relation_size(c.oid, 'vm')
           AS heap,
       pg_indexes_size(c.oid) AS indexes,
       coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0) AS toast,
       (SELECT count(*) FROM pg_index i WHERE i.indrelid = c.oid) AS index_count,
       c.reltuples::bigint AS estimated_rows
  FROM pg_class c
 WHERE c.relkind IN ('r', 'p') AND c.relnamespace = ANY(%s::regnamespace[])
   AND c.relname <> 'alembic_version'
 ORDER BY pg_total_relation_size(c.oid) DESC
"""


def sizes(url: str) -> tuple[int, list[str]]:
    """Bytes per turn per table (heap with its free-space and visibility maps, indexes, TOAST
    with its index), the turns counted as plans."""
    with psycopg.connect(url, row_factory=dict_row) as conn:
        turns = conn.execute("SELECT count(*) AS n FROM agent_plans").fetchone()
        rows = conn.execute(SIZES, (list(SCHEMAS),)).fetchall()
        database = conn.execute("SELECT pg_database_size(current_database()) AS bytes").fetchone()
    assert turns is not None and database is not None
    n = int(turns["n"]) or 1
    out = [
        f" bytes per turn ({n:,} turns; the database: {database['bytes'] / 2**20:,.0f} MiB):",
        f"  {'table':<40} {'heap':>8} {'indexes':>8} {'toast':>8} {'total':>8}  indexes",
    ]
    total = [0, 0, 0]
    for row in rows:
        parts = [int(row["heap"]), int(row["indexes"]), int(row["toast"])]
        total = [a + b for a, b in zip(total, parts, strict=True)]
        if sum(parts) < 64 * 1024:
            continue
        out.append(
            f"  {row['name']:<40} "
            + " ".join(f"{p / n:8.0f}" for p in parts)
            + f" {sum(parts) / n:8.0f}  {row['index_count']}"
        )
    out.append(
        f"  {'all of Parley':<40} "
        + " ".join(f"{p / n:8.0f}" for p in total)
        + f" {sum(total) / n:8.0f}"
    )
    return n, out


def version(url: str) -> str:
    with psycopg.connect(url) as conn:
        row = conn.execute("SHOW server_version").fetchone()
    assert row is not None
    return str(row[0])


ROLLUP_TRIGGERS = {
    "agent_executions": ("agent_executions_rolled_up", "agent_executions_rolled_up_again"),
    "agent_plans": ("agent_plans_rolled_up", "agent_plans_rolled_up_again"),
    "agent_plan_steps": ("agent_plan_steps_rolled_up",),
}
WATERMARK_INDEXED = ("agent_executions", "agent_plans")
WATERMARK_JOB = """
SELECT (coalesce(e.started_at, e.created_at) AT TIME ZONE 'UTC')::date AS day, e.model,
       e.agent_role, count(*), count(*) FILTER (WHERE e.status = 'completed'),
       percentile_cont(0.5) WITHIN GROUP (ORDER BY e.duration_ms),
       percentile_cont(0.95) WITHIN GROUP (ORDER BY e.duration_ms), sum(e.prompt_tokens),
       sum(e.cost_usd)
  FROM agent_executions e
 WHERE e.created_at >= (SELECT min(created_at) FROM agent_executions
                         WHERE updated_at > now() - interval '1 minute')
       - interval '1 day'
 GROUP BY 1, 2, 3
"""
"""What a scheduled rollup job with a watermark reads each minute (the executions' half): the
rows changed since the watermark (by `updated_at`, which it must index), and every row of
the days they belong to, re-aggregated (a changed row's old contribution is not known)."""


def set_rollups(admin: str, *, triggers: bool, watermark_index: bool) -> None:
    with databases.admin(admin) as conn:
        for table, names in ROLLUP_TRIGGERS.items():
            for name in names:
                verb = "ENABLE" if triggers else "DISABLE"
                conn.execute(f"ALTER TABLE public.{table} {verb} TRIGGER {name}")
        for table in WATERMARK_INDEXED:
            if watermark_index:
                conn.execute(
                    f"CREATE INDEX IF NOT EXISTS bench_{table}_updated_idx "
                    f"ON public.{table} (updated_at)"
                )
            else:
                conn.execute(f"DROP INDEX IF EXISTS public.bench_{table}_updated_idx")


async def rollup_cost(url: str, admin: str, rounds: int, turns: int, samples: int) -> list[str]:
    """The hot path's cost of keeping the rollups in the accounting statements (triggers),
    and of a watermark job's index instead, each against no rollups at all, alternately."""
    variants = {
        "no rollups (triggers off)": {"triggers": False, "watermark_index": False},
        "synchronous rollups (triggers)": {"triggers": True, "watermark_index": False},
        "watermark's index on updated_at": {"triggers": False, "watermark_index": True},
    }
    taken: dict[str, dict[str, list[float]]] = {name: {} for name in variants}
    try:
        for _ in range(rounds):
            for name, variant in variants.items():
                set_rollups(admin, **variant)
                with harness(database_url=url) as h:
                    for kind in KINDS:
                        own = await measure(h, kind, turns)
                        taken[name].setdefault(kind, []).append(statistics.median(own) * 1000)
        set_rollups(admin, triggers=False, watermark_index=True)
        async with await psycopg.AsyncConnection.connect(url) as conn:

            async def job() -> None:
                await (await conn.execute(WATERMARK_JOB)).fetchall()

            job_times = await timed(job, samples=samples, budget=30)
    finally:
        set_rollups(admin, triggers=True, watermark_index=False)
        rebuild_rollups(admin)  # turns ran with the triggers off
    out = [
        " the rollups' cost on the hot path (own time p50, ms; median of rounds):",
        f"  {'':<34}" + "".join(f"{kind:>9}" for kind in KINDS),
    ]
    base = {k: statistics.median(v) for k, v in taken["no rollups (triggers off)"].items()}
    for name in variants:
        figures = {k: statistics.median(v) for k, v in taken[name].items()}
        out.append(
            f"  {name:<34}"
            + "".join(f"{figures[k]:6.1f} ({figures[k] / base[k]:4.2f})" for k in KINDS)
        )
    out.append(line("a watermark job's read (executions, each minute)", job_times))
    return out


async def report(url: str, db: str, layout: Layout, args: argparse.Namespace) -> None:
    host = urlsplit(url).hostname or "the embedded server's socket"
    print(
        f"bench.scale: {db} on PostgreSQL {version(url)} ({host}), {layout.turns:,} turns "
        f"grown; own times from {args.own_turns} turns per kind, {args.rounds} round(s)"
    )
    if "own" in args.only:
        figures = await own_times(url, args.rounds, args.own_turns)
        print(" Parley's own time per turn (p50, ms, median of rounds; ratio: the median of the")
        print(" rounds' ratios), and the write-ahead log a turn writes in the 10 turns after a")
        print(" checkpoint (KB):")
        print(
            f"  {'kind':<8} {'grown':>8} {'empty':>8} {'ratio':>6}   {'WAL grown':>9} {'empty':>7}"
        )
        for kind in KINDS:
            grown, empty = figures["grown"][kind], figures["empty"][kind]
            wal = figures["grown"][f"wal:{kind}"] / 1024, figures["empty"][f"wal:{kind}"] / 1024
            print(
                f"  {kind:<8} {grown:8.1f} {empty:8.1f} {figures['ratio'][kind]:6.2f}   "
                f"{wal[0]:9.1f} {wal[1]:7.1f}"
            )
    if "reads" in args.only:
        with harness(database_url=url) as h:
            for out in await read_routes(h, db, layout, args.samples, args.budget):
                print(out)
    if "reads" in args.only:
        for out in await same_as_detail(url):
            print(out)
    if "sweeper" in args.only:
        for out in await sweeper_queries(url, args.samples, args.budget):
            print(out)
    if "bytes" in args.only:
        for out in sizes(url)[1]:
            print(out)
    if "rollup-cost" in args.only:
        admin = admin_url(databases.server_url(), db)
        for out in await rollup_cost(url, admin, args.rounds, args.own_turns, args.samples):
            print(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--database", help="the grown database's name (kept on the server)")
    parser.add_argument("--regrow", action="store_true", help="drop the database and grow again")
    parser.add_argument("--turns-per-user", type=int, default=20)
    parser.add_argument("--heavy-sessions", type=int, default=10_000)
    parser.add_argument("--long-session", type=int, default=1_000)
    parser.add_argument("--months", type=float, default=6)
    parser.add_argument("--batch", type=int, default=25_000, help="turns copied per transaction")
    parser.add_argument("--own-turns", type=int, default=40, help="measured turns per kind")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--samples", type=int, default=50, help="requests per read route")
    parser.add_argument("--budget", type=float, default=20, help="seconds per route, at most")
    parser.add_argument(
        "--only",
        default="own,reads,sweeper,bytes",
        help="what to measure: own, reads, sweeper, bytes, rollup-cost (none: grow only)",
    )
    args = parser.parse_args()
    args.only = {part for part in args.only.split(",") if part}
    layout = Layout(
        args.turns,
        turns_per_user=args.turns_per_user,
        heavy_sessions=args.heavy_sessions,
        long_session=args.long_session,
        months=args.months,
    )
    db = args.database or f"parley_scale_{args.turns}"
    server = databases.server_url()
    url = prepare(server, db, layout, regrow=args.regrow, batch=args.batch)
    if args.only:
        asyncio.run(report(url, db, layout, args))


if __name__ == "__main__":
    main()
