"""Token checks with the hosted server's rules and messages.

`shared.auth.access_tokens.TokenVerifier` does the cryptography; this module adds Realtime's rules
(`role` and a numeric `exp` required, no leeway) and phrases each failure the way Supabase Realtime
does at the three places a token is checked: the websocket upgrade (HTTP 401 + `{"error": msg}`), a
channel join (reply `{"reason": "Code: msg"}`) and a token refresh on a joined channel (`system`
error).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

import jwt

from shared.auth.access_tokens import (
    InvalidClaims,
    InvalidSignature,
    MalformedToken,
    TokenError,
    TokenExpired,
    TokenVerifier,
)

Claims = dict[str, Any]

#: A year of validity for the claims an opaque API key stands for.
_OPAQUE_KEY_LIFETIME = 365 * 24 * 3600


class TokenRejected(Exception):
    """A token Realtime refuses, phrased for each place it can be refused."""

    def __init__(self, code: str, message: str, connect_message: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        """The join error code, e.g. `InvalidJWTToken`."""
        self.message = message
        """What a joined channel is told (`system` error); also the join reason's text."""
        self.connect_message = connect_message or message
        """What a refused websocket upgrade says."""

    @property
    def join_reason(self) -> str:
        return f"{self.code}: {self.message}"


def missing() -> TokenRejected:
    return TokenRejected("MissingAPIKey", "API key is missing")


def malformed() -> TokenRejected:
    return TokenRejected("MalformedJWT", "The token provided is not a valid JWT")


def bad_signature() -> TokenRejected:
    return TokenRejected("JwtSignatureError", "Failed to validate JWT signature")


def missing_claims() -> TokenRejected:
    return TokenRejected("InvalidJWTToken", "Fields `role` and `exp` are required in JWT")


def expired(token: str) -> TokenRejected:
    """`Token has expired N seconds ago`, N read from the (unverified) `exp`."""
    try:
        exp = jwt.decode(token, options={"verify_signature": False})["exp"]
        ago = max(0, int(time.time()) - int(exp))
    except (jwt.InvalidTokenError, KeyError, TypeError, ValueError):
        ago = 0
    return TokenRejected(
        "InvalidJWTToken", f"Token has expired {ago} seconds ago", "Token has expired"
    )


class Authenticator:
    """Verifies the tokens clients present (API keys, user sessions) and returns their claims."""

    def __init__(
        self,
        verifier: TokenVerifier,
        *,
        api_keys: Mapping[str, str] | None = None,
        blocking: bool = False,
    ) -> None:
        self._verifier = verifier
        self._api_keys = dict(api_keys or {})
        self._blocking = blocking
        """True when verifying may fetch a JWKS over HTTP: then it runs off the event loop."""

    @classmethod
    def create(
        cls, *, secret: str | None, jwks_url: str | None, api_keys: Mapping[str, str] | None = None
    ) -> Authenticator:
        """An authenticator with no clock leeway, like the hosted server."""
        verifier = TokenVerifier(secret=secret, jwks_url=jwks_url, leeway_seconds=0)
        return cls(verifier, api_keys=api_keys, blocking=jwks_url is not None)

    async def claims(self, token: object) -> Claims:
        """The verified claims of `token`, or `TokenRejected`."""
        if not isinstance(token, str) or not token:
            raise missing()
        if token in self._api_keys:
            role = self._api_keys[token]
            return {
                "role": role,
                "iss": "parley-local",
                "exp": int(time.time()) + _OPAQUE_KEY_LIFETIME,
            }
        if self._blocking:
            return await asyncio.to_thread(self._verify, token)
        return self._verify(token)

    def _verify(self, token: str) -> Claims:
        try:
            claims = self._verifier.verify(token)
        except TokenExpired:
            raise expired(token) from None
        except MalformedToken:
            raise malformed() from None
        except InvalidSignature:
            raise bad_signature() from None
        except (InvalidClaims, TokenError):
            raise missing_claims() from None
        if not isinstance(claims.get("exp"), int | float):
            raise missing_claims()
        if claims["exp"] <= time.time():
            raise expired(token)
        return claims
