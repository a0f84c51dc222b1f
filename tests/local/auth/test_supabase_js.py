"""supabase-js (Node 20) signs up, in, refreshes and out against the local stack; the session
it gets is what Parley's functions and the private Realtime channel accept (through the JWKS)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import jwt
import pytest

from local.stack import RunningStack, running_stack
from shared.db import Database
from shared.services import load_settings
from tests.support.realtime_node import TIMEOUT, node_project

SCRIPT = Path(__file__).with_name("js") / "auth_flow.mjs"


@pytest.fixture(scope="module")
async def stack(database_url: str) -> AsyncIterator[RunningStack]:
    with pytest.MonkeyPatch.context() as env:
        for name in ("DEEPSEEK_API_KEY", "LLM_API_KEY", "LLM_BASE_URL", "AUTH_SIGNING_ALGORITHM"):
            env.delenv(name, raising=False)
        settings = load_settings(database_url=database_url)
    async with running_stack(
        settings, database_url, port=0, realtime_port=0, refresh_token_reuse_interval=0
    ) as running:
        yield running


async def run_flow(stack: RunningStack, email: str, password: str) -> dict[str, Any]:
    project = node_project(SCRIPT)
    settings = {
        "url": stack.supabase_url,
        "key": stack.anon_key,
        "functions": stack.url,
        "email": email,
        "password": password,
    }
    process = await asyncio.create_subprocess_exec(
        "node",
        str(project / SCRIPT.name),
        json.dumps(settings),
        cwd=project,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), TIMEOUT * 3)
    assert process.returncode == 0, err.decode()
    result: dict[str, Any] = json.loads(out)
    return result


async def test_supabase_js_signs_up_in_refreshes_and_out(stack: RunningStack, db: Database) -> None:
    email = f"js-{uuid4().hex[:8]}@example.com"
    seen = await run_flow(stack, email, "a-good-password")

    assert seen["signUp"]["error"] is None and seen["signUp"]["hasSession"]
    user_id = seen["signUp"]["user"]["id"]
    assert seen["signUp"]["user"]["email"] == email
    assert seen["signIn"] == {"error": None, "userId": user_id}
    assert seen["refresh"] == {"error": None, "rotated": True}
    assert jwt.get_unverified_header(seen["secondToken"])["alg"] == "ES256"

    # The session is Parley's user: the chat function stored a session as that user, and
    # Realtime let the user join the session's private channel (its policy checks the owner).
    assert seen["functions"]["status"] == 201
    async with db.service() as conn:
        cur = await conn.execute(
            "SELECT user_id FROM chat_sessions WHERE id = %s", (seen["functions"]["sessionId"],)
        )
        owner = await cur.fetchone()
    assert owner is not None and str(owner["user_id"]) == user_id
    assert seen["getUser"] == user_id
    assert seen["channel"] == {"status": "SUBSCRIBED", "error": None}

    def gotrue(name: str, kind: str = "AuthApiError") -> tuple[int, str]:
        error = seen[name]
        assert error["name"] == kind, error  # supabase-js read GoTrue's error as GoTrue's
        return error["status"], error["code"]

    assert gotrue("signUpAgain") == (422, "user_already_exists")
    assert gotrue("weakPassword", "AuthWeakPasswordError") == (422, "weak_password")
    assert gotrue("wrongPassword") == (400, "invalid_credentials")
    assert gotrue("unknownUser") == (400, "invalid_credentials")
    assert seen["wrongPassword"]["message"] == "Invalid login credentials"
    assert gotrue("reused") == (400, "refresh_token_already_used")
    assert seen["signOut"] is None
    # auth-js turns GoTrue's 403 `session_not_found` into its own "session missing" error.
    assert seen["afterSignOut"]["name"] == "AuthSessionMissingError"
    async with db.service() as conn:
        cur = await conn.execute(
            "SELECT count(*) AS n FROM auth.sessions WHERE user_id = %s", (user_id,)
        )
        row = await cur.fetchone()
    assert row is not None and row["n"] == 0  # signOut() is global: every session went
