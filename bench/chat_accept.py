"""Benchmark: how long `POST /chat` holds the caller, waiting (JSON) or accepting (202).

    .venv/bin/python -m bench.chat_accept [--turns 20] [--model-seconds 0.3]
        [--modes wait,accept,accept-sqs]

Each turn is a complex plan — two executor steps (one reads tasks, one the calendar), a write
step done by the planner, and the streamed synthesis — answered by the fake model, every call
held `--model-seconds` (a stand-in for the model's own time). The three functions run over
HTTP on localhost, wired to a fresh database (DATABASE_URL's server or the embedded Postgres):

* `wait` — no `wait` field, the local default: the response comes when the plan has ended;
  its time is the whole plan (the only mode before 202 existed).
* `accept` — `{"wait": false}` with `INVOKER_TRANSPORT=in_process`: 202 once the message and
  plan are stored and the plan handed over; the plan runs on in the chat's process.
* `accept-sqs` — `{"wait": false}` with `INVOKER_TRANSPORT=sqs` (moto's SQS as a server in
  this process, reached over HTTP on the loopback; a real in-region `SendMessage` adds
  ~10–30 ms): 202 once "run plan" is on the planner queue; a task plays Lambda's event source
  mappings, handing each message to the planner's or an executor's real handler.

No model call happens before a 202, so its time is Parley's own. The time until the plan
ended is printed too: the plan ran on after the 202.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import boto3
import httpx

from local.deepseek import FakeModelServer, reply, tool_call
from shared.db import Database
from shared.kernel.settings import Settings
from shared.llm.tokens import DeepSeekTokenizer
from shared.services import Services
from tests.functions.conftest import token
from tests.support import databases
from tests.support.cloud import Cloud, Function
from tests.support.factories import make_user
from tests.support.llm_models import EXECUTOR_MODEL, MODELS, PLANNER_MODEL, SERVED
from tests.support.moto_server import NOT_INHERITED, environment, moto_server
from tests.support.plan_calls import (
    CALENDAR_STEP,
    TASKS_STEP,
    WRITE_STEP,
    complete_with_results,
    plan_call,
    synthesis,
)
from tests.support.scripting import Script
from tests.support.stack import Stack
from tests.support.turn_kinds import held

MODES = ("wait", "accept", "accept-sqs")


def script_week(fake: FakeModelServer, seconds: float) -> None:
    script = Script(fake)
    script.planner(held(seconds, plan_call()), held(seconds, synthesis))
    script.step(
        TASKS_STEP,
        held(seconds, reply(tool_call("list_tasks", status=["backlog"]))),
        held(seconds, complete_with_results("Open tasks")),
    )
    script.step(
        CALENDAR_STEP,
        held(seconds, reply(tool_call("get_calendar_events"))),
        held(seconds, complete_with_results("Events")),
    )
    script.step(
        WRITE_STEP,
        held(seconds, reply(tool_call("create_task", title="Weekly review"))),
        held(seconds, reply(tool_call("complete", result="Created the task Weekly review"))),
        kind="planner_step",
    )


async def plan_done(db: Database, plan_id: UUID, limit: float = 120) -> float:
    """When the plan reached a final status (polling its row: this is a benchmark)."""
    deadline = time.perf_counter() + limit
    while time.perf_counter() < deadline:
        async with db.service() as conn:
            cur = await conn.execute("SELECT status FROM agent_plans WHERE id = %s", (plan_id,))
            row = await cur.fetchone()
        if row is not None and row["status"] in ("completed", "failed", "cancelled"):
            return time.perf_counter()
        await asyncio.sleep(0.005)
    raise TimeoutError(f"plan {plan_id} did not end in {limit} s")


class Queues:
    """Parley's queues on moto's server, and a task playing the event source mappings: it
    delivers each message to the planner's or an executor's Lambda handler as it arrives."""

    def __init__(
        self, url: str, fake: FakeModelServer, tokenizer: DeepSeekTokenizer, models_file: Any
    ) -> None:
        prefix = f"bench-{uuid4().hex[:8]}"
        self.cloud = Cloud(boto3.client("sqs"), prefix=prefix).create_queues()
        base = {
            "database_url": url,
            "llm_base_url": fake.base_url,
            "llm_api_key": "bench",
            "llm_planner_model": PLANNER_MODEL,
            "llm_executor_model": EXECUTOR_MODEL,
            "llm_models_file": models_file,
            "llm_max_retries": 0,
            **self.cloud.settings(),
        }
        self.functions = {
            name: Function(name, Services(Settings(**base), tokens=tokenizer))
            for name in ("agent_planner", "agent_executor")
        }
        self._task: asyncio.Task[None] | None = None

    async def _pump(self) -> None:
        while True:
            if not await self.cloud.drain(self.functions, limit=10_000):
                await asyncio.sleep(0.002)  # a benchmark may poll; Lambda's poller does too

    def start(self) -> None:
        self._task = asyncio.create_task(self._pump())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        for function in self.functions.values():
            function.close()


async def run_mode(
    mode: str, url: str, fake: FakeModelServer, tokenizer: DeepSeekTokenizer, args: Any
) -> None:
    queues = Queues(url, fake, tokenizer, args.models_file) if mode == "accept-sqs" else None
    settings: dict[str, Any] = queues.cloud.settings() if queues else {}
    stack = Stack(
        database_url=url,
        fake=fake,
        models_file=args.models_file,
        tokenizer=tokenizer,
        **settings,
    ).start()
    if queues is not None:
        queues.start()
    try:
        await measure(mode, stack, url, args)
    finally:
        if queues is not None:
            await queues.stop()
        stack.stop()


async def measure(mode: str, stack: Stack, url: str, args: Any) -> None:
    responses: list[float] = []
    to_done: list[float] = []
    async with Database(url) as db, httpx.AsyncClient(timeout=300) as http:
        for _ in range(args.turns):
            user = await make_user(db)
            body: dict[str, Any] = {"message": "Plan my week"}
            if mode != "wait":
                body["wait"] = False
            started = time.perf_counter()
            response = await http.post(
                f"{stack.url('chat')}/chat",
                json=body,
                headers={"Authorization": f"Bearer {token(user)}"},
            )
            answered = time.perf_counter()
            expected = 200 if mode == "wait" else 202
            assert response.status_code == expected, response.text
            responses.append(answered - started)
            ended = await plan_done(db, UUID(response.json()["plan_id"]))
            to_done.append(ended - started)
    print(line(mode, responses, to_done), flush=True)


def line(mode: str, responses: list[float], to_done: list[float]) -> str:
    def q(values: list[float]) -> tuple[float, float]:
        ms = sorted(v * 1000 for v in values)
        cut = statistics.quantiles(ms, n=20) if len(ms) > 1 else [ms[0]] * 19
        return statistics.median(ms), cut[18]

    r50, r95 = q(responses)
    d50, _ = q(to_done)
    return (
        f"{mode:<11} turns={len(responses):>3}  response p50={r50:8.1f} ms  p95={r95:8.1f} ms  "
        f"plan done p50={d50:8.1f} ms"
    )


async def run(args: argparse.Namespace) -> None:
    server_url = databases.server_url()
    url = databases.create_database(server_url, template=databases.ensure_template(server_url))
    tokenizer = DeepSeekTokenizer()
    try:
        with FakeModelServer(models=SERVED, tokenizer=tokenizer) as fake:
            for mode in args.modes:
                fake.reset()
                script_week(fake, args.model_seconds)
                await run_mode(mode, url, fake, tokenizer, args)
    finally:
        databases.drop_database(server_url, url)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20, help="turns per mode (default 20)")
    parser.add_argument(
        "--model-seconds",
        type=float,
        default=0.3,
        help="how long each model call is held (default 0.3)",
    )
    parser.add_argument(
        "--modes", default=",".join(MODES), help="comma-separated: " + ", ".join(MODES)
    )
    args = parser.parse_args()
    args.modes = [m for m in args.modes.split(",") if m]
    if unknown := set(args.modes) - set(MODES):
        parser.error(f"unknown modes: {', '.join(sorted(unknown))}")
    for name in NOT_INHERITED:
        os.environ.pop(name, None)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # moto's server: no request log
    with tempfile.TemporaryDirectory() as tmp, moto_server() as endpoint:
        os.environ.update(environment(endpoint))  # fake credentials: no real account is reachable
        args.models_file = Path(tmp) / "models.toml"
        args.models_file.write_text(MODELS)
        asyncio.run(run(args))


if __name__ == "__main__":
    main()
