"""Fixtures for tool tests: the built-in registry and an executor over the module's database."""

from __future__ import annotations

import pytest

from shared.db import Database
from shared.tools import ToolExecutor, ToolRegistry, builtin_registry
from tests.support.domain_rows import Crew, make_crew


@pytest.fixture(scope="module")
def registry() -> ToolRegistry:
    return builtin_registry()


@pytest.fixture(scope="module")
def executor(db: Database, registry: ToolRegistry) -> ToolExecutor:
    return ToolExecutor(db, registry, timeout_seconds=10)


@pytest.fixture
async def crew(db: Database) -> Crew:
    """A fresh user with a planner (read_write) and an executor (read_only, all read tools)."""
    return await make_crew(db)
