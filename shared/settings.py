"""One typed settings object, read from the environment (field names are the env var names)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from shared.errors import ConfigurationError

#: The JWT secret of `supabase start` (public, documented by Supabase); local stack only.
LOCAL_JWT_SECRET = "super-secret-jwt-token-with-at-least-32-characters-long"


class Settings(BaseSettings):
    """Parley's configuration. Every field is documented in the README's configuration table."""

    model_config = SettingsConfigDict(extra="ignore", frozen=True, case_sensitive=False)

    database_url: str | None = None
    """Postgres URL. Unset: an embedded Postgres under `parley_data_dir` is started and used."""
    parley_data_dir: Path = Path(".parley")
    """Where local state lives (the embedded database cluster)."""
    db_pool_max_size: int = Field(default=2, ge=1, le=50)
    """Connections per process; keep it at 1–2 per Lambda behind Supavisor."""

    supabase_url: str | None = None
    """Project URL, e.g. https://abcd.supabase.co (Realtime broadcasts go to it)."""
    supabase_anon_key: SecretStr | None = None
    """The project's anon (publishable) key."""
    supabase_service_role_key: SecretStr | None = None
    """The service-role key: authorises Realtime broadcasts. Never sent to a client."""
    supabase_jwt_secret: SecretStr | None = None
    """HS256 secret user JWTs are signed with (Project settings → API → JWT secret)."""
    supabase_jwks_url: str | None = None
    """JWKS of asymmetric signing keys; default `{SUPABASE_URL}/auth/v1/.well-known/jwks.json`."""

    llm_base_url: str = "https://api.deepseek.com"
    """Any OpenAI-compatible endpoint: DeepSeek (default), OpenAI, Ollama, vLLM, OpenRouter."""
    llm_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("LLM_API_KEY", "DEEPSEEK_API_KEY")
    )
    """API key for `llm_base_url`; `DEEPSEEK_API_KEY` is accepted too."""
    llm_planner_model: str = "deepseek-chat"
    """Model of the planner (the stronger tier)."""
    llm_executor_model: str = "deepseek-chat"
    """Model of the executors (the cheap, fast tier)."""
    llm_timeout_seconds: float = Field(default=60.0, gt=0)
    """Per-call timeout of an LLM request."""
    llm_max_retries: int = Field(default=3, ge=0, le=10)
    """Retries on 429/5xx/connection errors/timeouts, with backoff and jitter."""

    realtime_host: str = "127.0.0.1"
    """Interface the local Realtime server listens on (`python -m local.realtime`)."""
    realtime_port: int = Field(default=4000, ge=0, le=65535)
    """Port of the local Realtime server (4000, like Supabase Realtime); 0 picks a free one."""
    realtime_connect_error_delay_ms: int = Field(default=2000, ge=0)
    """Local Realtime: delay before refusing a websocket upgrade (Supabase waits 2 s)."""
    realtime_join_error_delay_ms: int = Field(default=5000, ge=0)
    """Local Realtime: delay before a channel join error reply (Supabase waits 5 s)."""
    realtime_change_retention_seconds: int = Field(default=300, ge=1)
    """Local Realtime: how long captured row changes stay in `parley_realtime.changes`."""

    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    """Python logging level."""

    @field_validator("database_url")
    @classmethod
    def _postgres_url(cls, value: str | None) -> str | None:
        if value in (None, ""):
            return None
        if not value.startswith(("postgresql://", "postgres://")):
            raise ValueError(
                "must be a libpq URL such as postgresql://user:password@host:5432/postgres "
                "(unset it to use the embedded Postgres)"
            )
        return value

    @property
    def jwks_url(self) -> str | None:
        """Where asymmetric JWT signing keys are published, if anywhere."""
        if self.supabase_jwks_url:
            return self.supabase_jwks_url
        return f"{self.supabase_url}/auth/v1/.well-known/jwks.json" if self.supabase_url else None

    @field_validator("supabase_url", "supabase_jwks_url", "llm_base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value in (None, ""):
            return None
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://, e.g. https://abcd.supabase.co")
        return value.rstrip("/")

    @field_validator("supabase_jwt_secret")
    @classmethod
    def _long_secret(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < 32:
            raise ValueError(
                "must be at least 32 characters; copy it from Project settings → API → JWT secret"
            )
        return value


def load_settings(**overrides: object) -> Settings:
    """Read settings from the environment, turning validation errors into one clear message."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']).upper() or 'settings'}: {err['msg']}"
            for err in exc.errors()
        )
        raise ConfigurationError(f"Invalid configuration — {problems}") from exc


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once per cold start."""
    return load_settings()
