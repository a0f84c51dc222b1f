"""A token that outlives its user (Supabase does not revoke the tokens of a user it deletes)
answers 401 on every user route of every function — not 200 on some, 404 on others and 401
where it would create a session (issue 21, defect 7)."""

from __future__ import annotations

import re
from typing import Any
from uuid import uuid4

import httpx

from shared.db import Database
from tests.functions.conftest import token
from tests.functions.test_chat_sessions import problem
from tests.support.factories import make_user, make_world
from tests.support.stack import Stack

PUBLIC = {"/health", "/schemas/events.json", "/openapi.json", "/docs", "/redoc"}
INTERNAL = {"/plans/{plan_id}/run", "/steps/{step_id}/run"}  # the service-role key's
BODIES: dict[str, Any] = {
    "/chat": {"message": "Hello"},
    "/sessions": {},
    "/sessions/{session_id}": {"title": "x"},
    "/sessions/{session_id}/fork": {"at_message_id": str(uuid4())},
    "/plans/{plan_id}/approvals/{approval_id}": {"decision": "approve"},
}


async def test_every_user_route_refuses_a_token_whose_user_is_gone(
    stack: Stack, http: httpx.AsyncClient, db: Database
) -> None:
    user_id = await make_user(db)
    world = await make_world(db, user_id)  # the rows the routes would have found
    ids = {
        "session_id": world["chat_sessions"],
        "plan_id": world["agent_plans"],
        "approval_id": uuid4(),
    }
    headers = {
        "Authorization": f"Bearer {token(user_id, app_metadata={'parley_role': 'operator'})}"
    }
    async with db.service() as conn:
        await conn.execute("DELETE FROM auth.users WHERE id = %s", (user_id,))

    tried = []
    for function in ("chat", "agent_planner"):
        spec = (await http.get(f"{stack.url(function)}/openapi.json")).json()
        for path, operations in spec["paths"].items():
            if path in PUBLIC or path in INTERNAL:
                continue
            url = stack.url(function) + re.sub(r"{(\w+)}", lambda m: str(ids[m[1]]), path)
            for method in operations:
                body = BODIES.get(path) if method in ("post", "patch") else None
                answered = await http.request(method, url, headers=headers, json=body)
                refused = problem(answered, 401)
                assert "no longer exists" in str(refused["detail"]), (method, path)
                tried.append(f"{method} {path}")
    assert len(tried) == 16, tried  # every user route of both functions
