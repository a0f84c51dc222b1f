"""Configuration: keys, keyless local servers, settings, and the lazy `openai` import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from local.deepseek import FakeModelServer
from shared.kernel.errors import ConfigurationError
from shared.llm import ChatRequest, LLMNotConfigured, OpenAIClient, UserMessage
from shared.services import load_settings
from tests.support import ROOT

LLM_ENV = ("LLM_API_KEY", "DEEPSEEK_API_KEY", "LLM_BASE_URL", "LLM_MODELS_FILE", "LLM_MAX_RETRIES")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in LLM_ENV:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_missing_key_names_the_variables_to_set(clean_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(LLMNotConfigured) as caught:
        OpenAIClient.from_settings(load_settings())

    message = str(caught.value)
    assert isinstance(caught.value, ConfigurationError)
    assert "https://api.deepseek.com" in message
    for variable in ("DEEPSEEK_API_KEY", "LLM_API_KEY", "LLM_BASE_URL"):
        assert variable in message


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost:11434/v1",
        "http://127.0.0.1:8000/v1",
        "http://[::1]:1/v1",
        "http://10.0.0.7:8000/v1",
        "http://ollama.internal:11434/v1",
    ],
)
def test_local_and_private_servers_need_no_key(url: str) -> None:
    assert OpenAIClient(base_url=url, api_key=None).base_url == url


@pytest.mark.parametrize("url", ["https://api.openai.com/v1", "https://8.8.8.8/v1"])
def test_public_servers_need_a_key(url: str) -> None:
    with pytest.raises(LLMNotConfigured, match="No API key"):
        OpenAIClient(base_url=url, api_key=None)


async def test_settings_configure_the_client(
    clean_env: pytest.MonkeyPatch, fake: FakeModelServer, tmp_path: Path
) -> None:
    models = tmp_path / "models.toml"
    models.write_text('[[model]]\nmatch = "house-.*"\nfamily = "house"\n')
    clean_env.setenv("DEEPSEEK_API_KEY", "sk-from-env")
    clean_env.setenv("LLM_BASE_URL", fake.base_url + "/")
    clean_env.setenv("LLM_MAX_RETRIES", "1")
    clean_env.setenv("LLM_MODELS_FILE", str(models))

    client = OpenAIClient.from_settings(load_settings())
    done = await client.complete(ChatRequest("house-model", [UserMessage("hi")]))
    await client.aclose()

    assert client.retry.max_retries == 1 and client.base_url == fake.base_url
    assert client.registry.lookup("house-model").family == "house"
    assert "offline demo model" in done.text
    assert fake.requests[0].headers["authorization"] == "[redacted]"


def test_importing_shared_llm_does_not_import_openai() -> None:
    code = (
        "import sys, shared.llm, shared.llm.openai_client, local.deepseek; "
        "print('openai' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"
