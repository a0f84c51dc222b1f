"""How the Auth twin is set up: one frozen value; the defaults are hosted Supabase Auth's."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

from local.auth.keys import ApiKeys, Signing


@dataclass(frozen=True, slots=True)
class AuthConfig:
    database_url: str
    """The project's database: users land in its `auth.users`."""
    jwt_secret: str
    """The legacy JWT secret: the legacy API keys are signed with it (and sessions when
    `signing` is HS256)."""
    keys: ApiKeys
    """The project's API keys, opaque and legacy."""
    signing: Signing = "ES256"
    """How sessions are signed: ES256 (new projects, published as a JWKS) or HS256."""
    signing_key_path: Path | None = None
    """Where the ES256 key is kept (made on first use); None: a new key in memory."""
    jwt_exp: int = 3600
    """Seconds an access token lives (GoTrue's `JWT_EXP` default)."""
    refresh_token_reuse_interval: int = 10
    """Seconds a revoked refresh token may still be swapped (hosted's and `supabase start`'s
    default is 10; GoTrue's own 0)."""
    refresh_token_rotation: bool = True
    """Reuse outside that interval revokes the whole session's tokens (GoTrue's default)."""
    password_min_length: int = 6
    """GoTrue's `defaultMinPasswordLength`; hosted projects may raise it."""
    signups: bool = True
    """False: `/signup` answers `signup_disabled` (Authentication → Sign In / Providers)."""
    on_signup: Callable[[UUID], Awaitable[None]] | None = None
    """The local stack's own step after a sign-up (given the new user's id, once the user is
    stored): `dev.py run` seeds the demo data, so a new account's first demo turn has a calendar
    to act on. Not Supabase Auth's: a hosted project does this in its own sign-up flow."""
