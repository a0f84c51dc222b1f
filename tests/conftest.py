"""Shared fixtures: a real Postgres per test module, and the database handle tests use."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from shared.db import Database
from shared.llm.tokens import DeepSeekTokenizer
from tests.support import databases
from tests.support.llm_models import MODELS


@pytest.fixture(scope="session")
def server_url() -> str:
    url = databases.server_url()
    databases.drop_stale(url)
    return url


@pytest.fixture(scope="session")
def template_name(server_url: str) -> str:
    return databases.ensure_template(server_url)


@pytest.fixture(scope="module")
def database_url(server_url: str, template_name: str) -> Iterator[str]:
    """A migrated database of this test module's own."""
    url = databases.create_database(server_url, template=template_name)
    yield url
    databases.drop_checked(server_url, url)


@pytest.fixture(scope="module")
async def db(database_url: str) -> AsyncIterator[Database]:
    async with Database(database_url, max_size=4) as database:
        yield database


@pytest.fixture(scope="session")
def models_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model registry with the test models' prices and context windows."""
    path = tmp_path_factory.mktemp("models") / "models.toml"
    path.write_text(MODELS)
    return path


@pytest.fixture(scope="session")
def tokenizer() -> DeepSeekTokenizer:
    """One tokenizer for the session: loading it takes about half a second."""
    return DeepSeekTokenizer()
