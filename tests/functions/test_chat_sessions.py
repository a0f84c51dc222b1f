"""The chat function's session routes over HTTP: happy paths, 401, 404, 422, problem+json."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from uuid import UUID, uuid4

import httpx
import pytest

from functions.chat.app import create_app
from shared.api.problems import PROBLEM_TYPES
from shared.db import Database
from shared.services import Services
from tests.functions.conftest import serve, token
from tests.support.factories import make_user, make_world

Auth = Callable[[UUID], dict[str, str]]


@pytest.fixture(scope="module")
def url(services: Services) -> Iterator[str]:
    with serve(create_app(), services) as server:
        yield server.url


def problem(response: httpx.Response, status: int) -> dict[str, object]:
    """The problem+json body of a `status` answer, whose `type` is a kind of that status (or
    `about:blank`, for a refusal the status says all about)."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body: dict[str, object] = response.json()
    assert body["status"] == status and body["detail"]
    kinds = {t.uri: t.status for t in PROBLEM_TYPES} | {"about:blank": status}
    assert kinds.get(str(body["type"])) == status, body["type"]
    return body


async def test_session_lifecycle(
    url: str, http: httpx.AsyncClient, db: Database, as_user: Auth
) -> None:
    user = as_user(await make_user(db))
    created = await http.post(f"{url}/sessions", json={"title": "Trip"}, headers=user)
    assert created.status_code == 201
    sid = created.json()["id"]
    assert (await http.get(f"{url}/sessions/{sid}", headers=user)).json()["title"] == "Trip"

    renamed = await http.patch(
        f"{url}/sessions/{sid}", json={"title": "Trip to Oslo"}, headers=user
    )
    assert renamed.json()["title"] == "Trip to Oslo"
    await http.patch(f"{url}/sessions/{sid}", json={"status": "archived"}, headers=user)
    assert (await http.get(f"{url}/sessions", headers=user)).json()["sessions"] == []
    listed = (await http.get(f"{url}/sessions?include_archived=true", headers=user)).json()[
        "sessions"
    ]
    assert [s["id"] for s in listed] == [sid]

    assert (await http.delete(f"{url}/sessions/{sid}", headers=user)).status_code == 204
    problem(await http.get(f"{url}/sessions/{sid}", headers=user), 404)
    assert (await http.get(f"{url}/sessions?include_archived=true", headers=user)).json()[
        "sessions"
    ] == []


async def test_messages_timeline_fork_and_transcript(
    url: str, http: httpx.AsyncClient, db: Database, as_user: Auth
) -> None:
    user_id = await make_user(db)
    world = await make_world(db, user_id)
    user, sid = as_user(user_id), world["chat_sessions"]

    messages = (await http.get(f"{url}/sessions/{sid}/messages", headers=user)).json()
    assert [(m["seq"], m["role"], m["content"]) for m in messages["messages"]] == [
        (1, "user", "hi")
    ]
    assert (await http.get(f"{url}/sessions/{sid}/messages?after_seq=1", headers=user)).json() == {
        "messages": [],
        "last_seq": 1,
        "removed": [],
    }

    timeline = (await http.get(f"{url}/sessions/{sid}/timeline", headers=user)).json()
    assert [(e["seq"], e["source"], e["kind"]) for e in timeline["entries"]] == [
        (1, "chat", "user"),
        (2, "agent", "delegation"),
    ]

    at = {"at_message_id": str(world["chat_messages"])}
    fork = await http.post(f"{url}/sessions/{sid}/fork", json=at, headers=user)
    assert fork.status_code == 201 and fork.json()["forked_from_session_id"] == str(sid)
    copied = (await http.get(f"{url}/sessions/{fork.json()['id']}/messages", headers=user)).json()
    assert [m["content"] for m in copied["messages"]] == ["hi"]

    transcript = await http.get(f"{url}/plans/{world['agent_plans']}/transcript", headers=user)
    assert transcript.headers["content-type"].startswith("text/markdown")
    assert "## Request" in transcript.text and "_delegation_" in transcript.text


async def test_other_users_see_nothing(
    url: str, http: httpx.AsyncClient, db: Database, as_user: Auth
) -> None:
    world = await make_world(db, await make_user(db))
    intruder = as_user(await make_user(db))
    sid = world["chat_sessions"]
    for path in (
        f"/sessions/{sid}",
        f"/sessions/{sid}/messages",
        f"/sessions/{sid}/timeline",
        f"/plans/{world['agent_plans']}/transcript",
    ):
        problem(await http.get(url + path, headers=intruder), 404)
    problem(
        await http.patch(f"{url}/sessions/{sid}", json={"title": "mine"}, headers=intruder), 404
    )
    problem(await http.delete(f"{url}/sessions/{sid}", headers=intruder), 404)
    fork = {"at_message_id": str(world["chat_messages"])}
    problem(await http.post(f"{url}/sessions/{sid}/fork", json=fork, headers=intruder), 404)


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer not-a-jwt"},
        {"Authorization": "Bearer " + token(None, role="anon")},
    ],
)
async def test_missing_or_wrong_tokens_get_401(
    url: str, http: httpx.AsyncClient, headers: dict[str, str]
) -> None:
    body = problem(await http.get(f"{url}/sessions", headers=headers), 401)
    assert body["title"] == "Unauthenticated"


async def test_expired_token_gets_401(url: str, http: httpx.AsyncClient) -> None:
    from local.auth.keys import mint_token
    from tests.functions.conftest import SECRET

    expired = mint_token(SECRET, sub=uuid4(), expires_in=-300)
    body = problem(
        await http.get(f"{url}/sessions", headers={"Authorization": f"Bearer {expired}"}), 401
    )
    assert "expired" in str(body["detail"])


async def test_a_token_outliving_its_user_gets_401(
    url: str, http: httpx.AsyncClient, as_user: Auth
) -> None:
    """Supabase does not revoke the tokens of a user it deletes: until they expire they verify,
    and a write under one is refused as such, not a 500 (the user's rows are gone with them)."""
    gone = as_user(uuid4())
    sends = [
        ("/sessions", {"title": "x"}),
        ("/chat", {"message": "hi"}),
        ("/chat", {"message": "hi", "client_message_id": "c-1"}),
        ("/chat", {"message": "hi", "stream": True}),
        ("/chat", {"message": "hi", "wait": False}),
    ]
    for path, body in sends:
        refused = problem(await http.post(f"{url}{path}", json=body, headers=gone), 401)
        assert "no longer exists" in str(refused["detail"])


async def test_bad_input_gets_422(
    url: str, http: httpx.AsyncClient, db: Database, as_user: Auth
) -> None:
    user = as_user(await make_user(db))
    sid = (await http.post(f"{url}/sessions", json={}, headers=user)).json()["id"]
    problem(await http.post(f"{url}/sessions", json={"title": ""}, headers=user), 422)
    problem(await http.post(f"{url}/sessions", json={"colour": "red"}, headers=user), 422)
    problem(await http.get(f"{url}/sessions/not-a-uuid", headers=user), 422)
    problem(
        await http.patch(f"{url}/sessions/{sid}", json={"status": "deleted"}, headers=user), 422
    )
    problem(await http.get(f"{url}/sessions/{sid}/messages?after_seq=-1", headers=user), 422)
    stranger = {"at_message_id": str(uuid4())}
    body = problem(await http.post(f"{url}/sessions/{sid}/fork", json=stranger, headers=user), 409)
    assert "not part of session" in str(body["detail"])


async def test_openapi_and_health(url: str, http: httpx.AsyncClient) -> None:
    spec = (await http.get(f"{url}/openapi.json")).json()
    assert {"/sessions", "/sessions/{session_id}/fork", "/plans/{plan_id}/transcript"} <= set(
        spec["paths"]
    )
    assert "Problem" in spec["components"]["schemas"]
    assert (await http.get(f"{url}/health")).json() == {"status": "ok", "function": "chat"}


async def test_the_sessions_list_pages_with_a_cursor(
    url: str, http: httpx.AsyncClient, db: Database, as_user: Auth
) -> None:
    """Issue 21, defect 7: the list pages on, most recently active first, by an opaque cursor."""
    user = as_user(await make_user(db))
    made = [
        (await http.post(f"{url}/sessions", json={"title": f"S{n}"}, headers=user)).json()
        for n in range(5)
    ]
    newest_first = [s["id"] for s in reversed(made)]
    seen: list[str] = []
    cursor: str | None = None
    for _ in range(3):
        query: dict[str, str | int] = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = (await http.get(f"{url}/sessions", params=query, headers=user)).json()
        seen += [s["id"] for s in page["sessions"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == newest_first and cursor is None
    problem(await http.get(f"{url}/sessions", params={"cursor": "not-a-cursor"}, headers=user), 422)
