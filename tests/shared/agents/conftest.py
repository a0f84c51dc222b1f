"""Agent tests: the real database, the fake model server over HTTP, services wired to both."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from local.deepseek import FakeModelServer
from shared.db import Database
from shared.llm.tokens import DeepSeekTokenizer
from shared.services import Services
from tests.support import databases
from tests.support.agent_services import MakeServices, services_on
from tests.support.llm_models import SERVED
from tests.support.scripting import Script


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
    async with services_on(db, database_url, fake, models_file, tokenizer) as make:
        yield make


@pytest.fixture
def services(make_services: MakeServices) -> Services:
    return make_services()
