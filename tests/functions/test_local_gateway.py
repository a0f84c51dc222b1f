"""The local stack's gateway (`local.stack.gateway`: each function at its own prefix) as a
frontend meets it. CORS: a page on its own dev server (Vite's http://localhost:5173) calls the
functions as it would call their deployed URLs — the same rules as the function URLs' CORS in
infra/serverless.yml (tests/infra/test_serverless.py holds the two together). Links: what a
function names of itself carries its prefix, as a function URL would be whole."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from local.serving import BackgroundServer
from local.stack import gateway
from shared.db import Database
from shared.services import Services, load_settings
from tests.functions.conftest import SECRET, token
from tests.support.factories import make_user

DEV_SERVER = "http://localhost:5173"
PREFLIGHT = {
    "Origin": DEV_SERVER,
    "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "authorization, content-type, prefer",
}


def serve(database_url: str, **settings: str) -> BackgroundServer:
    services = Services(
        load_settings(database_url=database_url, supabase_jwt_secret=SECRET, **settings)
    )
    return BackgroundServer(gateway(services), name="gateway", on_shutdown=services.aclose)


@pytest.fixture(scope="module")
def url(database_url: str) -> Iterator[str]:
    with serve(database_url) as server:
        yield server.url


async def test_a_dev_server_origin_may_call_every_function_by_default(url: str) -> None:
    async with httpx.AsyncClient() as http:
        for path in ("/chat/chat", "/agent_planner/plans/x/approvals/y", "/chat/sessions"):
            allowed = await http.options(f"{url}{path}", headers=PREFLIGHT)
            assert allowed.status_code == 200, (path, allowed.text)
            assert allowed.headers["access-control-allow-origin"] in ("*", DEV_SERVER)
            asked = set(allowed.headers["access-control-allow-headers"].lower().split(", "))
            assert {"authorization", "content-type", "prefer"} <= asked
            assert "access-control-allow-credentials" not in allowed.headers
        answered = await http.get(f"{url}/chat/sessions", headers={"Origin": DEV_SERVER})
    assert answered.status_code == 401  # no token: but the browser may read why
    assert answered.headers["access-control-allow-origin"] in ("*", DEV_SERVER)
    exposed = set(answered.headers["access-control-expose-headers"].split(", "))
    assert {"Location", "Preference-Applied", "X-Parley-Plan-Id"} <= exposed


async def test_the_origins_are_configurable(database_url: str) -> None:
    with serve(database_url, cors_allowed_origins="https://console.example") as server:
        async with httpx.AsyncClient() as http:
            refused = await http.options(f"{server.url}/chat/chat", headers=PREFLIGHT)
            mine = {**PREFLIGHT, "Origin": "https://console.example"}
            allowed = await http.options(f"{server.url}/chat/chat", headers=mine)
    assert "access-control-allow-origin" not in refused.headers
    assert allowed.headers["access-control-allow-origin"] == "https://console.example"


async def test_a_202_names_the_functions_behind_their_prefixes(url: str, db: Database) -> None:
    user = {"Authorization": f"Bearer {token(await make_user(db))}"}
    async with httpx.AsyncClient() as http:
        sent = await http.post(
            f"{url}/chat/chat", json={"message": "Hi", "wait": False}, headers=user
        )
    assert sent.status_code == 202, sent.text
    watch = sent.json()["watch"]
    assert watch["messages"] == f"{url}/chat/sessions/{sent.json()['session_id']}/messages"
