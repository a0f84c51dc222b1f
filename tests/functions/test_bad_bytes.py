"""Text Postgres cannot store never reaches it: U+0000 over HTTP.

From the user it is refused: 422 problem+json naming the field, nothing stored. From the model
it is replaced (U+FFFD) and the turn completes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from uuid import UUID

import httpx
import pytest

from local.deepseek import reply, tool_call
from shared.db import Database
from tests.functions.test_chat_sessions import problem
from tests.functions.test_turns import count
from tests.support.factories import make_session, make_user
from tests.support.scripting import Script
from tests.support.stack import Stack

Auth = Callable[[UUID], dict[str, str]]
NUL, MARK = "\x00", "\ufffd"


SENDS: list[tuple[str, dict[str, Any], str]] = [
    ("POST /chat", {"message": f"hi{NUL}"}, "message"),
    ("POST /chat", {"message": "hi", "client_message_id": f"id{NUL}1"}, "client_message_id"),
    ("POST /sessions", {"title": f"Trip{NUL}"}, "title"),
    ("PATCH /sessions/{id}", {"title": f"Trip{NUL}"}, "title"),
]


@pytest.mark.parametrize(("route", "body", "field"), SENDS)
async def test_nul_from_the_user_is_a_422_naming_the_field(
    stack: Stack,
    http: httpx.AsyncClient,
    db: Database,
    as_user: Auth,
    route: str,
    body: dict[str, Any],
    field: str,
) -> None:
    user_id = await make_user(db)
    session = await make_session(db, user_id, title="Before")
    method, path = route.split()
    url = stack.url("chat") + path.format(id=session.id)

    answered = await http.request(method, url, json=body, headers=as_user(user_id))

    found = problem(answered, 422)
    assert f"body.{field}" in str(found["detail"]) and "NUL" in str(found["detail"])
    messages = await count(db, "SELECT count(*) FROM chat_messages WHERE user_id = %s", user_id)
    sessions = await count(
        db, "SELECT count(*) FROM chat_sessions WHERE user_id = %s AND title = 'Before'", user_id
    )
    assert (messages, sessions) == (0, 1)  # nothing stored, nothing renamed


async def test_nul_from_the_model_is_replaced_and_the_turn_completes(
    stack: Stack, http: httpx.AsyncClient, db: Database, as_user: Auth, script: Script
) -> None:
    user_id = await make_user(db)
    script.planner(
        reply(tool_call("create_task", title=f"Call{NUL}mum"), tool_call(f"create{NUL}task")),
        reply(f"Done{NUL}."),
    )

    sent = await http.post(
        f"{stack.url('chat')}/chat", json={"message": "remind me"}, headers=as_user(user_id)
    )

    assert sent.status_code == 200, sent.text
    assert (sent.json()["status"], sent.json()["answer"]) == ("completed", f"Done{MARK}.")
    titles = await count(
        db,
        "SELECT count(*) FROM tasks WHERE user_id = %s AND title = %s",
        user_id,
        f"Call{MARK}mum",
    )
    assert titles == 1


# Lone surrogates (e.g. "\udfff" in JSON) are text Postgres cannot store either: psycopg cannot
# encode them as UTF-8. A required `str` field is refused by pydantic itself; on an optional field
# (`str | None`) pydantic lets them through, so `StoredText` refuses a value that has no UTF-8
# encoding. Every request field that is `StoredText` is sent one here.
SURROGATE = "\udfff"
SURROGATE_SENDS: list[tuple[str, dict[str, Any], str]] = [
    ("POST /chat", {"message": f"hi{SURROGATE}"}, "message"),
    ("POST /chat", {"message": "hi", "client_message_id": f"id{SURROGATE}"}, "client_message_id"),
    ("POST /sessions", {"title": f"Trip{SURROGATE}"}, "title"),
    ("PATCH /sessions/{id}", {"title": f"Trip{SURROGATE}"}, "title"),
    (
        "POST /sessions/{id}/fork",
        {"at_message_id": str(UUID(int=1)), "title": f"T{SURROGATE}"},
        "title",
    ),
    ("POST /plans/{id}/approvals/{id}", {"decision": "reject", "text": f"no{SURROGATE}"}, "text"),
]


@pytest.mark.parametrize(("route", "body", "field"), SURROGATE_SENDS)
async def test_a_lone_surrogate_from_the_user_is_a_422_naming_the_field(
    stack: Stack,
    http: httpx.AsyncClient,
    db: Database,
    as_user: Auth,
    route: str,
    body: dict[str, Any],
    field: str,
) -> None:
    user_id = await make_user(db)
    session = await make_session(db, user_id, title="Before")
    method, path = route.split()
    function = "agent_planner" if path.startswith("/plans") else "chat"
    url = stack.url(function) + path.format(id=session.id)

    sent = json.dumps(body)  # ASCII: the surrogate travels as a \\u escape, as a client sends it
    headers = {**as_user(user_id), "content-type": "application/json"}
    answered = await http.request(method, url, content=sent, headers=headers)

    found = problem(answered, 422)
    assert f"body.{field}" in str(found["detail"])
    messages = await count(db, "SELECT count(*) FROM chat_messages WHERE user_id = %s", user_id)
    sessions = await count(
        db, "SELECT count(*) FROM chat_sessions WHERE user_id = %s AND title = 'Before'", user_id
    )
    everything = await count(db, "SELECT count(*) FROM chat_sessions WHERE user_id = %s", user_id)
    assert (messages, sessions, everything) == (0, 1, 1)  # nothing stored, renamed or forked
