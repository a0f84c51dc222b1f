"""The Auth twin's rows: users, identities, sessions and refresh tokens, as GoTrue keeps them.

Queries follow GoTrue's models (github.com/supabase/auth, `internal/models/`): `user.go`
(`FindUserByEmailAndAudience`, `UpdateUserMetaData` / `UpdateAppMetaData`: a null value deletes
a key), `refresh_token.go` (`createRefreshToken`, `GrantRefreshTokenSwap`, `RevokeTokenFamily`),
`sessions.go` (`FindCurrentlyActiveRefreshToken`, `Logout`, `LogoutSession`,
`LogoutAllExceptMe`). Users in `auth.users`, with `instance_id` left null (GoTrue's `uuid.Nil`).
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from uuid import UUID, uuid4

from psycopg.types.json import Jsonb

from shared.db.database import Connection

Row = dict[str, Any]

USER_COLUMNS = """id, aud, role, email, encrypted_password, email_confirmed_at, invited_at,
    phone, phone_confirmed_at, confirmation_sent_at, confirmed_at, last_sign_in_at,
    raw_app_meta_data, raw_user_meta_data, created_at, updated_at, banned_until, deleted_at,
    is_anonymous"""


def now() -> datetime:
    return datetime.now(UTC)


def refresh_token_value() -> str:
    """`crypto.SecureAlphanumeric(12)`: 12 lowercase base32 characters."""
    return base64.b32encode(secrets.token_bytes(8)).decode().lower()[:12]


async def user_by_id(conn: Connection, user_id: UUID) -> Row | None:
    cur = await conn.execute(f"SELECT {USER_COLUMNS} FROM auth.users WHERE id = %s", (user_id,))
    return await cur.fetchone()


async def user_by_email(conn: Connection, email: str, aud: str) -> Row | None:
    cur = await conn.execute(
        f"SELECT {USER_COLUMNS} FROM auth.users WHERE instance_id IS NULL "
        "AND lower(email) = lower(%s) AND aud = %s AND is_sso_user = false",
        (email, aud),
    )
    return await cur.fetchone()


async def email_taken(conn: Connection, email: str) -> bool:
    cur = await conn.execute(
        "SELECT 1 FROM auth.users WHERE lower(email) = lower(%s) AND is_sso_user = false",
        (email,),
    )
    return await cur.fetchone() is not None


async def insert_user(
    conn: Connection,
    *,
    user_id: UUID,
    email: str,
    password_hash: str,
    aud: str,
    role: str,
    app_metadata: Mapping[str, Any],
    user_metadata: Mapping[str, Any],
) -> None:
    at = now()
    await conn.execute(
        "INSERT INTO auth.users (id, aud, role, email, encrypted_password, raw_app_meta_data, "
        "raw_user_meta_data, created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (
            user_id,
            aud,
            role,
            email,
            password_hash,
            Jsonb(dict(app_metadata)),
            Jsonb(dict(user_metadata)),
            at,
            at,
        ),
    )


async def insert_identity(
    conn: Connection, *, user_id: UUID, provider: str, identity_data: Mapping[str, Any]
) -> None:
    at = now()
    await conn.execute(
        "INSERT INTO auth.identities (provider_id, user_id, identity_data, provider, "
        "last_sign_in_at, created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s)",
        (
            str(identity_data.get("sub", user_id)),
            user_id,
            Jsonb(dict(identity_data)),
            provider,
            at,
            at,
            at,
        ),
    )


async def identities(conn: Connection, user_id: UUID) -> list[Row]:
    cur = await conn.execute(
        "SELECT id, provider_id, user_id, identity_data, provider, last_sign_in_at, created_at, "
        "updated_at, email FROM auth.identities WHERE user_id = %s ORDER BY created_at",
        (user_id,),
    )
    return await cur.fetchall()


async def confirm_email(conn: Connection, user_id: UUID) -> None:
    """`User.Confirm`: the email confirmed now, and `email_verified: true` in the metadata."""
    await conn.execute(
        "UPDATE auth.users SET email_confirmed_at = now(), updated_at = now(), "
        "raw_user_meta_data = raw_user_meta_data || '{\"email_verified\": true}' WHERE id = %s",
        (user_id,),
    )
    await conn.execute(
        "UPDATE auth.identities SET identity_data = identity_data || "
        "'{\"email_verified\": true}', updated_at = now() WHERE user_id = %s "
        "AND provider = 'email'",
        (user_id,),
    )


async def merge_metadata(
    conn: Connection, user_id: UUID, column: str, changes: Mapping[str, Any]
) -> None:
    """`UpdateUserMetaData` / `UpdateAppMetaData`: keys set, a null value removing its key."""
    assert column in ("raw_user_meta_data", "raw_app_meta_data")
    removed = [key for key, value in changes.items() if value is None]
    kept = {key: value for key, value in changes.items() if value is not None}
    await conn.execute(
        f"UPDATE auth.users SET {column} = (coalesce({column}, '{{}}') || %s) - %s::text[], "
        "updated_at = now() WHERE id = %s",
        (Jsonb(kept), removed, user_id),
    )


async def update_user(conn: Connection, user_id: UUID, **columns: Any) -> None:
    """Set plain columns (`encrypted_password`, `email`, `role`, `banned_until`)."""
    assignments = ", ".join(f"{name} = %({name})s" for name in columns)
    await conn.execute(
        f"UPDATE auth.users SET {assignments}, updated_at = now() WHERE id = %(id)s",
        {**columns, "id": user_id},
    )


async def create_session(
    conn: Connection, *, user_id: UUID, method: str, user_agent: str | None, ip: str | None
) -> UUID:
    """A session, its first AMR claim (`AddClaimToSession`), and the user's `last_sign_in_at`."""
    session_id, at = uuid4(), now()
    await conn.execute(
        "INSERT INTO auth.sessions (id, user_id, created_at, updated_at, aal, user_agent, ip) "
        "VALUES (%s, %s, %s, %s, 'aal1', %s, %s)",
        (session_id, user_id, at, at, user_agent, ip),
    )
    await conn.execute(
        "INSERT INTO auth.mfa_amr_claims (id, session_id, created_at, updated_at, "
        "authentication_method) VALUES (%s, %s, %s, %s, %s)",
        (uuid4(), session_id, at, at, method),
    )
    await conn.execute("UPDATE auth.users SET last_sign_in_at = %s WHERE id = %s", (at, user_id))
    return session_id


async def session(conn: Connection, session_id: UUID) -> Row | None:
    cur = await conn.execute(
        "SELECT id, user_id, created_at, not_after FROM auth.sessions WHERE id = %s",
        (session_id,),
    )
    return await cur.fetchone()


async def amr(conn: Connection, session_id: UUID) -> list[dict[str, Any]]:
    cur = await conn.execute(
        "SELECT authentication_method, updated_at FROM auth.mfa_amr_claims "
        "WHERE session_id = %s ORDER BY updated_at DESC",
        (session_id,),
    )
    return [
        {"method": row["authentication_method"], "timestamp": int(row["updated_at"].timestamp())}
        for row in await cur.fetchall()
    ]


async def insert_refresh_token(
    conn: Connection, *, user_id: UUID, session_id: UUID, parent: str | None
) -> str:
    token, at = refresh_token_value(), now()
    await conn.execute(
        "INSERT INTO auth.refresh_tokens (token, user_id, revoked, created_at, updated_at, parent, "
        "session_id) VALUES (%s, %s, false, %s, %s, %s, %s)",
        (token, str(user_id), at, at, parent, session_id),
    )
    return token


async def refresh_token(conn: Connection, token: str, *, for_update: bool = False) -> Row | None:
    """`FindUserWithRefreshToken`'s token row (revoked ones too)."""
    lock = " FOR UPDATE" if for_update else ""
    cur = await conn.execute(
        "SELECT id, token, user_id, revoked, updated_at, parent, session_id "
        f"FROM auth.refresh_tokens WHERE token = %s{lock}",
        (token,),
    )
    return await cur.fetchone()


async def active_refresh_token(conn: Connection, session_id: UUID) -> Row | None:
    """`FindCurrentlyActiveRefreshToken`: the session's newest token not revoked."""
    cur = await conn.execute(
        "SELECT id, token, parent FROM auth.refresh_tokens WHERE session_id = %s "
        "AND revoked IS false ORDER BY id DESC LIMIT 1",
        (session_id,),
    )
    return await cur.fetchone()


async def revoke(conn: Connection, token_id: int) -> None:
    await conn.execute(
        "UPDATE auth.refresh_tokens SET revoked = true, updated_at = now() WHERE id = %s",
        (token_id,),
    )


async def revoke_session_tokens(conn: Connection, session_id: UUID) -> None:
    """`RevokeTokenFamily` for a token with a session: every live token of the session."""
    await conn.execute(
        "UPDATE auth.refresh_tokens SET revoked = true, updated_at = now() "
        "WHERE session_id = %s AND revoked = false",
        (session_id,),
    )


async def touch_session(
    conn: Connection, session_id: UUID, user_agent: str | None, ip: str | None
) -> None:
    await conn.execute(
        "UPDATE auth.sessions SET refreshed_at = now() AT TIME ZONE 'utc', updated_at = now(), "
        "user_agent = %s, ip = %s WHERE id = %s",
        (user_agent, ip, session_id),
    )


async def delete_sessions(
    conn: Connection, user_id: UUID, *, only: UUID | None = None, keep: UUID | None = None
) -> None:
    """`Logout` (every session), `LogoutSession` (`only`), `LogoutAllExceptMe` (`keep`); their
    refresh tokens and AMR claims go with them (foreign keys, on delete cascade)."""
    if only is not None:
        await conn.execute("DELETE FROM auth.sessions WHERE id = %s", (only,))
    elif keep is not None:
        await conn.execute(
            "DELETE FROM auth.sessions WHERE user_id = %s AND id <> %s", (user_id, keep)
        )
    else:
        await conn.execute("DELETE FROM auth.sessions WHERE user_id = %s", (user_id,))


async def list_users(
    conn: Connection, aud: str, *, page: int, per_page: int
) -> tuple[list[Row], int]:
    cur = await conn.execute(
        "SELECT count(*) AS n FROM auth.users WHERE instance_id IS NULL AND aud = %s", (aud,)
    )
    total = (await cur.fetchone() or {"n": 0})["n"]
    cur = await conn.execute(
        f"SELECT {USER_COLUMNS} FROM auth.users WHERE instance_id IS NULL AND aud = %s "
        "ORDER BY created_at DESC LIMIT %s OFFSET %s",
        (aud, per_page, (page - 1) * per_page),
    )
    return await cur.fetchall(), int(total)
