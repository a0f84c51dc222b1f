"""The three functions served over HTTP, wired to the test database and the fake model; every
event they publish is held against the events' schema when the stack stops."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from starlette.types import Receive, Scope, Send

from functions.agent_executor.app import create_app as executor_app
from functions.agent_planner.app import create_app as planner_app
from functions.chat.app import create_app as chat_app
from local.deepseek import FakeModelServer
from local.serving import BackgroundServer
from shared.events import Event, Publisher
from shared.kernel.settings import Settings
from shared.llm.tokens import DeepSeekTokenizer
from shared.services import Services, get_services
from tests.functions.conftest import SECRET
from tests.support.event_check import assert_valid
from tests.support.llm_models import EXECUTOR_MODEL, PLANNER_MODEL

SERVICE_KEY = "sb_secret_functions-test-service-key"
Fault = Callable[[Scope], bool]


class FaultInjector:
    """ASGI middleware: answers 503 to requests `fault(scope)` picks, passes the rest on."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app
        self.fault: Fault | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.fault is not None and self.fault(scope):
            await send({"type": "http.response.start", "status": 503, "headers": []})
            await send({"type": "http.response.body", "body": b"injected fault"})
            return
        await self.app(scope, receive, send)


class Heard:
    """Every event the stack's functions publish — each server publishes from its own thread
    and loop, so a thread-safe list, and waits that block a worker thread, not the loop."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._changed = threading.Condition()

    async def publish(self, events: Sequence[Event]) -> None:
        with self._changed:
            self.events.extend(events)
            self._changed.notify_all()

    async def aclose(self) -> None:
        return None

    async def wait_for(self, predicate: Callable[[list[Event]], bool]) -> None:
        """Until `predicate(events)` holds (an AssertionError after 15 seconds)."""

        def wait() -> bool:
            with self._changed:
                return self._changed.wait_for(lambda: predicate(self.events), timeout=15)

        assert await asyncio.to_thread(wait), "the awaited events never came"


class Stack:
    """chat → planner → executor, in process (`in_process`) or over HTTP (`http`)."""

    def __init__(
        self,
        *,
        database_url: str,
        fake: FakeModelServer,
        models_file: Path,
        tokenizer: DeepSeekTokenizer,
        transport: str = "in_process",
        sinks: Sequence[Publisher] = (),
        **settings: Any,
    ) -> None:
        self._base = {
            "database_url": database_url,
            "supabase_jwt_secret": SECRET,
            "supabase_service_role_key": SERVICE_KEY,
            "llm_base_url": fake.base_url,
            "llm_api_key": "test",
            "llm_planner_model": PLANNER_MODEL,
            "llm_executor_model": EXECUTOR_MODEL,
            "llm_models_file": models_file,
            "llm_max_retries": 0,
            "invoker_transport": transport,
            "invoker_attempts": 1,
            "invoker_retry_delay_seconds": 0,
            **settings,
        }
        self.heard = Heard()
        """Every event the stack's functions published (token batches too): held against
        the events' schema when the stack stops."""
        self._tokenizer, self._sinks = tokenizer, [*sinks, self.heard]
        self.services: dict[str, Services] = {}
        self.servers: dict[str, BackgroundServer] = {}
        self.executor_faults = FaultInjector(executor_app())

    def start(self) -> Stack:
        self._serve("agent_executor", self.executor_faults)
        self._serve(
            "agent_planner", planner_app(), executor_function_url=self.url("agent_executor")
        )
        self._serve("chat", chat_app(), planner_function_url=self.url("agent_planner"))
        return self

    def stop(self) -> None:
        for server in reversed(list(self.servers.values())):
            server.stop()
        assert_valid(event.wire() for event in self.heard.events)

    def url(self, function: str) -> str:
        return self.servers[function].url

    def _serve(self, name: str, app: Any, **settings: Any) -> None:
        services = Services(
            Settings(**{**self._base, **settings}), tokens=self._tokenizer, event_sinks=self._sinks
        )
        self.services[name] = services
        fastapi_app = app.app if isinstance(app, FaultInjector) else app
        fastapi_app.dependency_overrides[get_services] = lambda: services
        server = BackgroundServer(app, name=name, on_shutdown=services.aclose)
        self.servers[name] = server.start()
