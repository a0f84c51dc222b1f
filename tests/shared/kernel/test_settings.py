"""Settings: defaults, env var names, and validation errors that say how to fix them."""

from __future__ import annotations

import pytest

from shared.kernel.errors import ConfigurationError
from shared.services import load_settings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "DATABASE_URL",
        "LLM_API_KEY",
        "DEEPSEEK_API_KEY",
        "SUPABASE_URL",
        "SUPABASE_JWT_SECRET",
        "SUPABASE_JWKS_URL",
        "LLM_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)


def test_defaults_need_no_environment() -> None:
    settings = load_settings()
    assert settings.database_url is None
    assert settings.llm_base_url == "https://api.deepseek.com"
    assert settings.jwks_url is None


def test_with_only_a_deepseek_key_the_current_deepseek_models_are_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")

    settings = load_settings()

    assert (settings.llm_planner_model, settings.llm_executor_model) == (
        "deepseek-v4-pro",
        "deepseek-flash",
    )
    assert (settings.llm_planner_thinking, settings.llm_executor_thinking) == ("auto", "disabled")


@pytest.mark.parametrize(
    ("name", "model", "replacement"),
    [
        ("LLM_PLANNER_MODEL", "deepseek-chat", "deepseek-v4-pro"),
        ("LLM_PLANNER_MODEL", "deepseek-reasoner", "deepseek-flash"),
        ("LLM_EXECUTOR_MODEL", "deepseek-coder", "deepseek-flash"),
        ("LLM_EXECUTOR_MODEL", "deepseek/deepseek-chat", "deepseek-flash"),
    ],
)
def test_a_retired_model_fails_at_start_naming_the_variable_and_replacement(
    monkeypatch: pytest.MonkeyPatch, name: str, model: str, replacement: str
) -> None:
    monkeypatch.setenv(name, model)

    with pytest.raises(ConfigurationError) as caught:
        load_settings()

    message = str(caught.value)
    assert f"{name}={model}" in message and "retired on 2026-07-24" in message
    assert replacement in message and "Value error" not in message


@pytest.mark.parametrize("url", ["https://api.deepseek.com/v1", "https://API.DeepSeek.com/"])
def test_a_retired_model_is_refused_on_any_url_of_deepseeks_api(
    monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    monkeypatch.setenv("LLM_BASE_URL", url)
    monkeypatch.setenv("LLM_PLANNER_MODEL", "deepseek-chat")

    with pytest.raises(ConfigurationError, match="LLM_PLANNER_MODEL=deepseek-chat"):
        load_settings()


@pytest.mark.parametrize(
    ("url", "model"),
    [
        ("https://openrouter.ai/api/v1", "deepseek/deepseek-chat"),
        ("http://localhost:11434/v1", "deepseek-reasoner"),
        ("https://proxy.example.com/deepseek", "deepseek-chat"),
    ],
)
def test_a_name_deepseek_retired_is_left_to_another_endpoint_that_may_serve_it(
    monkeypatch: pytest.MonkeyPatch, url: str, model: str
) -> None:
    monkeypatch.setenv("LLM_BASE_URL", url)
    monkeypatch.setenv("LLM_PLANNER_MODEL", model)
    monkeypatch.setenv("LLM_EXECUTOR_MODEL", model)

    settings = load_settings()

    assert (settings.llm_planner_model, settings.llm_executor_model) == (model, model)


def test_thinking_is_one_of_three_modes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_EXECUTOR_THINKING", "maybe")

    with pytest.raises(ConfigurationError, match="LLM_EXECUTOR_THINKING"):
        load_settings()


def test_env_vars_map_to_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://u:p@db.example.com:6543/postgres")
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
    monkeypatch.setenv("SUPABASE_URL", "https://abcd.supabase.co/")
    settings = load_settings()
    assert settings.database_url == "postgresql://u:p@db.example.com:6543/postgres"
    assert settings.llm_api_key is not None and settings.llm_api_key.get_secret_value() == "sk-test"
    assert settings.jwks_url == "https://abcd.supabase.co/auth/v1/.well-known/jwks.json"
    assert "sk-test" not in repr(settings)


@pytest.mark.parametrize(
    ("name", "value", "hint"),
    [
        ("DATABASE_URL", "mysql://x", "postgresql://user:password@host"),
        ("SUPABASE_URL", "abcd.supabase.co", "must start with http"),
        ("SUPABASE_JWT_SECRET", "short", "Project settings"),
        ("DB_POOL_MAX_SIZE", "0", "DB_POOL_MAX_SIZE"),
    ],
)
def test_invalid_values_say_how_to_fix(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, hint: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigurationError, match=name) as caught:
        load_settings()
    assert hint in str(caught.value)
