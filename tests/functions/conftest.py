"""Functions under test: each app served over real HTTP on localhost, wired to the test database."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING
from uuid import UUID

import httpx
import pytest
from fastapi import FastAPI

from local.auth.keys import mint_token
from local.deepseek import FakeModelServer
from local.serving import BackgroundServer
from shared.llm.tokens import DeepSeekTokenizer
from shared.services import Services, get_services, load_settings
from tests.support.llm_models import SERVED
from tests.support.scripting import Script

if TYPE_CHECKING:
    from tests.support.stack import Stack

SECRET = "functions-test-secret-at-least-32-characters"


@pytest.fixture(scope="module")
def services(database_url: str) -> Services:
    return Services(load_settings(database_url=database_url, supabase_jwt_secret=SECRET))


def serve(app: FastAPI, services: Services) -> BackgroundServer:
    """`app` on a free port, using `services` (closed on the server's own loop at the end)."""
    app.dependency_overrides[get_services] = lambda: services
    return BackgroundServer(app, name=app.title, on_shutdown=services.aclose)


def token(user_id: UUID | None = None, *, role: str = "authenticated", **claims: object) -> str:
    return mint_token(SECRET, role=role, sub=user_id, extra=claims)


@pytest.fixture(scope="module")
def fake(tokenizer: DeepSeekTokenizer) -> Iterator[FakeModelServer]:
    """The fake model for this module's functions (modules that run turns)."""
    with FakeModelServer(models=SERVED, tokenizer=tokenizer) as server:
        yield server


@pytest.fixture
def script(fake: FakeModelServer) -> Script:
    """A fresh script per test: replies by agent kind and turn (see tests/agents/scripting)."""
    fake.reset()
    return Script(fake)


@pytest.fixture
def as_user() -> Callable[[UUID], dict[str, str]]:
    return lambda user_id: {"Authorization": f"Bearer {token(user_id)}"}


@pytest.fixture(scope="module")
def stack(
    database_url: str, fake: FakeModelServer, models_file: Path, tokenizer: DeepSeekTokenizer
) -> Iterator[Stack]:
    """The three functions behind one gateway, on the module's database and the fake model (a
    module that needs other settings defines its own)."""
    from tests.support.stack import Stack  # it reads SECRET from here

    running = Stack(
        database_url=database_url, fake=fake, models_file=models_file, tokenizer=tokenizer
    ).start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10) as client:
        yield client
