"""The Auth twin answers as GoTrue does: shapes, statuses, error codes (docs/auth-twin.md)."""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import UUID, uuid4

import bcrypt
import jwt
import pytest

from local.auth.keys import mint_token
from shared.auth.access_tokens import TokenVerifier
from shared.db import Database
from shared.kernel.settings import LOCAL_JWT_SECRET
from tests.local.auth.conftest import Project, serve_project
from tests.support.factories import make_session


def email() -> str:
    return f"{uuid4().hex[:10]}@example.com"


async def test_sign_up_confirms_and_signs_in_with_an_es256_session(
    project: Project, db: Database
) -> None:
    address = email()
    session = await project.sign_up(address.upper(), "a-good-password")
    assert set(session) == {
        "access_token",
        "token_type",
        "expires_in",
        "expires_at",
        "refresh_token",
        "user",
    }
    assert (session["token_type"], session["expires_in"]) == ("bearer", 3600)
    assert len(session["refresh_token"]) == 12 and session["refresh_token"].isalnum()
    user = session["user"]
    assert (user["email"], user["aud"], user["role"], user["phone"]) == (
        address,
        "authenticated",
        "authenticated",
        "",
    )
    assert user["app_metadata"] == {"provider": "email", "providers": ["email"]}
    assert user["user_metadata"]["email_verified"] is True and user["email_confirmed_at"]
    assert [i["provider"] for i in user["identities"]] == ["email"]
    header = jwt.get_unverified_header(session["access_token"])
    assert header["alg"] == "ES256" and header["kid"] == project.auth.signing.kid
    verifier = TokenVerifier(jwks_url=project.jwks_url)  # as Parley's functions verify it
    claims = await asyncio.to_thread(  # (it fetches the keys over HTTP, blocking)
        verifier.verify, session["access_token"], audience="authenticated"
    )
    assert claims["sub"] == user["id"] and claims["iss"] == f"{project.url}/auth/v1"
    assert (claims["aal"], claims["amr"][0]["method"], claims["is_anonymous"]) == (
        "aal1",
        "password",
        False,
    )
    async with db.service() as conn:
        cur = await conn.execute(
            "SELECT u.encrypted_password, u.confirmed_at IS NOT NULL AS confirmed, "
            "(SELECT count(*) FROM auth.sessions s WHERE s.user_id = u.id) AS sessions "
            "FROM auth.users u WHERE id = %s",
            (UUID(user["id"]),),
        )
        row = await cur.fetchone()
    assert row is not None and row["confirmed"] and row["sessions"] == 1
    assert row["encrypted_password"].startswith("$2b$10$")  # bcrypt, GoTrue's cost
    assert bcrypt.checkpw(b"a-good-password", row["encrypted_password"].encode())


async def test_jwks_is_public_and_cached(project: Project) -> None:
    response = await project.call("GET", "/.well-known/jwks.json", key="")
    assert response.status_code == 200
    assert response.headers["cache-control"] == "public, max-age=600"
    (key,) = response.json()["keys"]
    assert (key["kty"], key["crv"], key["alg"], key["kid"]) == (
        "EC",
        "P-256",
        "ES256",
        project.auth.signing.kid,
    )
    assert "d" not in key  # never the private part


@pytest.mark.parametrize(
    ("body", "status", "code", "message"),
    [
        (
            {"email": "x@example.com", "password": "12345"},
            422,
            "weak_password",
            "Password should be at least 6 characters.",
        ),
        (
            {"email": "x@example.com", "password": "p" * 73},
            400,
            "validation_failed",
            "Password cannot be longer than 72 characters",
        ),
        ({"email": "x@example.com"}, 400, "validation_failed", "Signup requires a valid password"),
        (
            {"email": "not-an-email", "password": "a-good-password"},
            400,
            "validation_failed",
            "Unable to validate email address: invalid format",
        ),
        (
            {"phone": "+15555550100", "password": "a-good-password"},
            400,
            "phone_provider_disabled",
            "Phone signups are disabled",
        ),
        (
            {"password": "a-good-password"},
            422,
            "anonymous_provider_disabled",
            "Anonymous sign-ins are disabled",
        ),
    ],
)
async def test_sign_up_refusals(
    project: Project, body: dict[str, Any], status: int, code: str, message: str
) -> None:
    response = await project.call("POST", "/signup", json=body)
    assert response.status_code == status
    assert response.headers["x-sb-error-code"] == code
    expected: dict[str, Any] = {"code": code, "message": message}
    if code == "weak_password":
        expected["weak_password"] = {"reasons": ["length"]}
    assert response.json() == expected


async def test_a_second_sign_up_is_user_already_exists_in_either_api_version(
    project: Project,
) -> None:
    address = email()
    await project.sign_up(address)
    again = {"email": address, "password": "another-password"}
    new = await project.call("POST", "/signup", json=again)
    assert (new.status_code, new.json()) == (
        422,
        {"code": "user_already_exists", "message": "User already registered"},
    )
    assert new.headers["x-supabase-api-version"] == "2024-01-01"
    old = await project.call("POST", "/signup", json=again, version=None)
    assert old.json() == {
        "code": 422,
        "error_code": "user_already_exists",
        "msg": "User already registered",
    }


async def test_wrong_password_and_unknown_user_are_invalid_credentials(project: Project) -> None:
    address = email()
    await project.sign_up(address)
    for body in (
        {"email": address, "password": "wrong-password"},
        {"email": email(), "password": "a-good-password"},
    ):
        response = await project.call("POST", "/token?grant_type=password", json=body)
        assert (response.status_code, response.json()) == (
            400,
            {"code": "invalid_credentials", "message": "Invalid login credentials"},
        )
    unsupported = await project.call("POST", "/token?grant_type=magic", json={})
    assert unsupported.json() == {
        "code": "invalid_credentials",
        "message": "unsupported_grant_type",
    }


async def test_refresh_rotates_gives_the_lost_answer_again_and_refuses_reuse(
    project: Project, db: Database
) -> None:
    """Rotation with reuse detection (reuse interval 0 s in this project)."""
    first = await project.sign_up(email())
    second = await refresh(project, first["refresh_token"])
    assert second["refresh_token"] != first["refresh_token"]
    assert second["user"]["id"] == first["user"]["id"]
    # The parent of the live token: the client lost the answer, it gets the same token again.
    again = await refresh(project, first["refresh_token"])
    assert again["refresh_token"] == second["refresh_token"]
    third = await refresh(project, second["refresh_token"])
    reused = await project.call(
        "POST", "/token?grant_type=refresh_token", json={"refresh_token": first["refresh_token"]}
    )
    assert (reused.status_code, reused.json()) == (
        400,
        {"code": "refresh_token_already_used", "message": "Invalid Refresh Token: Already Used"},
    )
    # ... and the whole session's tokens were revoked: the live one is refused too.
    live = await project.call(
        "POST", "/token?grant_type=refresh_token", json={"refresh_token": third["refresh_token"]}
    )
    assert live.json()["code"] == "refresh_token_already_used"
    not_found = "Invalid Refresh Token: Refresh Token Not Found"
    for token, message in (("abc", "Refresh token is not valid"), ("aaaaaaaaaaaa", not_found)):
        response = await project.call(
            "POST", "/token?grant_type=refresh_token", json={"refresh_token": token}
        )
        assert response.status_code == 400 and response.json()["message"] == message


async def test_within_the_reuse_interval_a_revoked_token_still_refreshes(database_url: str) -> None:
    async with serve_project(database_url, refresh_token_reuse_interval=10) as project:
        first = await project.sign_up(email())
        second = await refresh(project, first["refresh_token"])
        await refresh(project, second["refresh_token"])
        late = await refresh(project, first["refresh_token"])  # a concurrent tab, say
        assert late["refresh_token"] not in (first["refresh_token"], second["refresh_token"])


async def refresh(project: Project, token: str) -> dict[str, Any]:
    response = await project.call(
        "POST", "/token?grant_type=refresh_token", json={"refresh_token": token}
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_user_and_logout(project: Project) -> None:
    session = await project.sign_up(email())
    token = session["access_token"]
    me = await project.call("GET", "/user", token=token)
    assert me.status_code == 200 and me.json()["id"] == session["user"]["id"]
    missing = await project.call("GET", "/user", token=project.keys.anon)
    assert (missing.status_code, missing.json()["code"]) == (403, "bad_jwt")
    assert (await project.call("POST", "/logout", token=token)).status_code == 204
    gone = await project.call("GET", "/user", token=token)
    assert (gone.status_code, gone.json()) == (
        403,
        {
            "code": "session_not_found",
            "message": "Session from session_id claim in JWT does not exist",
        },
    )
    stale = await project.call(
        "POST", "/token?grant_type=refresh_token", json={"refresh_token": session["refresh_token"]}
    )
    assert stale.json()["code"] == "refresh_token_not_found"


async def test_a_token_of_a_user_that_does_not_exist_is_user_not_found(project: Project) -> None:
    stranger = mint_token(LOCAL_JWT_SECRET, sub=uuid4())
    response = await project.call("GET", "/user", token=stranger)
    assert (response.status_code, response.json()["code"]) == (403, "user_not_found")


async def test_the_gateway_wants_a_project_key(project: Project) -> None:
    none = await project.call("POST", "/signup", key="", json={})
    assert (none.status_code, none.json()["message"]) == (401, "No API key found in request")
    for bad in (
        "sb_publishable_nope",
        mint_token("another-secret-of-32-characters-or-more", role="anon"),
    ):
        response = await project.call("POST", "/signup", key=bad, json={})
        assert (response.status_code, response.json()["message"]) == (401, "Invalid API key")
    legacy = await project.call(
        "POST",
        "/signup",
        key=project.keys.anon,
        json={"email": email(), "password": "a-good-password"},
    )
    assert legacy.status_code == 200


async def test_admin_users_need_the_secret_key(project: Project, db: Database) -> None:
    secret = project.keys.secret
    refused = await project.call("GET", "/admin/users")  # the publishable key: role anon
    assert (refused.status_code, refused.json()) == (
        403,
        {"code": "not_admin", "message": "User not allowed"},
    )
    address = email()
    created = await project.call(
        "POST",
        "/admin/users",
        key=secret,
        json={
            "email": address,
            "password": "pw",  # an admin may set a short password: no strength check there
            "email_confirm": True,
            "app_metadata": {"parley_role": "operator"},
            "user_metadata": {"name": "Ana"},
        },
    )
    assert created.status_code == 200, created.text
    user = created.json()
    assert user["app_metadata"] == {
        "provider": "email",
        "providers": ["email"],
        "parley_role": "operator",
    }
    assert user["user_metadata"] == {"name": "Ana", "email_verified": True}
    duplicate = await project.call("POST", "/admin/users", key=secret, json={"email": address})
    assert (duplicate.status_code, duplicate.json()["code"]) == (422, "email_exists")
    listed = await project.call("GET", "/admin/users?per_page=500", key=secret)
    assert user["id"] in [u["id"] for u in listed.json()["users"]]
    assert listed.json()["aud"] == "authenticated"
    changes = {"user_metadata": {"name": None}, "ban_duration": "1h"}
    updated = await project.call("PUT", f"/admin/users/{user['id']}", key=secret, json=changes)
    assert updated.json()["user_metadata"] == {"email_verified": True}
    banned = await project.call(
        "POST", "/token?grant_type=password", json={"email": address, "password": "pw"}
    )
    assert banned.json() == {"code": "user_banned", "message": "User is banned"}
    for path, status, code in (
        (f"/admin/users/{uuid4()}", 404, "user_not_found"),
        ("/admin/users/nope", 404, "validation_failed"),
    ):
        response = await project.call("GET", path, key=secret)
        assert (response.status_code, response.json()["code"]) == (status, code)
    deleted = await project.call("DELETE", f"/admin/users/{user['id']}", key=secret)
    assert (deleted.status_code, deleted.json()) == (200, {})
    gone = await project.call("GET", f"/admin/users/{user['id']}", key=secret)
    assert gone.status_code == 404


async def test_deleting_a_user_deletes_their_parley_rows(project: Project, db: Database) -> None:
    session = await project.sign_up(email())
    chat = await make_session(db, UUID(session["user"]["id"]))
    response = await project.call(
        "DELETE", f"/admin/users/{session['user']['id']}", key=project.keys.secret
    )
    assert response.status_code == 200
    async with db.service() as conn:
        cur = await conn.execute(
            "SELECT count(*) AS n FROM chat_sessions WHERE id = %s", (chat.id,)
        )
        row = await cur.fetchone()
    assert row is not None and row["n"] == 0  # Parley's tables cascade from auth.users


async def test_hs256_sessions_verify_with_the_secret_and_publish_no_key(database_url: str) -> None:
    async with serve_project(database_url, signing="HS256") as project:
        session = await project.sign_up(email())
        assert jwt.get_unverified_header(session["access_token"])["alg"] == "HS256"
        TokenVerifier(secret=LOCAL_JWT_SECRET).verify(session["access_token"])
        keys = await project.call("GET", "/.well-known/jwks.json")
        assert keys.json() == {"keys": []}
