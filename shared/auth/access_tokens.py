"""Supabase JWTs: verify them (HS256 project secret, or JWKS for asymmetric keys).

Supabase signs user sessions (`role: authenticated`, `aud: authenticated`) and its API keys
(`role: anon` / `service_role`) as JWTs. Projects on the legacy JWT secret use HS256; projects on
the new signing keys use RS256/ES256, published at `{SUPABASE_URL}/auth/v1/.well-known/jwks.json`.
The algorithm family is chosen by the key source, never by the token alone: an HS* token is only
checked against the secret and an asymmetric one only against the JWKS, which rules out
algorithm-confusion attacks.
"""

from collections.abc import Mapping
from typing import Any, NamedTuple
from uuid import UUID

import jwt

from shared.kernel.errors import ConfigurationError, Unauthenticated, UpstreamUnavailable
from shared.kernel.tls import tls_context

HMAC_ALGORITHMS = ("HS256", "HS384", "HS512")
ASYMMETRIC_ALGORITHMS = ("RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "EdDSA")
JWKS_TIMEOUT_SECONDS = 5.0
"""Longest wait for the project's signing keys (Supabase serves them from its edge)."""


class TokenError(Unauthenticated):
    """A bearer token was rejected."""


class MalformedToken(TokenError):
    """Not a JWT at all."""


class InvalidSignature(TokenError):
    """A JWT whose signature (or algorithm, or key id) does not verify."""


class TokenExpired(TokenError):
    """A JWT past its `exp`."""


class InvalidClaims(TokenError):
    """A JWT lacking required claims, or with the wrong audience."""


class Identity(NamedTuple):
    """Who a verified token speaks for."""

    role: str
    """`authenticated`, `anon` or `service_role`."""
    user_id: UUID | None
    """The `sub` of a user token; None for API keys."""
    claims: Mapping[str, Any]
    """All verified claims (passed on as `request.jwt.claims` so RLS sees them)."""

    @property
    def is_service(self) -> bool:
        return self.role == "service_role"


class User(NamedTuple):
    """A signed-in user, as proven by a verified access token."""

    id: UUID
    claims: Mapping[str, Any]
    """The token's claims; units of work pass them on so RLS can use `auth.jwt()`."""


class TokenVerifier:
    """Verifies Supabase JWTs against the project's secret and/or JWKS."""

    def __init__(
        self,
        *,
        secret: str | None = None,
        jwks_url: str | None = None,
        leeway_seconds: int = 30,
    ) -> None:
        if not secret and not jwks_url:
            raise ConfigurationError(
                "No way to verify tokens: set SUPABASE_JWT_SECRET (Project settings → API → "
                "JWT secret) or SUPABASE_URL / SUPABASE_JWKS_URL for asymmetric signing keys."
            )
        self._secret = secret
        self._jwks_url = jwks_url
        self._jwks: jwt.PyJWKClient | None = None
        """The project's published keys, fetched for the first token that needs them."""
        self._leeway = leeway_seconds

    def verify(self, token: str, *, audience: str | None = None) -> dict[str, Any]:
        """The token's claims, if its signature, `exp` and (when given) `aud` all hold.

        Like Supabase Realtime, a token must carry `role` and a numeric `exp`.
        """
        key, algorithms = self._key_for(token)
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=algorithms,
                audience=audience,
                leeway=self._leeway,
                options={"require": ["exp"], "verify_aud": audience is not None},
            )
        except jwt.ExpiredSignatureError as exc:
            raise TokenExpired("Token has expired") from exc
        except jwt.InvalidSignatureError as exc:
            raise InvalidSignature("Failed to validate JWT signature") from exc
        except (jwt.MissingRequiredClaimError, jwt.InvalidAudienceError) as exc:
            raise InvalidClaims(f"Invalid token claims: {exc}") from exc
        except jwt.DecodeError as exc:
            raise MalformedToken("The token provided is not a valid JWT") from exc
        except jwt.InvalidTokenError as exc:
            raise InvalidClaims(f"Invalid token: {exc}") from exc
        if not isinstance(claims.get("role"), str):
            raise InvalidClaims("Fields `role` and `exp` are required in JWT")
        return claims

    def identity(self, token: str, *, audience: str | None = None) -> Identity:
        """Verify `token` and say who it is; user tokens must name a UUID `sub`."""
        claims = self.verify(token, audience=audience)
        role = str(claims["role"])
        user_id: UUID | None = None
        if role == "authenticated":
            try:
                user_id = UUID(str(claims.get("sub")))
            except ValueError as exc:
                raise InvalidClaims("A user token needs a UUID `sub` claim") from exc
        return Identity(role=role, user_id=user_id, claims=claims)

    def user(self, token: str, *, audience: str = "authenticated") -> User:
        """Verify a user's access token (not an API key) and return the user."""
        identity = self.identity(token, audience=audience)
        if identity.user_id is None:
            raise InvalidClaims("This needs a user's access token, not an API key")
        return User(identity.user_id, identity.claims)

    def _key_for(self, token: str) -> tuple[Any, tuple[str, ...]]:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError as exc:  # not decodable, or a header PyJWT refuses
            raise MalformedToken("The token provided is not a valid JWT") from exc
        algorithm = header.get("alg")
        if algorithm in HMAC_ALGORITHMS and self._secret:
            return self._secret, HMAC_ALGORITHMS
        if algorithm in ASYMMETRIC_ALGORITHMS and self._jwks_url:
            return self._signing_key(token, self._jwks_url), ASYMMETRIC_ALGORITHMS
        raise InvalidSignature(f"Tokens signed with {algorithm!r} are not accepted here")

    def _signing_key(self, token: str, jwks_url: str) -> Any:
        """The key published at `jwks_url` that `token` names, fetched when not yet seen: over
        the process's TLS settings, waiting at most `JWKS_TIMEOUT_SECONDS` (PyJWT's default is
        30 s, which the request would spend waiting). Keys that cannot be fetched or read are
        the server's trouble (`UpstreamUnavailable`, 502), not the token's: a 401 would sign
        the user out."""
        if self._jwks is None:
            self._jwks = jwt.PyJWKClient(
                jwks_url, cache_keys=True, timeout=JWKS_TIMEOUT_SECONDS, ssl_context=tls_context()
            )
        try:
            return self._jwks.get_signing_key_from_jwt(token).key
        except (jwt.PyJWKClientConnectionError, jwt.PyJWKSetError, ValueError) as exc:
            raise UpstreamUnavailable(  # unreachable, no usable keys, or not JSON
                f"The project's signing keys could not be fetched; try again ({exc})"
            ) from exc
        except jwt.PyJWKClientError as exc:
            raise InvalidSignature(f"No signing key matches this token: {exc}") from exc
