"""`python3 dev.py run`: the whole stack on this machine, and one demo turn through it.

Database: `DATABASE_URL` if set, otherwise the embedded Postgres (database `parley`), migrated
and seeded with the demo user's data. Then, in this one process: the local Supabase Realtime
server, the three functions behind one HTTP server (`/chat`, `/agent_planner`,
`/agent_executor`), and — when no model is configured — Parley's offline demo model. A demo turn
runs through it all as a frontend would; then it keeps serving until Ctrl-C (`--once`: exit).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.routing import Mount

from functions.agent_executor.app import create_app as executor_app
from functions.agent_planner.app import create_app as planner_app
from functions.chat.app import create_app as chat_app
from local import demo, migrate
from local.postgres import start_embedded, with_database
from local.realtime import RealtimeConfig, RealtimeServer
from local.seed import DEMO_USER_ID, SeedSummary, seed_demo
from shared.auth import mint_token
from shared.db import Database
from shared.llm.fake_server import DEMO_MODEL, FakeModelServer
from shared.services import Services, get_services
from shared.serving import BackgroundServer
from shared.settings import LOCAL_JWT_SECRET, Settings, load_settings

LOCAL_DATABASE = "parley"
TEN_YEARS = 10 * 365 * 24 * 3600


@dataclass(frozen=True, slots=True)
class LocalDatabase:
    url: str
    embedded: bool


def prepare_database(settings: Settings) -> LocalDatabase:
    """The configured database, or the embedded one with a `parley` database created in it."""
    if settings.database_url:
        return LocalDatabase(settings.database_url, embedded=False)
    server = start_embedded(settings.parley_data_dir)
    with psycopg.connect(server, autocommit=True) as conn:
        found = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (LOCAL_DATABASE,)
        ).fetchone()
        if not found:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(LOCAL_DATABASE)))
    return LocalDatabase(with_database(server, LOCAL_DATABASE), embedded=True)


async def seed(url: str) -> tuple[SeedSummary, str]:
    async with Database(url) as db:
        async with db.service() as conn:
            cur = await conn.execute(
                "SELECT (SELECT version_num FROM parley_private.alembic_version) AS head, "
                "current_setting('server_version') AS version"
            )
            row = await cur.fetchone()
        summary = await seed_demo(db)
    assert row is not None
    return summary, f"{row['head']} on PostgreSQL {row['version']}"


def gateway(services: Services) -> Starlette:
    """The three functions under one server, each at its own prefix (as three URLs would be)."""
    mounts = []
    for prefix, app in (("/chat", chat_app()), ("/agent_planner", planner_app()),
                        ("/agent_executor", executor_app())):  # fmt: skip
        app.dependency_overrides[get_services] = lambda: services
        mounts.append(Mount(prefix, app=app))
    return Starlette(routes=mounts)


async def serve(settings: Settings, database: LocalDatabase, args: argparse.Namespace) -> None:
    secret = (
        settings.supabase_jwt_secret.get_secret_value()
        if settings.supabase_jwt_secret
        else LOCAL_JWT_SECRET
    )
    anon = mint_token(secret, role="anon", expires_in=TEN_YEARS)
    service = mint_token(secret, role="service_role", expires_in=TEN_YEARS)
    with contextlib.ExitStack() as stack:
        model = _model_settings(settings, stack)
        realtime = RealtimeServer(RealtimeConfig.from_settings(
            settings, database_url=database.url, jwt_secret=secret, port=args.realtime_port,
            connect_error_delay=0.5, join_error_delay=0.5,
        ))  # fmt: skip
        await realtime.start()
        try:
            services = Services(settings.model_copy(update={
                "database_url": database.url, "supabase_url": realtime.url,
                "supabase_anon_key": SecretStr(anon),
                "supabase_service_role_key": SecretStr(service),
                "supabase_jwt_secret": SecretStr(secret), "invoker_transport": "in_process",
                **model,
            }))  # fmt: skip
            server = BackgroundServer(gateway(services), port=args.port, name="functions")
            stack.enter_context(server)
            _banner(server.url, realtime.url, model)
            await _demo(server.url, realtime.realtime_url, anon, secret, args.message)
            if not args.once:
                print("\nServing until Ctrl-C.", flush=True)
                await _until_interrupted()
        finally:
            await realtime.stop()


def _model_settings(settings: Settings, stack: contextlib.ExitStack) -> dict[str, object]:
    """The configured model, or the offline demo model served from this process."""
    if (
        settings.llm_api_key is not None
        or settings.llm_base_url != Settings.model_fields["llm_base_url"].default
    ):
        return {}
    fake = stack.enter_context(FakeModelServer())
    return {
        "llm_base_url": fake.base_url,
        "llm_planner_model": DEMO_MODEL,
        "llm_executor_model": DEMO_MODEL,
    }


def _banner(functions: str, realtime: str, model: dict[str, object]) -> None:
    if model:
        label = f"{DEMO_MODEL} — Parley's OFFLINE DEMO MODEL, canned replies (set DEEPSEEK_API_KEY)"
    else:
        label = "as configured (LLM_BASE_URL, LLM_PLANNER_MODEL, LLM_EXECUTOR_MODEL)"
    print(f"  model       {label}")
    print(f"  functions   {functions}/chat · {functions}/agent_planner · "
          f"{functions}/agent_executor  (OpenAPI: {functions}/chat/docs)")  # fmt: skip
    print(f"  realtime    {realtime}  (SUPABASE_URL for supabase-js; channel session:<id>)")


async def _demo(functions: str, realtime_url: str, anon: str, secret: str, message: str) -> None:
    token = mint_token(secret, sub=DEMO_USER_ID, expires_in=24 * 3600)
    print(f"\nDemo turn, as the demo user: {message!r}", flush=True)
    turn = await demo.play(
        functions_url=functions, realtime_url=realtime_url, anon_key=anon, user_token=token,
        message=message, say=lambda line: print(line, flush=True),
    )  # fmt: skip
    reply = turn.reply
    print(f"\nAnswer ({reply['status']}, {reply['strategy']}, plan {reply['plan_id']}):")
    print("  " + (reply.get("answer") or reply.get("error") or "").replace("\n", "\n  "))
    print(f"\n{len(turn.events)} events arrived over Realtime. Try it yourself:")
    print(f"  export TOKEN={token}   # the demo user's JWT, valid 24 h")
    print(f"  curl -s {functions}/chat/chat -H \"Authorization: Bearer $TOKEN\" "
          "-H 'content-type: application/json' -d '{\"message\": \"Hello!\"}'")  # fmt: skip


async def _until_interrupted() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 dev.py run", description=__doc__)
    parser.add_argument("--data-dir", type=Path, help="local state folder (default .parley)")
    parser.add_argument("--port", type=int, default=8000, help="functions port (0: any free)")
    parser.add_argument("--realtime-port", type=int, default=4000, help="Realtime port")
    parser.add_argument("--message", default=demo.DEMO_MESSAGE, help="the demo turn's message")
    parser.add_argument("--once", action="store_true", help="exit after the demo turn")
    args = parser.parse_args(argv)
    settings = load_settings(**({"parley_data_dir": args.data_dir} if args.data_dir else {}))

    database = prepare_database(settings)
    migrate.upgrade(database.url)
    summary, schema = asyncio.run(seed(database.url))
    kind = "embedded" if database.embedded else "DATABASE_URL"
    counts = " · ".join(f"{n} {table.replace('_', ' ')}" for table, n in summary.counts.items())
    print("Parley local stack")
    print(f"  database    {database.url}  ({kind})")
    print(f"  schema      {schema}")
    print(f"  demo user   {summary.email}  {summary.user_id}")
    print(f"  demo data   {counts}", flush=True)
    asyncio.run(serve(settings, database, args))
    return 0
