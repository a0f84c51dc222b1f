"""Benchmark: one chat process under N concurrent users, the model holding each reply.

    .venv/bin/python -m bench.concurrency [--users 10,50,200] [--seconds 10] [--hold 0.2]

The chat function runs alone in its own process (uvicorn, one worker, `INVOKER_TRANSPORT=
in_process`: the planner runs there too), configured from the environment as a deployment
is. The fake model runs in a process of its own too, holding every reply `--hold` seconds (a
real model's latency: the turn's own work must overlap it). This process plays N users — each
sends a direct turn (`POST /chat`, JSON), waits for its answer, and sends the next.

A `503` is a turn the function refused to start (admission control): the user waits its
`Retry-After` and resends with the same `client_message_id`. Printed per N: completed turns
per second, p50/p95 of a completed turn's time (from its first send), 503s, other errors;
then a check of the tables: every answered message stored exactly once, with exactly one
answer, and nothing stored for a send that was never answered 200.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import httpx

from shared.db import Database
from tests.functions.conftest import token
from tests.support.factories import make_user
from tests.support.turn_kinds import MESSAGES, Harness, harness

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Results:
    times: list[float] = field(default_factory=list)
    """Each completed turn's time from its first send (waits after 503s included)."""
    served: list[float] = field(default_factory=list)
    """Each completed turn's time from the send that was admitted."""
    refused: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    answered: dict[str, UUID] = field(default_factory=dict)  # client_message_id → session


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


MODEL = """
import sys, threading
from shared.llm.tokens import DeepSeekTokenizer
from local.deepseek import FakeModelServer
from tests.support.llm_models import SERVED
from tests.support.turn_kinds import script_turns
fake = FakeModelServer(models=SERVED, tokenizer=DeepSeekTokenizer(), port=int(sys.argv[1]))
script_turns(fake.start(), model_seconds=float(sys.argv[2]))
print("ready", flush=True)
threading.Event().wait()
"""


def serve_model(port: int, hold: float) -> subprocess.Popen[str]:
    """The fake model in a process of its own (its CPU is not the chat function's)."""
    process = subprocess.Popen(
        [sys.executable, "-c", MODEL, str(port), str(hold)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    return process


def serve_chat(
    h: Harness, port: int, model_url: str, extra: dict[str, str]
) -> subprocess.Popen[bytes]:
    env = {**h.environment(llm_base_url=model_url), **extra}
    command = [
        sys.executable,
        "-m",
        "uvicorn",
        "functions.chat.app:app",
        "--port",
        str(port),
        "--log-level",
        "warning",
        "--no-access-log",
    ]
    return subprocess.Popen(command, cwd=ROOT, env=env)


async def wait_ready(url: str, process: subprocess.Popen[bytes]) -> None:
    async with httpx.AsyncClient() as http:
        for _ in range(600):
            if process.poll() is not None:
                raise RuntimeError("the chat function exited")
            try:
                if (await http.get(f"{url}/health")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.05)  # a benchmark polling a server it started: no signal
    raise TimeoutError("the chat function did not start")


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Connection:
    """One user's keep-alive HTTP/1.1 connection, as lean as a load generator must be: this
    process plays 200 users on a machine whose CPU the server under test needs too (httpx
    spent about half a core doing it). Enough HTTP for these answers: `Content-Length` bodies."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def post(self, path: str, body: bytes, headers: dict[str, str]) -> Answer:
        if self._streams is None:
            self._streams = await asyncio.open_connection(self.host, self.port)
        reader, writer = self._streams
        lines = [
            f"POST {path} HTTP/1.1",
            f"Host: {self.host}:{self.port}",
            "Content-Type: application/json",
            f"Content-Length: {len(body)}",
            *(f"{k}: {v}" for k, v in headers.items()),
        ]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        head = await reader.readuntil(b"\r\n\r\n")
        status_line, *fields = head.decode("latin-1").split("\r\n")
        found = {}
        for line in fields:
            if ":" in line:
                name, value = line.split(":", 1)
                found[name.strip().lower()] = value.strip()
        content = await reader.readexactly(int(found.get("content-length", "0")))
        if found.get("connection") == "close":
            await self.close()
        return Answer(int(status_line.split()[1]), found, content)

    async def close(self) -> None:
        if self._streams is not None:
            self._streams[1].close()
            self._streams = None


async def user_loop(url: str, token: str, until: float, results: Results) -> None:
    host, port = url.removeprefix("http://").split(":")
    connection = Connection(host, int(port))
    headers = {"Authorization": f"Bearer {token}"}
    try:
        while time.perf_counter() < until:
            client_id = uuid4().hex
            body = json.dumps(
                {"message": MESSAGES["direct"], "client_message_id": client_id, "wait": True}
            ).encode()
            started = time.perf_counter()
            while True:
                attempt = time.perf_counter()
                try:
                    response = await connection.post("/chat", body, headers)
                except (OSError, asyncio.IncompleteReadError) as exc:
                    await connection.close()
                    results.errors[type(exc).__name__] += 1
                    break
                if response.status == 503 and "retry-after" in response.headers:
                    results.refused += 1
                    await asyncio.sleep(float(response.headers["retry-after"]))
                    continue
                if response.status != 200 or response.json().get("status") != "completed":
                    results.errors[f"{response.status} {response.body[:80]!r}"] += 1
                    break
                results.times.append(time.perf_counter() - started)
                results.served.append(time.perf_counter() - attempt)
                results.answered[client_id] = UUID(response.json()["session_id"])
                break
    finally:
        await connection.close()


async def check_tables(h: Harness, users: list[UUID], results: Results) -> str:
    async with Database(h.url) as db, db.service() as conn:
        cur = await conn.execute(
            """SELECT m.client_message_id, count(*) AS n,
                      count(DISTINCT a.id) AS answers
               FROM chat_messages m
               JOIN agent_plans p ON p.user_message_id = m.id
               LEFT JOIN chat_messages a ON a.plan_id = p.id AND a.role = 'assistant'
               WHERE m.user_id = ANY(%s) AND m.role = 'user'
               GROUP BY m.client_message_id""",
            (users,),
        )
        rows = {r["client_message_id"]: (r["n"], r["answers"]) for r in await cur.fetchall()}
    missing = [c for c in results.answered if c not in rows]
    twice = [c for c, (n, _) in rows.items() if n != 1]
    unanswered = [c for c in results.answered if c in rows and rows[c][1] != 1]
    unsent = [c for c in rows if c not in results.answered]
    if missing or twice or unanswered:
        return (
            f"FAILED: {len(missing)} answered messages not stored, {len(twice)} stored "
            f"twice, {len(unanswered)} without exactly one answer"
        )
    note = f" ({len(unsent)} stored for sends cut off at the end)" if unsent else ""
    return f"ok: {len(results.answered)} messages, each stored once with one answer{note}"


async def one_level(h: Harness, url: str, n: int, seconds: float) -> None:
    async with Database(h.url) as db:
        users = [await make_user(db) for _ in range(n)]
    tokens = [token(u) for u in users]
    results = Results()
    until = time.perf_counter() + seconds
    started = time.perf_counter()
    await asyncio.gather(*(user_loop(url, t, until, results) for t in tokens))
    elapsed = time.perf_counter() - started
    ms = sorted(t * 1000 for t in results.times) or [0.0]
    served = sorted(t * 1000 for t in results.served) or [0.0]
    p95 = statistics.quantiles(ms, n=20)[18] if len(ms) > 1 else ms[0]
    print(
        f"N={n:<4} turns/s {len(results.times) / elapsed:6.1f}   p50 {statistics.median(ms):7.0f}"
        f" ms  p95 {p95:7.0f} ms  fastest {ms[0]:6.0f} ms  503s {results.refused:>5}  "
        f"errors {sum(results.errors.values())}  (admitted send p50 "
        f"{statistics.median(served):.0f} ms)",
        flush=True,
    )
    for error, count in results.errors.most_common(3):
        print(f"        {count}× {error}")
    print(f"        tables: {await check_tables(h, users, results)}", flush=True)


async def run(args: argparse.Namespace, h: Harness) -> None:
    model_port = free_port()
    model = serve_model(model_port, args.hold)
    port = free_port()
    extra = dict(item.split("=", 1) for item in args.env)
    process = serve_chat(h, port, f"http://127.0.0.1:{model_port}/v1", extra)
    url = f"http://127.0.0.1:{port}"
    try:
        await wait_ready(url, process)
        for n in args.users:
            await one_level(h, url, n, args.seconds)
    finally:
        for running in (process, model):
            running.terminate()
            running.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", default="10,50,200")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--hold", type=float, default=0.2, help="model reply hold, seconds")
    parser.add_argument(
        "--env", action="append", default=[], help="NAME=value for the chat function (repeatable)"
    )
    args = parser.parse_args()
    args.users = [int(n) for n in args.users.split(",") if n]
    with harness() as h:  # its fake model goes unused: the chat function calls the one above
        asyncio.run(run(args, h))


if __name__ == "__main__":
    main()
