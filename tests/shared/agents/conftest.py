"""Agent tests: the real database, the fake model server over HTTP, services wired to both."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from local.deepseek import FakeModelServer
from shared.agents import ApprovalGate
from shared.db import Database
from shared.kernel.settings import Settings
from shared.llm import OpenAIClient, RetryPolicy, load_registry
from shared.llm.tokens import DeepSeekTokenizer
from shared.services import Services
from tests.support import databases
from tests.support.llm_models import EXECUTOR_MODEL, PLANNER_MODEL, SERVED
from tests.support.scripting import Script

MakeServices = Callable[..., Services]


@pytest.fixture(scope="package")
def database_url(server_url: str, template_name: str) -> Iterator[str]:
    """One migrated database for the agent tests (each test works as its own user); a module
    that needs a database to itself overrides this."""
    url = databases.create_database(server_url, template=template_name)
    yield url
    databases.drop_checked(server_url, url)


@pytest.fixture(scope="package")
async def db(database_url: str) -> AsyncIterator[Database]:
    async with Database(database_url, max_size=4) as database:
        yield database


@pytest.fixture(scope="package")
def fake(tokenizer: DeepSeekTokenizer) -> Iterator[FakeModelServer]:
    with FakeModelServer(models=SERVED, tokenizer=tokenizer) as server:
        yield server


@pytest.fixture(autouse=True)
def _fresh_fake(fake: FakeModelServer) -> None:
    fake.reset()


@pytest.fixture
def script(fake: FakeModelServer) -> Script:
    return Script(fake)


@pytest.fixture
async def make_services(
    db: Database,
    fake: FakeModelServer,
    models_file: Path,
    tokenizer: DeepSeekTokenizer,
    database_url: str,
) -> AsyncIterator[MakeServices]:
    """`make_services(gate=None, **settings)`: services on the test database and the fake
    model (a client that never retries, so scripted failures show at once)."""
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

    yield make
    for client in clients:
        await client.aclose()


@pytest.fixture
def services(make_services: MakeServices) -> Services:
    return make_services()
