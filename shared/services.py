"""The composition root: every long-lived client, built once per cold start.

Functions reach their collaborators through `get_services()` (a FastAPI dependency), so tests can
swap the whole set with `app.dependency_overrides[get_services]`. Clients that need
configuration are built on first use, so a function that never verifies tokens or calls a model
starts without those settings.
"""

from __future__ import annotations

from functools import cached_property, lru_cache

from shared.auth import TokenVerifier
from shared.db import Database
from shared.settings import Settings, get_settings


class Services:
    """Settings plus the clients built from them."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @cached_property
    def db(self) -> Database:
        return Database(self.settings.database_url, max_size=self.settings.db_pool_max_size)

    @cached_property
    def verifier(self) -> TokenVerifier:
        secret = self.settings.supabase_jwt_secret
        return TokenVerifier(
            secret=secret.get_secret_value() if secret else None, jwks_url=self.settings.jwks_url
        )

    async def aclose(self) -> None:
        """Release pooled connections (tests and the local stack; Lambdas just freeze)."""
        if "db" in self.__dict__:
            await self.db.close()


def build_services(settings: Settings | None = None) -> Services:
    """Services for `settings` (default: the environment's)."""
    return Services(settings or get_settings())


@lru_cache(maxsize=1)
def get_services() -> Services:
    """The process-wide services."""
    return build_services()
