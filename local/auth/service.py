"""The Auth twin's behaviour: GoTrue's sign-up, password and refresh-token grants, sessions,
and the admin user routes, each citing the handler of github.com/supabase/auth it copies.

Every request body is a JSON object (`retrieveRequestParams`); errors are `AuthError`s with
GoTrue's status, `error_code` and message (`local.auth.errors` shapes them).
"""

from __future__ import annotations

import asyncio
import re
import secrets
import time
from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import bcrypt
import jwt

from local.auth import store
from local.auth.config import AuthConfig
from local.auth.errors import (
    AuthError,
    bad_request,
    forbidden,
    not_found,
    unprocessable,
)
from local.auth.keys import SigningKey
from shared.db.database import Connection, Database

Claims = dict[str, Any]
AUD = "authenticated"
"""`JWT_AUD`: the audience of every user, and of their tokens."""
ADMIN_ROLES = ("service_role", "supabase_admin")
"""`JWT_ADMIN_ROLES` default (`internal/conf/configuration.go`, `ApplyDefaults`)."""
MAX_PASSWORD_LENGTH = 72
"""`internal/api/password.go`: bcrypt reads no further."""
BCRYPT_COST = 10
"""GoTrue hashes with `bcrypt.DefaultCost` (`internal/crypto/password.go`)."""
INVALID_LOGIN = "Invalid login credentials"
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_LEGACY_REFRESH_TOKEN = re.compile(r"[a-z0-9]{12}")
_INSTALL = Path(__file__).with_name("schema.sql")


class Caller:
    """Who sent a request: its client details (recorded on sessions, as GoTrue's GrantParams)."""

    def __init__(self, user_agent: str | None, ip: str | None) -> None:
        self.user_agent, self.ip = user_agent, ip


class Auth:
    """The twin: `await auth.start()`, then serve `local.auth.app.create_app(auth)`."""

    def __init__(self, config: AuthConfig) -> None:
        self.config = config
        self.keys = config.keys
        self.signing = SigningKey.load(
            config.signing, secret=config.jwt_secret, path=config.signing_key_path
        )
        self.issuer = "http://127.0.0.1/auth/v1"
        """The `iss` of its tokens: `{project URL}/auth/v1`, set once the URL is known."""
        self.db = Database(config.database_url, max_size=3)

    async def start(self) -> None:
        """Open the database and install what GoTrue's schema adds to Parley's `auth.users`."""
        async with self.db.autocommit() as conn:
            await conn.execute(_INSTALL.read_text())

    async def stop(self) -> None:
        await self.db.close()

    # -- sign-up and grants -------------------------------------------------------------------

    async def signup(self, params: Mapping[str, Any], caller: Caller) -> dict[str, Any]:
        """`POST /signup` (`internal/api/signup.go`, `Signup`), mailer autoconfirm on: the user
        is confirmed at once and gets a session, as `supabase start` and a project with
        "Confirm email" off do."""
        email, phone = _text(params, "email"), _text(params, "phone")
        if not email and not phone:  # internal/api/api.go: the /signup route
            raise unprocessable("anonymous_provider_disabled", "Anonymous sign-ins are disabled")
        if not self.config.signups:
            raise unprocessable("signup_disabled", "Signups not allowed for this instance")
        password = _text(params, "password")
        if not password:
            raise bad_request("validation_failed", "Signup requires a valid password")
        self.check_password_strength(password)
        if email and phone:
            raise bad_request(
                "validation_failed",
                "Only an email address or phone number should be provided on signup.",
            )
        if phone:
            raise bad_request("phone_provider_disabled", "Phone signups are disabled")
        email = validate_email(email)
        data = params.get("data")
        data = dict(data) if isinstance(data, dict) else {}
        async with self.db.autocommit() as conn:
            existing = await store.user_by_email(conn, email, AUD)
            if existing is not None and existing["email_confirmed_at"] is not None:
                # With autoconfirm GoTrue says so (otherwise it would answer a fake user).
                raise unprocessable("user_already_exists", "User already registered")
        password_hash = await hash_password(password)
        async with self.db.service() as conn:
            user_id = await self._create_user(conn, email, password_hash, data, role=AUD)
            await store.confirm_email(conn, user_id)
            session = await self._issue_session(conn, user_id, "password", caller)
        if self.config.on_signup is not None:  # the local stack's own step (AuthConfig)
            await self.config.on_signup(user_id)
        return session

    async def token(
        self, grant_type: str, params: Mapping[str, Any], caller: Caller
    ) -> dict[str, Any]:
        """`POST /token?grant_type=…` (`internal/api/token.go`, `Token`)."""
        if grant_type == "password":
            return await self._password_grant(params, caller)
        if grant_type == "refresh_token":
            return await self._refresh_grant(params, caller)
        raise bad_request("invalid_credentials", "unsupported_grant_type")

    async def _password_grant(self, params: Mapping[str, Any], caller: Caller) -> dict[str, Any]:
        # internal/api/token.go, ResourceOwnerPasswordGrant
        email, phone = _text(params, "email"), _text(params, "phone")
        password = _text(params, "password")
        if email and phone:
            raise bad_request(
                "validation_failed",
                "Only an email address or phone number should be provided on login.",
            )
        if phone:
            raise unprocessable("phone_provider_disabled", "Phone logins are disabled")
        if not email:
            raise bad_request("validation_failed", "missing email or phone")
        async with self.db.autocommit() as conn:
            user = await store.user_by_email(conn, email, AUD)
        if user is None or not user["encrypted_password"]:
            raise bad_request("invalid_credentials", INVALID_LOGIN)
        if _banned(user):
            raise bad_request("user_banned", "User is banned")
        if not await check_password(password, user["encrypted_password"]):
            raise bad_request("invalid_credentials", INVALID_LOGIN)
        weak: dict[str, Any] | None = None
        try:
            self.check_password_strength(password)
        except AuthError as exc:
            if exc.weak_password is not None:
                weak = {"message": exc.message, "reasons": exc.weak_password}
        if user["email_confirmed_at"] is None:
            raise bad_request("email_not_confirmed", "Email not confirmed")
        async with self.db.service() as conn:
            response = await self._issue_session(conn, user["id"], "password", caller)
        if weak is not None:
            response["weak_password"] = weak
        return response

    async def _refresh_grant(self, params: Mapping[str, Any], caller: Caller) -> dict[str, Any]:
        # internal/api/token_refresh.go (RefreshTokenGrant, Validate) and
        # internal/tokens/service.go (Service.RefreshTokenGrant), refresh tokens of algorithm v1
        # (the refresh_tokens table), rotation on, reuse detection with the reuse interval.
        token = _text(params, "refresh_token")
        if not _LEGACY_REFRESH_TOKEN.fullmatch(token):
            raise bad_request("validation_failed", "Refresh token is not valid")
        async with self.db.service() as conn:
            row = await store.refresh_token(conn, token, for_update=True)
            user = await store.user_by_id(conn, UUID(row["user_id"])) if row is not None else None
            if row is None or user is None:
                raise bad_request(
                    "refresh_token_not_found", "Invalid Refresh Token: Refresh Token Not Found"
                )
            if _banned(user):
                raise bad_request("user_banned", "Invalid Refresh Token: User Banned")
            session_id = row["session_id"]
            session = await store.session(conn, session_id) if session_id else None
            if session is None:
                raise bad_request(
                    "session_not_found", "Invalid Refresh Token: No Valid Session Found"
                )
            if session["not_after"] is not None and session["not_after"] <= store.now():
                raise bad_request("session_expired", "Invalid Refresh Token: Session Expired")
            issued, reused = "", False
            if row["revoked"]:
                active = await store.active_refresh_token(conn, session_id)
                if active is not None and active["parent"] == row["token"]:
                    # The client lost the answer to its last refresh: it gets that token again.
                    issued = active["token"]
                else:
                    interval = timedelta(seconds=self.config.refresh_token_reuse_interval)
                    if store.now() > row["updated_at"] + interval:
                        # Possible abuse: the session's tokens are revoked, and that is kept
                        # (storage.NewCommitWithError) though the request fails.
                        if self.config.refresh_token_rotation:
                            await store.revoke_session_tokens(conn, session_id)
                        reused = True
            if not reused and not issued:
                await store.revoke(conn, row["id"])
                issued = await store.insert_refresh_token(
                    conn, user_id=user["id"], session_id=session_id, parent=row["token"]
                )
            if not reused:
                await store.touch_session(conn, session_id, caller.user_agent, caller.ip)
                return await self._token_response(conn, user, session_id, issued)
        raise bad_request("refresh_token_already_used", "Invalid Refresh Token: Already Used")

    async def _issue_session(
        self, conn: Connection, user_id: UUID, method: str, caller: Caller
    ) -> dict[str, Any]:
        """`IssueRefreshToken` (`internal/tokens/service.go`): a session, its first refresh
        token, and an access token for it."""
        session_id = await store.create_session(
            conn, user_id=user_id, method=method, user_agent=caller.user_agent, ip=caller.ip
        )
        token = await store.insert_refresh_token(
            conn, user_id=user_id, session_id=session_id, parent=None
        )
        user = await store.user_by_id(conn, user_id)  # with the sign-in time the session set
        assert user is not None
        return await self._token_response(conn, user, session_id, token)

    async def _token_response(
        self, conn: Connection, user: Mapping[str, Any], session_id: UUID, refresh_token: str
    ) -> dict[str, Any]:
        """`AccessTokenResponse` for `user` (as it is now), with the claims of
        `GenerateAccessToken`."""
        now = int(time.time())
        expires_at = now + self.config.jwt_exp
        claims = {
            "iss": self.issuer,
            "sub": str(user["id"]),
            "aud": user["aud"] or AUD,
            "exp": expires_at,
            "iat": now,
            "email": user["email"] or "",
            "phone": user["phone"] or "",
            "app_metadata": user["raw_app_meta_data"] or {},
            "user_metadata": user["raw_user_meta_data"] or {},
            "role": user["role"] or AUD,
            "aal": "aal1",
            "amr": await store.amr(conn, session_id),
            "session_id": str(session_id),
            "is_anonymous": bool(user["is_anonymous"]),
        }
        return {
            "access_token": self.signing.sign(claims),
            "token_type": "bearer",
            "expires_in": self.config.jwt_exp,
            "expires_at": expires_at,
            "refresh_token": refresh_token,
            "user": await self.user_json(conn, user),
        }

    # -- the signed-in user ------------------------------------------------------------------

    async def authenticate(
        self, authorization: str | None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """`requireAuthentication` (`internal/api/auth.go`): the token's claims and its user."""
        claims = self.verify_bearer(authorization)
        subject = claims.get("sub")
        if not subject:
            raise forbidden("bad_jwt", "invalid claim: missing sub claim")
        try:
            user_id = UUID(str(subject))
        except ValueError:
            raise bad_request("bad_jwt", "invalid claim: sub claim must be a UUID") from None
        async with self.db.autocommit() as conn:
            user = await store.user_by_id(conn, user_id)
            if user is None:
                raise forbidden("user_not_found", "User from sub claim in JWT does not exist")
            session_id = claims.get("session_id")
            if session_id and session_id != str(UUID(int=0)):
                try:
                    session = await store.session(conn, UUID(str(session_id)))
                except ValueError:
                    raise forbidden(
                        "bad_jwt", "invalid claim: session_id claim must be a UUID"
                    ) from None
                if session is None:
                    raise forbidden(
                        "session_not_found", "Session from session_id claim in JWT does not exist"
                    )
        if _banned(user):
            raise forbidden("user_banned", "User is banned")
        return claims, user

    def verify_bearer(self, authorization: str | None) -> dict[str, Any]:
        """`extractBearerToken` and `parseJWTClaims`: a 401 without a bearer token, a 403
        `bad_jwt` for one that does not verify."""
        match = re.fullmatch(r"(?:B|b)earer (\S+)", authorization or "")
        if match is None:
            raise AuthError(401, "no_authorization", "This endpoint requires a valid Bearer token")
        token = match.group(1)
        try:
            header = jwt.get_unverified_header(token)
            algorithm = str(header.get("alg"))
            key = self.signing.verification_key(algorithm, header.get("kid"))
            if key is None:
                raise jwt.InvalidTokenError(
                    f"unrecognized JWT kid {header.get('kid')} for algorithm {algorithm}"
                )
            claims: dict[str, Any] = jwt.decode(
                token, key, algorithms=[algorithm], options={"verify_aud": False}
            )
        except jwt.ExpiredSignatureError:
            raise forbidden(
                "bad_jwt",
                "invalid JWT: unable to parse or verify signature, token has invalid claims: "
                "token is expired",
            ) from None
        except jwt.InvalidTokenError as exc:
            raise forbidden(
                "bad_jwt", f"invalid JWT: unable to parse or verify signature, {exc}"
            ) from None
        return claims

    async def user(self, authorization: str | None) -> dict[str, Any]:
        """`GET /user` (`internal/api/user.go`, `UserGet`)."""
        claims, user = await self.authenticate(authorization)
        audience = claims.get("aud")
        first = audience[0] if isinstance(audience, list) and audience else audience
        if first != AUD:
            raise bad_request("validation_failed", "Token audience doesn't match request audience")
        async with self.db.autocommit() as conn:
            return await self.user_json(conn, user)

    async def logout(self, authorization: str | None, scope: str | None) -> None:
        """`POST /logout?scope=global|local|others` (`internal/api/logout.go`, `Logout`)."""
        claims, user = await self.authenticate(authorization)
        if scope not in (None, "", "global", "local", "others"):
            raise bad_request("validation_failed", f'Unsupported logout scope "{scope}"')
        session_id = claims.get("session_id")
        async with self.db.autocommit() as conn:
            if session_id and scope == "local":
                await store.delete_sessions(conn, user["id"], only=UUID(session_id))
            elif session_id and scope == "others":
                await store.delete_sessions(conn, user["id"], keep=UUID(session_id))
            else:
                await store.delete_sessions(conn, user["id"])

    # -- admin ---------------------------------------------------------------------------------

    def require_admin(self, authorization: str | None) -> None:
        """`requireAdminCredentials` (`internal/api/middleware.go`) and `requireAdmin`
        (`internal/api/auth.go`): a verified token whose role is an admin role."""
        claims = self.verify_bearer(authorization)
        if claims.get("role") not in ADMIN_ROLES:
            raise forbidden("not_admin", "User not allowed")

    async def admin_list(
        self, page: str | None, per_page: str | None
    ) -> tuple[dict[str, Any], int]:
        """`GET /admin/users` (`internal/api/admin.go`, `adminUsers`; `pagination.go`)."""
        try:
            number = int(page) if page else 1
            size = int(per_page) if per_page else 50
        except ValueError as exc:
            raise bad_request("validation_failed", f"Bad Pagination Parameters: {exc}") from None
        number, size = max(number, 1), max(size, 1)
        async with self.db.autocommit() as conn:
            rows, total = await store.list_users(conn, AUD, page=number, per_page=size)
            users = [await self.user_json(conn, row) for row in rows]
        return {"users": users, "aud": AUD}, total

    async def admin_create(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """`POST /admin/users` (`internal/api/admin.go`, `adminUserCreate`): no strength check on
        the password (none given: a random one), the email confirmed only if `email_confirm`."""
        email, phone = _text(params, "email"), _text(params, "phone")
        if not email and not phone:
            raise bad_request(
                "validation_failed", "Cannot create a user without either an email or phone"
            )
        if phone:
            raise bad_request("phone_provider_disabled", "Phone signups are disabled")
        email = validate_email(email)
        password = params.get("password")
        if not isinstance(password, str) or not password:
            password = _random_password()
        if len(password.encode()) > MAX_PASSWORD_LENGTH:
            raise bad_request("validation_failed", "bcrypt: password length exceeds 72 bytes")
        user_id = _admin_id(params.get("id"))
        data = params.get("user_metadata")
        password_hash = await hash_password(password)
        async with self.db.service() as conn:
            if await store.email_taken(conn, email):
                raise unprocessable(
                    "email_exists", "A user with this email address has already been registered"
                )
            role = _text(params, "role") or AUD
            user_id = await self._create_user(
                conn,
                email,
                password_hash,
                data if isinstance(data, dict) else {},
                role=role,
                user_id=user_id,
                identity_metadata=False,
            )
            app_metadata = params.get("app_metadata")
            if isinstance(app_metadata, dict):
                await store.merge_metadata(conn, user_id, "raw_app_meta_data", app_metadata)
            if params.get("email_confirm") is True:
                await store.confirm_email(conn, user_id)
            await self._ban(conn, user_id, params.get("ban_duration"))
            return await self._user_json_by_id(conn, user_id)

    async def admin_get(self, user_id: str) -> dict[str, Any]:
        """`GET /admin/users/{id}` (`adminUserGet`, after `loadUser`)."""
        async with self.db.autocommit() as conn:
            return await self.user_json(conn, await self._load_user(conn, user_id))

    async def admin_update(self, user_id: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """`PUT /admin/users/{id}` (`adminUserUpdate`): password (strength checked), email,
        `email_confirm`, role, metadata (merged), `ban_duration`."""
        async with self.db.autocommit() as conn:
            user = await self._load_user(conn, user_id)
        email = _text(params, "email")
        if email:
            email = validate_email(email)
        password = params.get("password")
        password_hash = None
        if isinstance(password, str):
            self.check_password_strength(password)
            password_hash = await hash_password(password)
        columns: dict[str, Any] = {}
        if role := _text(params, "role"):
            columns["role"] = role
        if password_hash is not None:
            columns["encrypted_password"] = password_hash
        if email:
            columns["email"] = email
        async with self.db.service() as conn:
            if columns:
                await store.update_user(conn, user["id"], **columns)
            if params.get("email_confirm") is True:
                await store.confirm_email(conn, user["id"])
            for key, column in (
                ("app_metadata", "raw_app_meta_data"),
                ("user_metadata", "raw_user_meta_data"),
            ):
                if isinstance(params.get(key), dict):
                    await store.merge_metadata(conn, user["id"], column, params[key])
            await self._ban(conn, user["id"], params.get("ban_duration"))
            return await self._user_json_by_id(conn, user["id"])

    async def admin_delete(self, user_id: str) -> None:
        """`DELETE /admin/users/{id}` (`adminUserDelete`), a hard delete: identities, sessions
        (and Parley's rows: their foreign keys cascade) go with the user; a row that refers to
        the user without cascading makes it fail as GoTrue's ("Database error deleting user")."""
        async with self.db.autocommit() as conn:
            user = await self._load_user(conn, user_id)
            try:
                await conn.execute("DELETE FROM auth.users WHERE id = %s", (user["id"],))
            except Exception as exc:  # any refusal of the database: GoTrue's 500
                raise AuthError(500, "unexpected_failure", "Database error deleting user") from exc

    async def ensure_user(
        self, *, user_id: UUID, email: str, password: str, app_metadata: Mapping[str, Any]
    ) -> None:
        """The local stack's demo user: created (or completed, if a plain row exists) confirmed,
        with this password and app metadata."""
        password_hash = await hash_password(password)
        async with self.db.service() as conn:
            existing = await store.user_by_id(conn, user_id)
            if existing is None:
                await self._create_user(conn, email, password_hash, {}, role=AUD, user_id=user_id)
            else:
                await store.update_user(
                    conn,
                    user_id,
                    email=email,
                    aud=AUD,
                    role=AUD,
                    encrypted_password=password_hash,
                )
                if not await store.identities(conn, user_id):
                    await store.insert_identity(
                        conn,
                        user_id=user_id,
                        provider="email",
                        identity_data=_identity_data(user_id, email),
                    )
            await store.merge_metadata(
                conn,
                user_id,
                "raw_app_meta_data",
                {"provider": "email", "providers": ["email"], **app_metadata},
            )
            if existing is None or existing["email_confirmed_at"] is None:
                await store.confirm_email(conn, user_id)

    # -- shared --------------------------------------------------------------------------------

    def check_password_strength(self, password: str) -> None:
        """`checkPasswordStrength` (`internal/api/password.go`): too long is a 400, too short a
        422 `weak_password` with its reasons (no required characters or HIBP here: hosted's
        defaults have neither)."""
        if len(password) > MAX_PASSWORD_LENGTH:
            raise bad_request(
                "validation_failed",
                f"Password cannot be longer than {MAX_PASSWORD_LENGTH} characters",
            )
        if len(password) < self.config.password_min_length:
            raise AuthError(
                422,
                "weak_password",
                f"Password should be at least {self.config.password_min_length} characters.",
                weak_password=["length"],
            )

    async def _create_user(
        self,
        conn: Connection,
        email: str,
        password_hash: str,
        data: Mapping[str, Any],
        *,
        role: str,
        user_id: UUID | None = None,
        identity_metadata: bool = True,
    ) -> UUID:
        """`signupNewUser` / `adminUserCreate`'s insert, with the email identity
        (`createNewIdentity`, `internal/api/external.go`: on sign-up the identity's data joins
        the user's metadata)."""
        user_id = user_id or uuid4()
        identity = {
            **_identity_data(user_id, email),
            **{k: v for k, v in data.items() if k not in ("sub", "email")},
        }
        metadata = {**data, **(_identity_data(user_id, email) if identity_metadata else {})}
        await store.insert_user(
            conn,
            user_id=user_id,
            email=email,
            password_hash=password_hash,
            aud=AUD,
            role=role,
            app_metadata={"provider": "email", "providers": ["email"]},
            user_metadata=metadata,
        )
        await store.insert_identity(conn, user_id=user_id, provider="email", identity_data=identity)
        return user_id

    async def _load_user(self, conn: Connection, user_id: str) -> dict[str, Any]:
        """`loadUser` (`internal/api/admin.go`)."""
        try:
            key = UUID(user_id)
        except ValueError:
            raise not_found("validation_failed", "user_id must be an UUID") from None
        user = await store.user_by_id(conn, key)
        if user is None:
            raise not_found("user_not_found", "User not found")
        return user

    async def _ban(self, conn: Connection, user_id: UUID, duration: Any) -> None:
        if not isinstance(duration, str) or not duration:
            return
        if duration == "none":
            await store.update_user(conn, user_id, banned_until=None)
            return
        seconds = go_duration(duration)
        if seconds is None:
            raise bad_request(
                "validation_failed",
                f'invalid format for ban duration: time: invalid duration "{duration}"',
            )
        await store.update_user(
            conn, user_id, banned_until=store.now() + timedelta(seconds=seconds)
        )

    async def _user_json_by_id(self, conn: Connection, user_id: UUID) -> dict[str, Any]:
        user = await store.user_by_id(conn, user_id)
        assert user is not None
        return await self.user_json(conn, user)

    async def user_json(self, conn: Connection, user: Mapping[str, Any]) -> dict[str, Any]:
        """`models.User` as GoTrue serialises it (`internal/models/user.go`): `omitempty` fields
        only when set, `phone` always (empty when unset), the identities
        (`internal/models/identity.go`)."""
        body: dict[str, Any] = {
            "id": str(user["id"]),
            "aud": user["aud"] or "",
            "role": user["role"] or "",
            "email": user["email"] or "",
        }
        _maybe(body, "email_confirmed_at", user["email_confirmed_at"])
        _maybe(body, "invited_at", user["invited_at"])
        body["phone"] = user["phone"] or ""
        _maybe(body, "phone_confirmed_at", user["phone_confirmed_at"])
        _maybe(body, "confirmation_sent_at", user["confirmation_sent_at"])
        _maybe(body, "confirmed_at", user["confirmed_at"])
        _maybe(body, "last_sign_in_at", user["last_sign_in_at"])
        body["app_metadata"] = user["raw_app_meta_data"] or {}
        body["user_metadata"] = user["raw_user_meta_data"] or {}
        body["identities"] = [
            {
                "identity_id": str(row["id"]),
                "id": row["provider_id"],
                "user_id": str(row["user_id"]),
                "identity_data": row["identity_data"],
                "provider": row["provider"],
                "last_sign_in_at": _time(row["last_sign_in_at"]),
                "created_at": _time(row["created_at"]),
                "updated_at": _time(row["updated_at"]),
                "email": row["email"],
            }
            for row in await store.identities(conn, user["id"])
        ]
        body["created_at"] = _time(user["created_at"])
        body["updated_at"] = _time(user["updated_at"])
        _maybe(body, "banned_until", user["banned_until"])
        _maybe(body, "deleted_at", user["deleted_at"])
        body["is_anonymous"] = bool(user["is_anonymous"])
        return body


async def hash_password(password: str) -> str:
    """bcrypt at GoTrue's cost, off the event loop (it takes tens of milliseconds)."""
    hashed = await asyncio.to_thread(
        bcrypt.hashpw, password.encode(), bcrypt.gensalt(rounds=BCRYPT_COST)
    )
    return hashed.decode()


async def check_password(password: str, password_hash: str) -> bool:
    try:
        return await asyncio.to_thread(bcrypt.checkpw, password.encode(), password_hash.encode())
    except ValueError:  # not a bcrypt hash, or a password bcrypt refuses
        return False


def validate_email(email: str) -> str:
    """`validateEmail` (`internal/api/mail.go`)."""
    if not email:
        raise bad_request("validation_failed", "An email address is required")
    if len(email) > 255:
        raise bad_request("validation_failed", "An email address is too long")
    if not _EMAIL.match(email):
        raise bad_request("validation_failed", "Unable to validate email address: invalid format")
    return email.lower()


_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}


def go_duration(text: str) -> float | None:
    """Go's `time.ParseDuration` for the forms a ban takes (`24h`, `1h30m`, `90s`)."""
    parts = re.findall(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(number) * _GO_UNITS[unit] for number, unit in parts)


def _identity_data(user_id: UUID, email: str) -> dict[str, Any]:
    # provider.Claims{Subject, Email} through structs.Map: the two verified flags are always kept.
    return {"sub": str(user_id), "email": email, "email_verified": False, "phone_verified": False}


def _text(params: Mapping[str, Any], key: str) -> str:
    value = params.get(key)
    return value if isinstance(value, str) else ""


def _banned(user: Mapping[str, Any]) -> bool:
    until = user["banned_until"]
    return until is not None and until > store.now()


def _admin_id(value: Any) -> UUID | None:
    if value in (None, ""):
        return None
    try:
        user_id = UUID(str(value))
    except ValueError:
        raise bad_request("validation_failed", "ID must conform to the uuid v4 format") from None
    if user_id.int == 0:
        raise bad_request("validation_failed", "ID cannot be a nil uuid")
    return user_id


def _random_password() -> str:
    # adminUserCreate generates 64 characters (sethvargo/go-password); bcrypt reads 72 bytes.
    return secrets.token_urlsafe(48)


def _time(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def _maybe(body: dict[str, Any], key: str, value: datetime | None) -> None:
    if value is not None:
        body[key] = _time(value)


__all__ = ["Auth", "AuthError", "Caller"]
