"""Settings: defaults, env var names, and validation errors that say how to fix them."""

from __future__ import annotations

import pytest

from shared.errors import ConfigurationError
from shared.settings import load_settings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DATABASE_URL", "LLM_API_KEY", "DEEPSEEK_API_KEY", "SUPABASE_URL",
                 "SUPABASE_JWT_SECRET", "SUPABASE_JWKS_URL", "LLM_BASE_URL"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)


def test_defaults_need_no_environment() -> None:
    settings = load_settings()
    assert settings.database_url is None
    assert settings.llm_base_url == "https://api.deepseek.com"
    assert settings.llm_planner_model == "deepseek-chat"
    assert settings.jwks_url is None


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
