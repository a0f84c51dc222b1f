"""The Auth twin served as the local stack serves it: at `/auth/v1` of the Realtime server."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from starlette.routing import Mount

from local.auth import ApiKeys, Auth, AuthConfig, create_app
from local.realtime import RealtimeServer
from shared.kernel.settings import LOCAL_JWT_SECRET
from tests.support.realtime_clients import config

JWKS_PATH = "/auth/v1/.well-known/jwks.json"


@dataclass
class Project:
    """A local project: its URL, keys, Auth twin and Realtime server."""

    url: str
    keys: ApiKeys
    auth: Auth
    realtime: RealtimeServer

    @property
    def jwks_url(self) -> str:
        return self.url + JWKS_PATH

    async def call(
        self,
        method: str,
        path: str,
        *,
        key: str | None = None,
        token: str | None = None,
        version: str | None = "2024-01-01",
        **kwargs: Any,
    ) -> httpx.Response:
        """A request to `/auth/v1{path}` as supabase-js sends it (apikey, API version);
        `key=""`: no apikey at all."""
        apikey = self.keys.publishable if key is None else key
        headers: dict[str, str] = {"apikey": apikey} if apikey else {}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if version:
            headers["X-Supabase-Api-Version"] = version
        async with httpx.AsyncClient() as http:
            return await http.request(
                method, f"{self.url}/auth/v1{path}", headers=headers, **kwargs
            )

    async def sign_up(self, email: str, password: str = "a-good-password") -> dict[str, Any]:
        response = await self.call("POST", "/signup", json={"email": email, "password": password})
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body


@contextlib.asynccontextmanager
async def serve_project(database_url: str, **auth_options: Any) -> AsyncIterator[Project]:
    """Auth (with `auth_options` for its config) and Realtime on one URL, as `local.stack`."""
    keys = ApiKeys.derive(LOCAL_JWT_SECRET)
    auth = Auth(AuthConfig(database_url, jwt_secret=LOCAL_JWT_SECRET, keys=keys, **auth_options))
    await auth.start()
    try:
        realtime = RealtimeServer(
            config(database_url, jwks_url=JWKS_PATH, api_keys=keys.opaque()),
            routes=[Mount("/auth/v1", app=create_app(auth))],
        )
        async with realtime:
            auth.issuer = f"{realtime.url}/auth/v1"
            yield Project(realtime.url, keys, auth, realtime)
    finally:
        await auth.stop()


@pytest.fixture(scope="module")
async def project(database_url: str) -> AsyncIterator[Project]:
    """A project with a refresh-token reuse interval of 0 s, so reuse is refused at once."""
    async with serve_project(database_url, refresh_token_reuse_interval=0) as served:
        yield served
