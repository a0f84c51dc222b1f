"""The three kinds of turn the performance benchmarks run, and a harness to run them.

* `direct` — the planner answers in its one routing call;
* `tool` — the planner calls a write tool itself, then answers (two model calls);
* `complex` — a plan of three executor steps (each reads once, then completes) and the
  planner's streamed synthesis (eight model calls).

Turns go through the chat function's own path (`shared.usecases.sending.send`: store the message,
run the plan in this process, answer with JSON) against the fake model answering at once, so what is
left is Parley's own work. A `Harness` owns one migrated database (a clone of the tests' template on
`server_url`), the fake model server and a `Services` factory.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlencode, urlsplit, urlunsplit

from local.deepseek import FakeModelServer, RecordedRequest, Reply, reply, tool_call
from shared.auth.access_tokens import User
from shared.db import Database
from shared.kernel.settings import Settings
from shared.llm.tokens import DeepSeekTokenizer
from shared.services import Services
from shared.usecases import sending
from shared.wire.turns import ChatTurnReply, ChatTurnRequest
from tests.functions.conftest import SECRET
from tests.support import databases
from tests.support.factories import make_user
from tests.support.llm_models import EXECUTOR_MODEL, MODELS, PLANNER_MODEL, SERVED
from tests.support.plan_calls import CALENDAR_STEP, TASKS_STEP, complete_with_results, synthesis
from tests.support.scripting import Script

Kind = Literal["direct", "tool", "complex"]
KINDS: tuple[Kind, ...] = ("direct", "tool", "complex")
MESSAGES: dict[Kind, str] = {
    "direct": "hi",
    "tool": "Add a task: water the plants",
    "complex": "Give me an overview: my open tasks, my calendar and my projects",
}
STEPS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    (TASKS_STEP, "list_tasks", {"status": ["backlog"]}),
    (CALENDAR_STEP, "get_calendar_events", {}),
    ("Find the user's projects", "search_projects", {}),
)
OVERVIEW_PLAN: dict[str, Any] = {
    "goal": "Give the user an overview",
    "steps": [
        {"step_number": n, "description": d, "assignee": "executor", "tools": [t]}
        for n, (d, t, _) in enumerate(STEPS, start=1)
    ],
}


def held(seconds: float, item: Any) -> Callable[[RecordedRequest], Reply]:
    """`item` (a reply, or a function of the request giving one), held `seconds` first."""

    def respond(request: RecordedRequest) -> Reply:
        chosen = item(request) if callable(item) else item
        assert isinstance(chosen, Reply)
        return chosen.stalled(after=0, hold=seconds) if seconds > 0 else chosen

    return respond


def script_turns(fake: FakeModelServer, *, model_seconds: float = 0.0) -> Script:
    """One script that answers all three kinds (told apart by the user's message)."""

    def planner_first(request: RecordedRequest) -> Reply:
        text = str(request.messages[-1].get("content", ""))
        if text == MESSAGES["tool"]:
            return reply(tool_call("create_task", title="Water the plants"))
        if text == MESSAGES["complex"]:
            return reply(tool_call("create_plan", **OVERVIEW_PLAN))
        return reply("Hello! How can I help?")

    def planner_second(request: RecordedRequest) -> Reply:
        if any(
            m.get("name") == "create_plan" or "create_plan" in str(m.get("tool_calls"))
            for m in request.messages
        ):
            return synthesis(request)
        return reply("Done: the task is on your list.")

    script = Script(fake)
    script.planner(held(model_seconds, planner_first), held(model_seconds, planner_second))
    for description, tool, arguments in STEPS:
        script.step(
            description,
            held(model_seconds, reply(tool_call(tool, **arguments))),
            held(model_seconds, complete_with_results(description)),
        )
    return script


def with_application_name(url: str, name: str) -> str:
    """`url` with `application_name` set, so the server's log can tell its statements apart."""
    parts = urlsplit(url)
    query = "&".join(q for q in (parts.query, urlencode({"application_name": name})) if q)
    return urlunsplit(parts._replace(query=query))


@dataclass
class Harness:
    """A migrated database, the fake model and services wired to both."""

    server_url: str
    url: str
    fake: FakeModelServer
    tokenizer: DeepSeekTokenizer
    models_file: Path

    def settings(self, **overrides: Any) -> dict[str, Any]:
        """The settings the benchmarks' functions run with, by `Settings` field: this
        database, the fake model with the test models, user tokens signed with `SECRET`
        (`tests.functions.conftest.token`), no retries."""
        return {
            "database_url": self.url,
            "supabase_jwt_secret": SECRET,
            "llm_base_url": self.fake.base_url,
            "llm_api_key": "bench",
            "llm_planner_model": PLANNER_MODEL,
            "llm_executor_model": EXECUTOR_MODEL,
            "llm_models_file": self.models_file,
            "llm_max_retries": 0,
            **overrides,
        }

    def services(self, *, application_name: str = "parley", **overrides: Any) -> Services:
        url = with_application_name(self.url, application_name)
        settings = Settings(**self.settings(**{"database_url": url, **overrides}))
        return Services(settings, tokens=self.tokenizer)

    def environment(self, **overrides: Any) -> dict[str, str]:
        """`settings` as environment variables, for a function in a process of its own: this
        process's environment, less its own model settings (`LLM_*`, `DEEPSEEK_*`)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "DEEPSEEK_"))}
        env.update({name.upper(): str(value) for name, value in self.settings(**overrides).items()})
        return env

    async def user(self) -> User:
        async with Database(self.url) as db:
            user_id = await make_user(db)
        return User(id=user_id, claims={"sub": str(user_id), "role": "authenticated"})


@contextmanager
def harness(
    server_url: str | None = None, *, model_seconds: float = 0.0, database_url: str | None = None
) -> Iterator[Harness]:
    """A `Harness` on `server_url` (default: DATABASE_URL's server or the embedded one), on a
    new clone of the tests' template, dropped at the end — or on `database_url`, an existing
    migrated database (its owner's URL), kept (`bench.scale`'s grown databases)."""
    server = server_url or databases.server_url()
    url = database_url or databases.create_database(
        server, template=databases.ensure_template(server)
    )
    tokenizer = DeepSeekTokenizer()
    try:
        with (
            tempfile.TemporaryDirectory() as tmp,
            FakeModelServer(models=SERVED, tokenizer=tokenizer) as fake,
        ):
            models_file = Path(tmp) / "models.toml"
            models_file.write_text(MODELS)
            script_turns(fake, model_seconds=model_seconds)
            yield Harness(server, url, fake, tokenizer, models_file)
    finally:
        if database_url is None:
            databases.drop_checked(server, url)


async def send(services: Services, user: User, kind: Kind) -> ChatTurnReply:
    """One turn of `kind` in a new session, as `POST /chat` runs it; fails unless it completed."""
    answer = await sending.send(services, user, ChatTurnRequest(message=MESSAGES[kind]))
    if answer.status != "completed":
        raise RuntimeError(f"the {kind} turn ended {answer.status}: {answer.error}")
    return answer


class ModelClock:
    """Wraps a services' model client and measures the time model calls were in flight — the
    union of their intervals, so calls that overlap (executors in parallel) count once — so a
    benchmark can subtract it: what is left of a turn is Parley's own time."""

    def __init__(self, services: Services) -> None:
        self.intervals: list[tuple[float, float]] = []
        inner = services.llm
        clock = self

        class Timed:
            async def complete(self, request: Any) -> Any:
                started = time.perf_counter()
                try:
                    return await inner.complete(request)
                finally:
                    clock.intervals.append((started, time.perf_counter()))

            async def stream(self, request: Any) -> Any:
                started = time.perf_counter()
                try:
                    async for event in inner.stream(request):
                        clock.intervals.append((started, time.perf_counter()))
                        yield event
                        started = time.perf_counter()
                finally:
                    clock.intervals.append((started, time.perf_counter()))

            def __getattr__(self, name: str) -> Any:
                return getattr(inner, name)

        services.__dict__["llm"] = Timed()

    def reset(self) -> None:
        self.intervals = []

    @property
    def seconds(self) -> float:
        """How long at least one model call was in flight."""
        total, reach = 0.0, float("-inf")
        for start, end in sorted(self.intervals):
            if end <= reach:
                continue
            total += end - max(start, reach)
            reach = end
        return total
