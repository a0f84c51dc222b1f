"""`python3 dev.py run`: the whole stack on this machine, and one demo turn through it.

Database: `DATABASE_URL` if set, otherwise the embedded Postgres (database `parley`), migrated
and seeded with the demo user's data. Then, in this one process: the local Supabase project
(Realtime at `/realtime/v1` and Auth at `/auth/v1` of one URL), the three functions behind one
HTTP server (`/chat`, `/agent_planner`, `/agent_executor`), the sweeper every
`SWEEP_INTERVAL_SECONDS` (as the EventBridge schedule runs it on AWS), and — when no model is
configured — Parley's offline demo model. A demo turn runs through it all as a frontend would
(signing the demo user in with email and password); then it prints the console's demo link
(`/#/demo`: the console signs the demo user in and plays a turn live), how to add users, and
keeps serving until Ctrl-C (`--once`: exit).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import signal
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

import httpx
import psycopg
from psycopg import sql
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.routing import BaseRoute, Mount

from functions.agent_executor.app import create_app as executor_app
from functions.agent_planner.app import create_app as planner_app
from functions.chat.app import create_app as chat_app
from local import demo, migrate
from local.auth import ApiKeys, Auth, AuthConfig
from local.auth import create_app as auth_app
from local.console import ConsoleSettings, console_routes
from local.cors import cors
from local.deepseek import DEEPSEEK_TOKENS_PER_SECOND, DEMO_MODEL, FakeModelServer, Pace
from local.postgres import is_new_cluster, start_embedded, with_database
from local.realtime import RealtimeConfig, RealtimeServer
from local.seed import DEMO_EMAIL, DEMO_PASSWORD, DEMO_USER_ID, SeedSummary, seed_demo, seed_user
from local.serving import BackgroundServer
from shared.db import Database
from shared.kernel.errors import ConfigurationError
from shared.kernel.settings import LOCAL_JWT_SECRET, Settings
from shared.observability import logs, tracing
from shared.services import Services, get_services, load_settings
from shared.usecases.daily_dashboards import OPERATOR, OPERATOR_CLAIM
from shared.usecases.sweeper import sweep

log = logging.getLogger(__name__)
LOCAL_POOL_SIZE = 8
"""Connections of the local stack's one process (it serves every function and the console)."""

LOCAL_DATABASE = "parley"
CONSOLE_DEMO_MESSAGE = (
    "plan my week: list my tasks and my calendar, then delete the first calendar event"
)
JWKS_PATH = "/auth/v1/.well-known/jwks.json"
REFRESH_TOKEN_REUSE_INTERVAL = 10
"""Seconds Auth lets a revoked refresh token be swapped still (hosted's default)."""
DEMO_MODEL_LATENCY = 0.5
"""Seconds the offline demo model takes per reply when `dev.py run` serves: a real model's
pace, so a turn in the console unfolds where a person can follow it."""


@dataclass(frozen=True, slots=True)
class LocalDatabase:
    url: str
    embedded: bool
    created: bool = False
    """The embedded cluster was made now (its first start: `initdb`)."""


def prepare_database(settings: Settings) -> LocalDatabase:
    """The configured database, or the embedded one with a `parley` database created in it."""
    if settings.database_url:
        return LocalDatabase(settings.database_url, embedded=False)
    created = is_new_cluster(settings.parley_data_dir)
    server = start_embedded(settings.parley_data_dir)
    with psycopg.connect(server, autocommit=True) as conn:
        found = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (LOCAL_DATABASE,)
        ).fetchone()
        if not found:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(LOCAL_DATABASE)))
    return LocalDatabase(with_database(server, LOCAL_DATABASE), embedded=True, created=created)


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


def gateway(services: Services, console: ConsoleSettings | None = None) -> Starlette:
    """The three functions under one server, each at its own prefix (as three URLs would be),
    answering CORS as the function URLs do (`local.cors`), and the console at `/`."""
    routes: list[BaseRoute] = []
    for prefix, app in (
        ("/chat", chat_app()),
        ("/agent_planner", planner_app()),
        ("/agent_executor", executor_app()),
    ):
        app.dependency_overrides[get_services] = lambda: services
        routes.append(Mount(prefix, app=app))
    if console is not None:
        routes += console_routes(console)
    return Starlette(routes=routes, middleware=[cors(services.settings.cors_allowed_origins)])


@dataclass(frozen=True, slots=True)
class RunningStack:
    """The local stack, serving."""

    url: str
    """The functions (`/chat`, `/agent_planner`, `/agent_executor`) and the console (`/`)."""
    realtime: RealtimeServer
    """The local Supabase project: Realtime, and Auth at `/auth/v1` of its URL."""
    keys: ApiKeys
    """The project's API keys (`sb_publishable_…`, `sb_secret_…`, and the legacy JWTs)."""
    jwt_secret: str
    demo_model: bool
    """True when Parley's offline demo model answers (no model configured)."""
    sweep_every: float
    """Seconds between two runs of the sweeper."""
    model_latency: float
    """Seconds the offline demo model takes before each reply (0: at once)."""
    model_tokens_per_second: float = 0.0
    """How fast the offline demo model streams (0: at once)."""
    signing: str = "ES256"
    """How Auth signs sessions (`AUTH_SIGNING_ALGORITHM`)."""

    def signup_command(self, email: str, password: str) -> str:
        """The one command that adds a user to the running stack: Auth's sign-up, as
        `supabase.auth.signUp` calls it (the user is confirmed at once and signed in)."""
        body = json.dumps({"email": email, "password": password})
        return (
            f"curl -s {self.supabase_url}/auth/v1/signup -H 'apikey: {self.anon_key}' "
            f"-H 'content-type: application/json' -d '{body}'"
        )

    @property
    def supabase_url(self) -> str:
        """The project URL supabase-js is given (Auth at `/auth/v1`, Realtime `/realtime/v1`)."""
        return self.realtime.url

    @property
    def anon_key(self) -> str:
        """The key a browser holds: the publishable key."""
        return self.keys.publishable

    @property
    def console_url(self) -> str:
        """The console's demo link: it signs in as the demo user and plays a turn, live."""
        return f"{self.url}/#/demo"


@contextlib.asynccontextmanager
async def running_stack(
    settings: Settings,
    database_url: str,
    *,
    port: int = 8000,
    realtime_port: int = 4000,
    demo_message: str = CONSOLE_DEMO_MESSAGE,
    model_latency: float = 0.0,
    model_tokens_per_second: float = 0.0,
    refresh_token_reuse_interval: int = REFRESH_TOKEN_REUSE_INTERVAL,
) -> AsyncIterator[RunningStack]:
    """Auth, Realtime, the functions and the console on `database_url` (migrated and seeded).

    `model_latency`: seconds the offline demo model takes before each reply (when it answers);
    `model_tokens_per_second`: how fast it streams then (0: at once).
    `refresh_token_reuse_interval`: Auth's (hosted: 10 s; a test may want reuse refused at once).
    """
    secret = (
        settings.supabase_jwt_secret.get_secret_value()
        if settings.supabase_jwt_secret
        else LOCAL_JWT_SECRET
    )
    keys = ApiKeys.derive(secret)
    auth = Auth(
        AuthConfig(
            database_url,
            jwt_secret=secret,
            keys=keys,
            signing=settings.auth_signing_algorithm,
            signing_key_path=settings.parley_data_dir / "auth" / "signing-key.json",
            refresh_token_reuse_interval=refresh_token_reuse_interval,
            on_signup=lambda user_id: _seed_new_user(database_url, user_id),
        )
    )
    await auth.start()
    with contextlib.ExitStack() as stack:
        try:
            await auth.ensure_user(
                user_id=DEMO_USER_ID,
                email=DEMO_EMAIL,
                password=DEMO_PASSWORD,
                app_metadata={OPERATOR_CLAIM: OPERATOR},
            )
            model = _model_settings(settings, stack, model_latency, Pace(model_tokens_per_second))
            realtime = RealtimeServer(
                RealtimeConfig.from_settings(
                    settings,
                    database_url=database_url,
                    jwt_secret=secret,
                    port=realtime_port,
                    jwks_url=JWKS_PATH,
                    api_keys=keys.opaque(),
                    connect_error_delay=0.5,
                    join_error_delay=0.5,
                ),
                routes=[Mount("/auth/v1", app=auth_app(auth))],
            )
            await realtime.start()
        except BaseException:
            await auth.stop()
            raise
        auth.issuer = f"{realtime.url}/auth/v1"
        try:
            local = settings.model_copy(
                update={
                    "database_url": database_url,
                    "supabase_url": realtime.url,
                    "supabase_anon_key": SecretStr(keys.publishable),
                    "supabase_service_role_key": SecretStr(keys.secret),
                    "supabase_jwt_secret": SecretStr(secret),
                    # Settings.jwks_url derives it from supabase_url; a configured one is another
                    # project's.
                    "supabase_jwks_url": None,
                    "invoker_transport": "in_process",
                    "db_pool_max_size": _pool_size(settings),
                    "planner_function_url": (
                        f"http://127.0.0.1:{port}/agent_planner" if port else None
                    ),
                    "realtime_quota_per_second": _realtime_quota(settings, realtime),
                    **model,
                }
            )
            services = Services(local)
            console = ConsoleSettings(
                supabase_url=realtime.url,
                publishable_key=keys.publishable,
                demo_email=DEMO_EMAIL,
                demo_password=DEMO_PASSWORD,
                demo_message=demo_message,
            )
            server = BackgroundServer(
                gateway(services, console),
                port=port,
                name="functions",
                on_shutdown=services.aclose,
            )
            stack.enter_context(server)
            sweeper = asyncio.create_task(_sweep_forever(local))
            try:
                yield RunningStack(
                    server.url,
                    realtime,
                    keys,
                    secret,
                    demo_model=bool(model),
                    sweep_every=local.sweep_interval_seconds,
                    model_latency=model_latency if model else 0.0,
                    model_tokens_per_second=(model_tokens_per_second if model else 0.0),
                    signing=auth.signing.algorithm,
                )
            finally:
                sweeper.cancel()
                await asyncio.gather(sweeper, return_exceptions=True)
        finally:
            await realtime.stop()
            await auth.stop()


async def _seed_new_user(database_url: str, user_id: UUID) -> None:
    """A new account on the local stack gets the demo data (`local.seed`), so the console's
    "Try the demo" acts on a calendar event of its own, not on one that does not exist."""
    async with Database(database_url, max_size=1) as db:
        await seed_user(db, user_id)


async def password_session(
    supabase_url: str, apikey: str, email: str, password: str
) -> dict[str, object]:
    """A session from the project's Auth, as `supabase.auth.signInWithPassword` gets one."""
    async with httpx.AsyncClient() as http:
        response = await http.post(
            f"{supabase_url}/auth/v1/token",
            params={"grant_type": "password"},
            json={"email": email, "password": password},
            headers={"apikey": apikey},
        )
    response.raise_for_status()
    session: dict[str, object] = response.json()
    return session


def _realtime_quota(settings: Settings, realtime: RealtimeServer) -> float:
    """The quota Parley paces to: the local Realtime's own limit (its plan's, or
    `REALTIME_MAX_EVENTS_PER_SECOND`), unless `REALTIME_QUOTA_PER_SECOND` says otherwise."""
    if "realtime_quota_per_second" in settings.model_fields_set:
        return settings.realtime_quota_per_second
    return realtime.config.max_events_per_second


def _pool_size(settings: Settings) -> int:
    """A long-running server's pool (bench.concurrency), unless `DB_POOL_MAX_SIZE` says."""
    if "db_pool_max_size" in settings.model_fields_set:
        return settings.db_pool_max_size
    return LOCAL_POOL_SIZE


async def _sweep_forever(settings: Settings) -> None:
    """The sweeper, every `SWEEP_INTERVAL_SECONDS`, with services of its own (this loop's)."""
    services = Services(settings)
    try:
        while True:
            await asyncio.sleep(settings.sweep_interval_seconds)
            try:
                await sweep(services)
            except Exception:
                log.exception("the sweep failed; it runs again next time")
    finally:
        await services.aclose()


async def serve(settings: Settings, database: LocalDatabase, args: argparse.Namespace) -> None:
    async with running_stack(
        settings,
        database.url,
        port=args.port,
        realtime_port=args.realtime_port,
        model_latency=_model_latency(args),
        model_tokens_per_second=_model_pace(args),
    ) as running:
        banner(running)
        env = write_client_env(running, settings.parley_data_dir)
        print(
            f"  client      cd clients/js && npm run example  (@parley/client's example, with "
            f"these values from {env})",
            flush=True,
        )
        session_id = await _demo(running, args.message)
        print(f"\nThis turn in the console: {running.url}/#/s/{session_id}")
        print(
            f"\nWatch a turn live: open {running.console_url}\n"
            "  The console signs in as the demo user and sends the demo message. You see the "
            "plan graph,\n  two executors' threads filling in over Realtime, and a calendar "
            "event's deletion waiting\n  for your approval.",
            flush=True,
        )
        add_user = running.signup_command("ana@example.com", "choose-a-password")
        print(
            f"\nUsers: the demo user signs in with {DEMO_EMAIL} / {DEMO_PASSWORD}. Add another "
            f"(or use the console's Create an account):\n  {add_user}",
            flush=True,
        )
        if not args.once:
            print("\nServing until Ctrl-C.", flush=True)
            await _until_interrupted()


def _model_latency(args: argparse.Namespace) -> float:
    """Paced for a person watching the console; at once for a scripted `--once`."""
    if args.model_latency is not None:
        return float(args.model_latency)
    return 0.0 if args.once else DEMO_MODEL_LATENCY


def _model_pace(args: argparse.Namespace) -> float:
    """DeepSeek's own speed when serving, so the console and Realtime see a real model's
    token batches; at once for a scripted `--once`."""
    if args.model_tokens_per_second is not None:
        return float(args.model_tokens_per_second)
    return 0.0 if args.once else DEEPSEEK_TOKENS_PER_SECOND


def _model_settings(
    settings: Settings, stack: contextlib.ExitStack, latency: float, pace: Pace
) -> dict[str, object]:
    """The configured model, or the offline demo model served from this process."""
    if (
        settings.llm_api_key is not None
        or settings.llm_base_url != Settings.model_fields["llm_base_url"].default
    ):
        return {}
    fake = stack.enter_context(FakeModelServer(latency=latency, pace=pace))
    return {
        "llm_base_url": fake.base_url,
        "llm_planner_model": DEMO_MODEL,
        "llm_executor_model": DEMO_MODEL,
    }


def banner(running: RunningStack) -> None:
    """What the stack serves, and where."""
    if running.demo_model:
        label = f"{DEMO_MODEL} — Parley's OFFLINE DEMO MODEL, canned replies (set DEEPSEEK_API_KEY)"
        if running.model_latency:
            label += f", {running.model_latency:g} s each"
        if running.model_tokens_per_second:
            label += f", streaming {running.model_tokens_per_second:g} tokens/s"
        label += ";\n              served by DeepSeek's local twin, held to DeepSeek's API rules "
        label += "(python3 dev.py check-model checks a real key)"
    else:
        label = "as configured (LLM_BASE_URL, LLM_PLANNER_MODEL, LLM_EXECUTOR_MODEL)"
    url = running.url
    print(f"  model       {label}")
    print(
        f"  console     {running.console_url}  (Parley Console: a demo turn, live; "
        f"{url}/ to sign in)"
    )
    print(
        f"  functions   {url}/chat · {url}/agent_planner · "
        f"{url}/agent_executor  (OpenAPI: {url}/chat/docs)"
    )
    print(
        f"  supabase    {running.supabase_url}  (SUPABASE_URL for supabase-js: Auth at "
        "/auth/v1, Realtime at /realtime/v1, channel session:<id>)"
    )
    keys = running.keys
    print(
        f"  keys        publishable {keys.publishable}  secret {keys.secret}  "
        f"(legacy anon / service_role JWTs too; sessions {running.signing})"
    )
    print(
        f"  sweeper     every {running.sweep_every:g} s (plans whose runner died, approvals "
        "not resumed)",
        flush=True,
    )


def write_client_env(running: RunningStack, data_dir: Path) -> Path:
    """The stack's values for `@parley/client`'s example (`npm run example` reads the file):
    what the banner prints, as environment variables."""
    values = {
        "SUPABASE_URL": running.supabase_url,
        "SUPABASE_ANON_KEY": running.anon_key,
        "PARLEY_CHAT_URL": f"{running.url}/chat",
        "PARLEY_PLANNER_URL": f"{running.url}/agent_planner",
        "PARLEY_EMAIL": DEMO_EMAIL,
        "PARLEY_PASSWORD": DEMO_PASSWORD,
    }
    path = data_dir / "client.env"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{name}={value}\n" for name, value in values.items()))
    return path


async def _demo(running: RunningStack, message: str) -> str:
    """Play the demo turn, signed in as the demo user; the id of its session."""
    session = await password_session(
        running.supabase_url, running.anon_key, DEMO_EMAIL, DEMO_PASSWORD
    )
    token = str(session["access_token"])
    print(f"\nDemo turn, as the demo user: {message!r}", flush=True)
    turn = await demo.play(
        functions_url=running.url,
        realtime_url=running.realtime.realtime_url,
        anon_key=running.anon_key,
        user_token=token,
        message=message,
        say=lambda line: print(line, flush=True),
    )
    reply = turn.reply
    print(f"\nAnswer ({reply['status']}, {reply['strategy']}, plan {reply['plan_id']}):")
    print("  " + (reply.get("answer") or reply.get("error") or "").replace("\n", "\n  "))
    print(f"\n{len(turn.events)} events arrived over Realtime. Try it yourself:")
    print(f"  export TOKEN={token}   # the demo user's access token, valid an hour")
    print(
        f'  curl -s {running.url}/chat/chat -H "Authorization: Bearer $TOKEN" '
        "-H 'content-type: application/json' -d '{\"message\": \"Hello!\"}'"
    )
    return str(reply["session_id"])


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
    parser.add_argument(
        "--model-latency",
        type=float,
        metavar="SECONDS",
        help="how long the offline demo model takes before each reply, as a real model would, "
        "so a turn can be watched in the console "
        f"(default {DEMO_MODEL_LATENCY:g}; 0 with --once)",
    )
    parser.add_argument(
        "--model-tokens-per-second",
        type=float,
        metavar="N",
        help="how fast the offline demo model streams its replies, one token a chunk, as a "
        f"real model does (default DeepSeek's {DEEPSEEK_TOKENS_PER_SECOND:g}; 0 with --once: "
        "at once)",
    )
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except ConfigurationError as exc:  # what to change, not a traceback
        print(f"python3 dev.py run: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C before serving (during the demo turn): the stack is down
        print("\npython3 dev.py run: stopped.", file=sys.stderr)
        return 130


def _run(args: argparse.Namespace) -> int:
    settings = load_settings(**({"parley_data_dir": args.data_dir} if args.data_dir else {}))
    logs.configure(settings)  # the functions' lines with their work's ids (LOG_FORMAT)
    tracing.start(settings, service="parley")  # when OTEL_* settings ask for it

    database = prepare_database(settings)
    migrate.upgrade(database.url)
    summary, schema = asyncio.run(seed(database.url))
    kind = "embedded" if database.embedded else "DATABASE_URL"
    if database.created:
        kind += f"; first start: initdb made its cluster in {settings.parley_data_dir / 'postgres'}"
    counts = " · ".join(f"{n} {table.replace('_', ' ')}" for table, n in summary.counts.items())
    print("Parley local stack")
    print(f"  database    {database.url}  ({kind})")
    print(f"  schema      {schema}")
    print(f"  demo user   {summary.email}  {summary.user_id}")
    print(f"  demo data   {counts}", flush=True)
    try:
        asyncio.run(serve(settings, database, args))
    finally:
        tracing.stop()  # export what is left
    return 0
