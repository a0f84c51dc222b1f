"""Services for agent tests: a test database and the fake model, settings overridable per call."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from local.deepseek import FakeModelServer
from shared.agents import ApprovalGate
from shared.db import Database
from shared.kernel.settings import Settings
from shared.llm import OpenAIClient, RetryPolicy, load_registry
from shared.llm.tokens import DeepSeekTokenizer
from shared.services import Services
from tests.support.llm_models import EXECUTOR_MODEL, PLANNER_MODEL

MakeServices = Callable[..., Services]


@asynccontextmanager
async def services_on(
    db: Database,
    database_url: str,
    fake: FakeModelServer,
    models_file: Path,
    tokenizer: DeepSeekTokenizer,
) -> AsyncIterator[MakeServices]:
    """`make(gate=None, **settings)`: services on `db` and the fake model (a client that never
    retries, so scripted failures show at once); every client made is closed on exit."""
    clients: list[OpenAIClient] = []

    def make(gate: ApprovalGate | None = None, **overrides: Any) -> Services:
        values: dict[str, Any] = {
            "database_url": database_url,
            "llm_base_url": fake.base_url,
            "llm_planner_model": PLANNER_MODEL,
            "llm_executor_model": EXECUTOR_MODEL,
            "llm_models_file": models_file,
            "llm_max_retries": 0,
        }
        settings = Settings(**{**values, **overrides})
        client = OpenAIClient(
            base_url=fake.base_url,
            api_key="test",
            timeout=10.0,
            retry=RetryPolicy(max_retries=0),
            registry=load_registry(models_file),
        )
        clients.append(client)
        return Services(settings, db=db, llm=client, tokens=tokenizer, approvals=gate)

    try:
        yield make
    finally:
        for client in clients:
            await client.aclose()
