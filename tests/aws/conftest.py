"""AWS tests: moto as a server on the loopback (fake credentials set before any client is
built), the queues made per test, and the functions' real handlers on the test database and
fake model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest

from local.deepseek import FakeModelServer
from shared.kernel.settings import Settings
from shared.llm.tokens import DeepSeekTokenizer
from shared.services import Services
from tests.functions.conftest import SECRET
from tests.support.cloud import Cloud, Function
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.llm_models import EXECUTOR_MODEL, PLANNER_MODEL, SERVED
from tests.support.moto_server import NOT_INHERITED, environment, moto_server
from tests.support.scripting import Script
from tests.support.stack import SERVICE_KEY


@pytest.fixture(scope="module")
def aws() -> Iterator[str]:
    """moto's server (its endpoint), with fake credentials in the environment first (no real
    account is ever reachable: a client built before them would find the developer's own).
    The functions' sends reach it at the queue URLs it gives; boto3's clients through
    `AWS_ENDPOINT_URL_SQS`."""
    with pytest.MonkeyPatch.context() as env, moto_server() as endpoint:
        for name in NOT_INHERITED:
            env.delenv(name, raising=False)
        for name, value in environment(endpoint).items():
            env.setenv(name, value)
        yield endpoint


@pytest.fixture
def cloud(aws: str) -> Cloud:
    import boto3

    return Cloud(boto3.client("sqs"), prefix=f"parley-{uuid4().hex[:8]}").create_queues()


@pytest.fixture(scope="module")
def fake(tokenizer: DeepSeekTokenizer) -> Iterator[FakeModelServer]:
    with FakeModelServer(models=SERVED, tokenizer=tokenizer) as server:
        yield server


@pytest.fixture
def script(fake: FakeModelServer) -> Script:
    fake.reset()
    return Script(fake)


@pytest.fixture
def events() -> InMemoryPublisher:
    """Every event any function publishes in the test."""
    return InMemoryPublisher()


@pytest.fixture
def settings(
    database_url: str, fake: FakeModelServer, models_file: Path, cloud: Cloud
) -> dict[str, Any]:
    """What each function's settings hold (infra/serverless.yml's environment, for tests)."""
    return {
        "database_url": database_url,
        "supabase_jwt_secret": SECRET,
        "supabase_service_role_key": SERVICE_KEY,
        "llm_base_url": fake.base_url,
        "llm_api_key": "test",
        "llm_planner_model": PLANNER_MODEL,
        "llm_executor_model": EXECUTOR_MODEL,
        "llm_models_file": models_file,
        "llm_max_retries": 0,
        "run_lease_seconds": 30,
        "queue_retry_seconds": 0,
        **cloud.settings(),
    }


@pytest.fixture
def functions(
    settings: dict[str, Any], tokenizer: DeepSeekTokenizer, events: InMemoryPublisher
) -> Iterator[dict[str, Function]]:
    """The three functions, each with services of its own (as three Lambda functions)."""
    started: dict[str, Function] = {}
    try:
        for name in ("chat", "agent_planner", "agent_executor"):
            services = Services(Settings(**settings), tokens=tokenizer, event_sinks=[events])
            started[name] = Function(name, services)
        yield started
    finally:
        for function in started.values():
            function.close()
