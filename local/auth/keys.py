"""The local project's keys: its JWT signing key (ES256, published as a JWKS) and its API keys.

New Supabase projects sign sessions with an asymmetric key and publish the public half at
`/auth/v1/.well-known/jwks.json`; the local stack does the same with an ES256 (P-256) key kept
in `.parley/auth/signing-key.json`, so tokens outlive a restart. `signing="HS256"` signs with the
legacy JWT secret instead (then the JWKS is empty: GoTrue never publishes an HMAC key,
`internal/api/jwks.go`).

API keys come in both of today's formats: the legacy JWTs (`anon`, `service_role`, HS256 with the
JWT secret, as hosted's and `supabase start`'s) and the opaque `sb_publishable_…` / `sb_secret_…`
keys, which stand for the same two roles.
"""

from __future__ import annotations

import base64
import hmac
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from uuid import UUID, uuid4

import jwt
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm

Signing = Literal["ES256", "HS256"]
TEN_YEARS = 10 * 365 * 24 * 3600


def mint_token(
    secret: str,
    *,
    role: str = "authenticated",
    sub: UUID | str | None = None,
    expires_in: int = 3600,
    extra: Mapping[str, Any] | None = None,
) -> str:
    """An HS256 token like Supabase's legacy ones: the local stack's legacy API keys, and tests'
    hand-made tokens. Sessions come from the Auth twin (`local.auth`), not from here."""
    now = int(time.time())
    claims: dict[str, Any] = {
        "iss": "parley-local",
        "role": role,
        "iat": now,
        "exp": now + expires_in,
    }
    if role == "authenticated":
        claims["aud"] = "authenticated"
    if sub is not None:
        claims["sub"] = str(sub)
    claims.update(extra or {})
    return jwt.encode(claims, secret, algorithm="HS256")


class SigningKey:
    """Signs the twin's access tokens: ES256 with a key id, or HS256 with the JWT secret."""

    def __init__(self, signing: Signing, *, secret: str, private_jwk: Mapping[str, Any] | None):
        self.algorithm: Signing = signing
        self._secret = secret
        self._private: ec.EllipticCurvePrivateKey | None = None
        self._public: ec.EllipticCurvePublicKey | None = None
        self.kid: str | None = None
        self._jwks: dict[str, Any] = {"keys": []}
        if signing == "ES256":
            jwk = dict(private_jwk or _new_private_jwk())
            key = ECAlgorithm.from_jwk(json.dumps(jwk))
            if not isinstance(key, ec.EllipticCurvePrivateKey):
                raise ValueError("the signing key file holds no EC private key")
            self._private, self._public, self.kid = key, key.public_key(), str(jwk["kid"])
            public = json.loads(ECAlgorithm.to_jwk(self._public))
            self._jwks = {
                "keys": [
                    {
                        **public,
                        "kid": self.kid,
                        "alg": "ES256",
                        "use": "sig",
                        "key_ops": ["verify"],
                        "ext": True,
                    }
                ]
            }

    @classmethod
    def load(cls, signing: Signing, *, secret: str, path: Path | None) -> SigningKey:
        """The key at `path` (made there on first use); `path=None`: a new key, in memory."""
        if signing == "HS256" or path is None:
            return cls(signing, secret=secret, private_jwk=None)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(_new_private_jwk()))
            path.chmod(0o600)
        return cls(signing, secret=secret, private_jwk=json.loads(path.read_text()))

    def sign(self, claims: Mapping[str, Any]) -> str:
        if self._private is None:
            return jwt.encode(dict(claims), self._secret, algorithm="HS256")
        return jwt.encode(dict(claims), self._private, algorithm="ES256", headers={"kid": self.kid})

    def jwks(self) -> dict[str, Any]:
        """`{"keys": [...]}`: the public key with `kid`, `alg` and `use`, as GoTrue publishes it
        (none for HS256)."""
        return self._jwks

    def verification_key(
        self, algorithm: str, kid: object
    ) -> str | ec.EllipticCurvePublicKey | None:
        """The key that checks a token with this header's `alg` and `kid`: the JWT secret for
        HS256, the public key for ES256 with this key's id; None for any other."""
        if algorithm == "HS256":
            return self._secret
        if algorithm == "ES256" and self._public is not None and kid == self.kid:
            return self._public
        return None


def _new_private_jwk() -> dict[str, Any]:
    key = ec.generate_private_key(ec.SECP256R1())
    return {**json.loads(ECAlgorithm.to_jwk(key)), "kid": str(uuid4()), "alg": "ES256"}


@dataclass(frozen=True, slots=True)
class ApiKeys:
    """The project's four API keys: the opaque ones and the legacy JWTs, two per role."""

    publishable: str
    secret: str
    anon: str
    service_role: str

    @classmethod
    def derive(cls, jwt_secret: str) -> ApiKeys:
        """The project's keys for one JWT secret: opaque keys derived from it, the same on
        every start (HMAC-SHA256; no more secret than the JWT secret, which already signs the
        service_role key), and legacy JWT keys signed with it, minted anew at each start
        (`iat` is now; valid ten years, so an earlier start's still verify)."""

        def opaque(kind: str) -> str:
            digest = hmac.new(jwt_secret.encode(), f"parley {kind} key".encode(), "sha256")
            return f"sb_{kind}_{base64.urlsafe_b64encode(digest.digest()).decode()[:32]}"

        return cls(
            publishable=opaque("publishable"),
            secret=opaque("secret"),
            anon=mint_token(jwt_secret, role="anon", expires_in=TEN_YEARS),
            service_role=mint_token(jwt_secret, role="service_role", expires_in=TEN_YEARS),
        )

    def opaque(self) -> dict[str, str]:
        """The opaque keys and the role each stands for (Realtime's `api_keys`)."""
        return {self.publishable: "anon", self.secret: "service_role"}

    def legacy_for(self, opaque: str) -> str | None:
        """The legacy JWT an opaque key stands for (what the gateway hands the service)."""
        return {self.publishable: self.anon, self.secret: self.service_role}.get(opaque)
