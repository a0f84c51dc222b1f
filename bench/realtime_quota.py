"""Benchmark: N users streaming answers through the local stack, against Realtime's quota.

    .venv/bin/python -m bench.realtime_quota [--users 40] [--seconds 90] [--quota 100]
        [--answer-seconds 6] [--tokens-per-second 60] [--env NAME=value ...]

Three processes, as a deployment has them apart: the local stack (`local.stack.running_stack`:
the functions, Auth and the Realtime twin holding the project to `--quota` messages a second,
measured as hosted measures it), DeepSeek's twin streaming every answer at a real model's pace
(`--tokens-per-second`, DeepSeek's own figure by default; each answer `--answer-seconds` long),
and this one, which plays the users. Each user opens a session, joins its private Realtime
channel with the official Python client, and sends direct turns one after another for
`--seconds` (`POST /chat`, waiting for the answer); turns under way then are let finish.
Parley's own budget (`REALTIME_QUOTA_PER_SECOND`) is set to `--quota` too; `--env` passes
more settings to the stack.

Printed: the twin's messages a second (its own one-minute average, sampled at each of its
5-second ticks, as hosted computes it: every message sent counts, and every delivery), the
channels it shut down ("Too many messages per second") and the broadcasts it refused or dropped
over its limit, the turns completed, the `done` events that reached their user live (and how
many carried the whole answer), the token batches each answer arrived in, and the token latency —
from the moment the model sent a token to the moment its user's client got it (in a batch, or
in `done` when no batch carried it), p50 and p95. Uses a fresh database (the tests' template on
DATABASE_URL's server or the embedded one), dropped afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import httpx
from realtime import (
    AsyncRealtimeClient,
    BroadcastPayload,
    RealtimeChannelConfig,
    RealtimeSubscribeStates,
)
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from local.auth.keys import mint_token
from local.deepseek import DEEPSEEK_TOKENS_PER_SECOND, FakeModelServer, Pace, RecordedRequest, reply
from shared.db import Database
from shared.llm.tokens import DeepSeekTokenizer
from tests.support import databases
from tests.support.factories import make_user

ROOT = Path(__file__).resolve().parents[1]
PLANNER_MODEL, EXECUTOR_MODEL = "deepseek-v4-pro", "deepseek-flash"
PROSE = (
    "Here is how the week looks. Your open tasks come first, then the meetings, and last the "
    "notes you asked me to keep in mind. Nothing is due today that you have not seen already. "
)
DONE_GRACE_SECONDS = 10.0
"""How long after its answer a turn's `done` may still arrive to count as live."""


# --- the model: DeepSeek's twin at a real model's pace, noting when it sent each token --------


class TimedModel(FakeModelServer):
    """The twin, answering every request with `answer` and noting, per turn (its user's
    message), when each piece of the answer left: (characters sent so far, wall time)."""

    def __init__(self, *, port: int, pace: Pace, answer: str) -> None:
        super().__init__(port=port, models=(PLANNER_MODEL, EXECUTOR_MODEL), pace=pace)
        self.sent: dict[str, list[tuple[int, float]]] = {}
        self.respond_with(lambda _request: reply(answer))
        self.app.router.routes.append(Route("/bench/sent", self._sent, methods=["GET"]))

    async def _events(self, item: Any, recorded: Any, usage: Any, reasoning: Any) -> Any:
        key, chars = _turn_key(recorded), 0
        log = self.sent.setdefault(key, [])
        async for data in super()._events(item, recorded, usage, reasoning):
            text = _content(data)
            if text:
                chars += len(text)
                log.append((chars, time.time()))
            yield data

    async def _sent(self, _request: Request) -> JSONResponse:
        return JSONResponse(self.sent)


def _turn_key(recorded: RecordedRequest) -> str:
    users = [m for m in recorded.messages if m.get("role") == "user"]
    return str(users[-1].get("content", "")) if users else ""


def _content(data: bytes) -> str:
    line = data.decode().removeprefix("data: ").strip()
    if not line.startswith("{"):
        return ""
    choices = json.loads(line).get("choices") or ()
    return "".join((c.get("delta") or {}).get("content") or "" for c in choices)


def answer_text(tokens: int) -> str:
    """Prose of `tokens` tokens (DeepSeek's tokenizer)."""
    counter = DeepSeekTokenizer()
    text = PROSE * (tokens // max(counter.count(PROSE), 1) + 1)
    return counter.truncate(text, tokens).rstrip()


async def serve_model(args: argparse.Namespace) -> None:
    answer = answer_text(round(args.answer_seconds * args.tokens_per_second))
    with TimedModel(port=args.port, pace=Pace(args.tokens_per_second), answer=answer) as model:
        print(json.dumps({"model": model.base_url}), flush=True)
        await asyncio.Event().wait()


# --- the stack: the functions, Auth and Realtime, reporting the twin's rate -------------------


async def serve_stack(args: argparse.Namespace) -> None:
    from local.stack import running_stack
    from shared.services import load_settings

    count_refusals()
    settings = load_settings()
    assert settings.database_url is not None
    async with running_stack(settings, settings.database_url, port=0, realtime_port=0) as stack:
        engine = stack.realtime.engine
        assert engine is not None
        print(
            json.dumps(
                {
                    "functions": stack.url,
                    "realtime": stack.realtime.realtime_url,
                    "secret": stack.jwt_secret,
                }
            ),
            flush=True,
        )
        while True:
            await asyncio.sleep(engine.config.rate_tick)
            events = engine.limits.events
            print(json.dumps({"rate": events.avg, "limit": events.limit}), flush=True)


def count_refusals() -> None:
    """Report each channel the twin shuts down and each broadcast it refuses or drops over its
    limit (a REST 429, a database broadcast dropped while the limit is tripped)."""
    from local.realtime import rest
    from local.realtime.channel import Channel

    def report(**what: str) -> None:
        print(json.dumps(what), flush=True)

    shutdown, too_many = Channel.shutdown, rest._too_many

    def shut(channel: Channel, message: str) -> None:
        report(shutdown=message)
        shutdown(channel, message)

    def refused(message: str) -> JSONResponse:
        report(refused=message)
        return too_many(message)

    class Dropped(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "too_many_requests" in record.getMessage():
                report(refused="database broadcast dropped")

    Channel.shutdown = shut  # type: ignore[method-assign,assignment]
    rest._too_many = refused
    logging.getLogger("local.realtime.messages.delivery").addHandler(Dropped())


# --- the users ------------------------------------------------------------------------------


@dataclass
class Turn:
    message: str
    plan_id: str | None = None
    status: str | None = None
    answer: str = ""
    """The answer as `POST /chat` returned it."""


@dataclass
class Seen:
    """What a user's client got of one plan, live."""

    batches: list[tuple[int, int, float]] = field(default_factory=list)
    """(first character, characters, arrival) of each token batch."""
    chars: int = 0
    done: float | None = None
    done_answer: str = ""
    arrived: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class User:
    id: UUID
    turns: list[Turn] = field(default_factory=list)
    seen: dict[str, Seen] = field(default_factory=dict)
    closed: bool = False
    errors: Counter[str] = field(default_factory=Counter)

    def plan(self, plan_id: str) -> Seen:
        return self.seen.setdefault(plan_id, Seen())


@dataclass
class Stack:
    functions: str
    realtime: str
    secret: str
    model: str
    rates: list[float] = field(default_factory=list)
    limit: float = 0.0
    shutdowns: Counter[str] = field(default_factory=Counter)
    refused: Counter[str] = field(default_factory=Counter)
    running: bool = True


async def play(stack: Stack, user: User, until: float, anon: str) -> None:
    token = mint_token(stack.secret, sub=user.id)
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=stack.functions, headers=headers, timeout=300) as http:
        created = await http.post("/chat/sessions", json={})
        created.raise_for_status()
        session_id = created.json()["id"]
        client = AsyncRealtimeClient(stack.realtime, anon)
        await client.set_auth(token)
        try:
            await follow(client, user, session_id)
            while time.perf_counter() < until:
                await one_turn(http, user, session_id)
        finally:
            with contextlib.suppress(Exception):
                await client.close()


async def follow(client: AsyncRealtimeClient, user: User, session_id: str) -> None:
    config: RealtimeChannelConfig = {"broadcast": None, "presence": None, "private": True}
    channel = client.channel(f"session:{session_id}", {"config": config})

    def on_token(message: BroadcastPayload) -> None:
        event = message["payload"]
        seen, text = user.plan(event["plan_id"]), event["data"]["text"]
        seen.batches.append((seen.chars, len(text), time.time()))
        seen.chars += len(text)

    def on_done(message: BroadcastPayload) -> None:
        event = message["payload"]
        seen = user.plan(event["plan_id"])
        seen.done, seen.done_answer = time.time(), event["data"].get("answer") or ""
        seen.arrived.set()

    joined: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def on_state(state: RealtimeSubscribeStates, _error: Exception | None) -> None:
        if state == RealtimeSubscribeStates.SUBSCRIBED and not joined.done():
            joined.set_result(None)
        elif state in (RealtimeSubscribeStates.CLOSED, RealtimeSubscribeStates.CHANNEL_ERROR):
            user.closed = True

    channel.on_broadcast("token", on_token).on_broadcast("done", on_done)
    await channel.subscribe(on_state)
    await asyncio.wait_for(joined, 30)


async def one_turn(http: httpx.AsyncClient, user: User, session_id: str) -> None:
    turn = Turn(message=f"turn {uuid4()}")
    user.turns.append(turn)
    body = {
        "session_id": session_id,
        "message": turn.message,
        "client_message_id": turn.message,
        "wait": True,
    }
    try:
        response = await http.post("/chat/chat", json=body)
    except httpx.HTTPError as exc:
        user.errors[type(exc).__name__] += 1
        return
    if response.status_code != 200:
        user.errors[f"HTTP {response.status_code}"] += 1
        return
    answer = response.json()
    turn.plan_id, turn.status = answer["plan_id"], answer["status"]
    turn.answer = answer.get("answer") or ""
    seen = user.plan(turn.plan_id)
    if seen.done is None and not user.closed:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(seen.arrived.wait(), DONE_GRACE_SECONDS)


# --- running it all -------------------------------------------------------------------------


async def started(args: list[str], env: dict[str, str]) -> tuple[Any, dict[str, Any]]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.realtime_quota",
        *args,
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), 120)
    if not line:
        raise RuntimeError(f"{args[:2]} exited before it was ready")
    return process, json.loads(line)


async def watch(process: Any, stack: Stack) -> None:
    """The stack's reports: the twin's rate at each tick, each channel it shut down."""
    while line := await process.stdout.readline():
        report = json.loads(line)
        if "rate" in report and stack.running:
            stack.rates.append(report["rate"])
            stack.limit = report["limit"]
        elif "shutdown" in report:
            stack.shutdowns[report["shutdown"]] += 1
        elif "refused" in report:
            stack.refused[report["refused"]] += 1


@contextlib.asynccontextmanager
async def processes(args: argparse.Namespace, url: str) -> AsyncIterator[Stack]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "DEEPSEEK_"))}
    model, ready = await started(
        [
            "--serve",
            "model",
            "--port",
            "0",
            "--answer-seconds",
            str(args.answer_seconds),
            "--tokens-per-second",
            str(args.tokens_per_second),
        ],
        env,
    )
    stack_env = {
        **env,
        "DATABASE_URL": url,
        "LLM_BASE_URL": ready["model"],
        "LLM_API_KEY": "bench",
        "LLM_PLANNER_MODEL": PLANNER_MODEL,
        "LLM_EXECUTOR_MODEL": EXECUTOR_MODEL,
        "REALTIME_MAX_EVENTS_PER_SECOND": str(args.quota),
        "REALTIME_QUOTA_PER_SECOND": str(args.quota),
        "PARLEY_DATA_DIR": args.data_dir,
        "LOG_LEVEL": "WARNING",
        **dict(item.split("=", 1) for item in args.env),
    }
    try:
        server, urls = await started(["--serve", "stack"], stack_env)
    except BaseException:
        model.terminate()
        await model.wait()
        raise
    stack = Stack(urls["functions"], urls["realtime"], urls["secret"], ready["model"])
    watching = asyncio.create_task(watch(server, stack))
    try:
        yield stack
    finally:
        for process in (server, model):
            process.terminate()
            await process.wait()
        watching.cancel()
        await asyncio.gather(watching, return_exceptions=True)


async def run(args: argparse.Namespace) -> None:
    server_url = databases.server_url()
    url = databases.create_database(server_url, template=databases.ensure_template(server_url))
    try:
        async with Database(url) as db:
            users = [User(await make_user(db)) for _ in range(args.users)]
        with tempfile.TemporaryDirectory(prefix="parley-quota-") as tmp:
            args.data_dir = tmp
            async with processes(args, url) as stack:
                sent = await measure(args, stack, users)
            report(args, stack, users, sent)
    finally:
        databases.drop_database(server_url, url)


async def measure(
    args: argparse.Namespace, stack: Stack, users: list[User]
) -> dict[str, list[list[float]]]:
    anon = mint_token(stack.secret, role="anon")
    until = time.perf_counter() + args.seconds
    print(
        f"{len(users)} users streaming for {args.seconds:g} s at a quota of {args.quota}/s "
        f"(answers of ~{args.answer_seconds:g} s at {args.tokens_per_second:g} tokens/s)…",
        flush=True,
    )
    await asyncio.gather(*(play(stack, u, until, anon) for u in users))
    stack.running = False
    async with httpx.AsyncClient() as http:
        sent: dict[str, list[list[float]]] = (
            await http.get(stack.model.removesuffix("/v1") + "/bench/sent")
        ).json()
    return sent


def report(
    args: argparse.Namespace,
    stack: Stack,
    users: list[User],
    sent: dict[str, list[list[float]]],
) -> None:
    turns = [t for u in users for t in u.turns]
    completed = [t for t in turns if t.status == "completed"]
    live = [t for u in users for t in u.turns if t.plan_id and u.seen.get(t.plan_id, Seen()).done]
    rates = stack.rates or [0.0]
    print("messages/s at each of the twin's ticks: " + " ".join(f"{r:.0f}" for r in rates))
    print(
        f"messages/s (the twin's 1-minute average, {len(rates)} ticks): mean "
        f"{statistics.fmean(rates):.1f}, max {max(rates):.1f} (quota {stack.limit:g})"
    )
    print(
        f"channels shut down: {sum(stack.shutdowns.values())} of {len(users)} "
        f"({dict(stack.shutdowns) or 'none'}); clients that saw their channel close: "
        f"{sum(u.closed for u in users)}"
    )
    over = sum(r >= stack.limit for r in rates)
    print(
        f"ticks at or over the quota: {over} of {len(rates)}; broadcasts the twin refused or "
        f"dropped over it: {sum(stack.refused.values())} ({dict(stack.refused) or 'none'})"
    )
    print(
        f"turns completed: {len(completed)} of {len(turns)} sent "
        f"({len(completed) / args.seconds:.2f}/s); errors: "
        f"{sum((u.errors for u in users), Counter()) or 'none'}"
    )
    whole = [
        t
        for u in users
        for t in u.turns
        if t.plan_id in u.seen and t.answer and u.seen[t.plan_id].done_answer == t.answer
    ]
    print(
        f"`done` delivered live: {len(live)} of {len(completed)} completed turns "
        f"({len(whole)} with the whole answer)"
    )
    batches = [
        len(u.seen[t.plan_id].batches)
        for u in users
        for t in u.turns
        if t.plan_id in u.seen and t.status == "completed"
    ]
    if batches:
        print(
            f"token batches per answer: mean {statistics.fmean(batches):.1f}, "
            f"min {min(batches)}, max {max(batches)}"
        )
    latencies, missing = token_latencies(users, sent)
    if latencies:
        q = statistics.quantiles(latencies, n=20) if len(latencies) > 1 else latencies * 19
        print(
            f"token latency (model → client): p50 {statistics.median(latencies) * 1000:.0f} "
            f"ms, p95 {q[18] * 1000:.0f} ms over {len(latencies)} tokens; "
            f"{missing} tokens never reached their client"
        )


def token_latencies(
    users: list[User], sent: dict[str, list[list[float]]]
) -> tuple[list[float], int]:
    """Per token the model sent: when its client got it (its batch, else `done`) minus when
    the model sent it; and how many no client got."""
    latencies: list[float] = []
    missing = 0
    for user in users:
        for turn in user.turns:
            if turn.plan_id is None or turn.message not in sent:
                continue
            seen = user.seen.get(turn.plan_id, Seen())
            for chars, at in sent[turn.message]:
                got = _arrival(seen, int(chars))
                if got is None:
                    missing += 1
                else:
                    latencies.append(got - at)
    return latencies, missing


def _arrival(seen: Seen, chars: int) -> float | None:
    """When the client had the first `chars` characters of the answer (a token ending there)."""
    for first, length, at in seen.batches:
        if first < chars <= first + length:
            return at
    if seen.done is not None and len(seen.done_answer) >= chars:
        return seen.done
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=40)
    parser.add_argument("--seconds", type=float, default=90.0)
    parser.add_argument("--quota", type=int, default=100, help="messages a second (Free: 100)")
    parser.add_argument("--answer-seconds", type=float, default=6.0)
    parser.add_argument("--tokens-per-second", type=float, default=DEEPSEEK_TOKENS_PER_SECOND)
    parser.add_argument(
        "--env", action="append", default=[], help="NAME=value for the stack (repeatable)"
    )
    parser.add_argument("--serve", choices=("model", "stack"), help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve == "model":
        asyncio.run(serve_model(args))
    elif args.serve == "stack":
        asyncio.run(serve_stack(args))
    else:
        asyncio.run(run(args))


if __name__ == "__main__":
    main()
