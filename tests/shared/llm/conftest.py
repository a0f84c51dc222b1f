"""One fake model server per test module, reset before each test; clients that never sleep."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from local.deepseek import DEEPSEEK, PLAIN, FakeModelServer
from shared.llm import ModelRegistry, OpenAIClient, RetryPolicy, load_registry
from shared.llm.tokens import DeepSeekTokenizer

TEST_MODELS = """
[[model]]
match = "test-model.*"
family = "test"
context_window = 32000
price = { cache_hit = "0.1", cache_miss = "1", output = "2" }

[[model]]
match = "test-thinker.*"
family = "test"
thinking = true
price = { cache_hit = "0.5", cache_miss = "4", output = "16" }
"""


class RecordedSleeps:
    """The client's sleep seam: records each backoff instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


SERVED = {"test-model": PLAIN, "test-thinker": DEEPSEEK, "house-model": PLAIN, "mystery-1": PLAIN}
"""The test names served: `test-thinker` behaves as DeepSeek V4 (thinks by default), the others
as an OpenAI-compatible model with no thinking mode (as the registry above says)."""


@pytest.fixture(scope="module")
def fake(tokenizer: DeepSeekTokenizer) -> Iterator[FakeModelServer]:
    with FakeModelServer(models=SERVED, tokenizer=tokenizer) as server:
        yield server


@pytest.fixture(autouse=True)
def _fresh_script(fake: FakeModelServer) -> None:
    fake.reset()


@pytest.fixture(scope="session")
def models_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("llm") / "models.toml"
    path.write_text(TEST_MODELS)
    return path


@pytest.fixture
def sleeps() -> RecordedSleeps:
    return RecordedSleeps()


MakeClient = Callable[..., OpenAIClient]


@pytest.fixture
async def make_client(
    fake: FakeModelServer, models_file: Path, sleeps: RecordedSleeps
) -> AsyncIterator[MakeClient]:
    """`make_client(max_retries=..., timeout=..., now=...)`: a client of the fake server."""
    clients: list[OpenAIClient] = []

    def make(
        *,
        max_retries: int = 3,
        timeout: float = 10.0,
        registry: ModelRegistry | None = None,
        **options: object,
    ) -> OpenAIClient:
        retry = RetryPolicy(max_retries=max_retries, base_delay=0.5, max_delay=30.0)
        client = OpenAIClient(
            base_url=fake.base_url,
            api_key="sk-test-secret",
            timeout=timeout,
            retry=retry,
            registry=registry or load_registry(models_file),
            sleep=sleeps,
            **options,  # type: ignore[arg-type]
        )
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.aclose()
