"""How the local Realtime server is set up: one frozen value, built from `Settings` or by hand."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from local.realtime.plans import PLANS, Plan
from shared.kernel.errors import ConfigurationError
from shared.kernel.settings import LOCAL_JWT_SECRET, Settings

_FREE = PLANS["free"]


@dataclass(frozen=True, slots=True)
class RealtimeConfig:
    """Everything the server needs; the defaults are the hosted server's."""

    database_url: str
    """Postgres the server captures changes from and checks RLS against."""
    jwt_secret: str | None = LOCAL_JWT_SECRET
    """HS256 secret API keys and user tokens are signed with."""
    jwks_url: str | None = None
    """JWKS for asymmetrically signed tokens (either this or `jwt_secret`, or both)."""
    api_keys: Mapping[str, str] = field(default_factory=dict)
    """Opaque keys (`sb_publishable_…`, `sb_secret_…`) accepted as apikey, mapped to a role."""
    host: str = "127.0.0.1"
    port: int = 4000
    connect_error_delay: float = 2.0
    """Seconds before a refused websocket upgrade is answered (hosted: 2 s)."""
    join_error_delay: float = 5.0
    """Seconds before a join error reply (hosted: 5 s)."""
    publication: str = "supabase_realtime"
    change_retention: float = 300.0
    """Seconds a captured change stays in the change log."""
    prune_interval: float = 60.0
    publication_poll_interval: float = 10.0
    """How often the capture triggers are re-synced with the publication's tables."""
    max_record_bytes: int = 1024 * 1024
    """Changes larger than this arrive with `Error 413` and only their small fields."""
    max_payload_bytes: int = _FREE.max_payload_bytes
    """Largest broadcast or presence payload (hosted Free plan: 256 kB, plus 500 bytes)."""
    max_frame_bytes: int = 5 * 1024 * 1024
    idle_timeout: float = 60.0
    """A socket that sends nothing (not even heartbeats) for this long is closed."""
    token_check_interval: float = 300.0
    """Channel tokens are re-checked this often (and when they expire)."""

    # Limits, in the hosted server's words; the defaults are the Free plan's (`plans.PLANS`).
    max_concurrent_users: int = _FREE.max_concurrent_users
    """Sockets with a joined channel at once; beyond: `ConnectionRateLimitReached`."""
    max_events_per_second: int = _FREE.max_events_per_second
    """Broadcasts per second (sent, and delivered to each channel), averaged like hosted."""
    max_joins_per_second: int = _FREE.max_joins_per_second
    """Channel joins per second; beyond: `ClientJoinRateLimitReached` and a disconnect."""
    max_channels_per_client: int = _FREE.max_channels_per_client
    """Channels one socket may have joined; beyond: `ChannelRateLimitReached`."""
    max_presence_events_per_second: int = _FREE.max_presence_events_per_second
    """Presence tracks and deliveries per second (hosted Free plan: 20)."""
    client_presence_max_calls: int = 5
    client_presence_window: float = 30.0
    """A channel may make `client_presence_max_calls` presence calls per this many seconds."""
    rate_tick: float = 5.0
    """Rates are measured every this many seconds, averaged over the last 12 (hosted: 5 s)."""
    tick_rates: bool = True
    """False: rates are measured only when `limits.tick()` is called (tests that drive time)."""

    message_retention_hours: int = 72
    """Daily `realtime.messages` partitions older than this are dropped (hosted: 72 h)."""
    janitor_interval: float = 4 * 3600.0
    """How often partitions are created ahead and old ones dropped (hosted: every 4 h)."""

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> RealtimeConfig:
        """The configuration `python -m local.realtime` uses, from environment settings."""
        if not settings.database_url and "database_url" not in overrides:
            raise ConfigurationError(
                "The local Realtime server needs a database: set DATABASE_URL "
                "or pass --database-url postgresql://…"
            )
        secret = settings.supabase_jwt_secret
        plan = replace(
            PLANS[settings.realtime_plan],
            **{
                plan_field.name: value
                for plan_field in fields(Plan)
                if (value := getattr(settings, f"realtime_{plan_field.name}")) is not None
            },
        )
        config = cls(
            database_url=settings.database_url or "",
            jwt_secret=secret.get_secret_value() if secret else LOCAL_JWT_SECRET,
            jwks_url=settings.supabase_jwks_url,
            api_keys=_opaque_keys(settings),
            host=settings.realtime_host,
            port=settings.realtime_port,
            connect_error_delay=settings.realtime_connect_error_delay_ms / 1000,
            join_error_delay=settings.realtime_join_error_delay_ms / 1000,
            change_retention=float(settings.realtime_change_retention_seconds),
            message_retention_hours=settings.realtime_message_retention_hours,
            client_presence_max_calls=settings.realtime_client_presence_max_calls,
            client_presence_window=settings.realtime_client_presence_window_ms / 1000,
        )
        return replace(config, **{**plan.config(), **overrides})


def _opaque_keys(settings: Settings) -> dict[str, str]:
    # The hosted gateway swaps new-style keys for JWTs before Realtime sees them; locally the
    # server does that itself, for the keys this project is configured with.
    keys: dict[str, str] = {}
    for secret, role in (
        (settings.supabase_anon_key, "anon"),
        (settings.supabase_service_role_key, "service_role"),
    ):
        if secret and secret.get_secret_value().startswith("sb_"):
            keys[secret.get_secret_value()] = role
    return keys
