"""JWT verification: HS256 with the project secret, RS256 through a JWKS served over HTTP."""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from uuid import uuid4

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from local.auth.keys import mint_token
from shared.auth.access_tokens import (
    InvalidClaims,
    InvalidSignature,
    MalformedToken,
    TokenExpired,
    TokenVerifier,
)
from shared.kernel.errors import ConfigurationError, UpstreamUnavailable

SECRET = "test-secret-with-at-least-thirty-two-characters"


def test_user_token_gives_identity() -> None:
    user = uuid4()
    identity = TokenVerifier(secret=SECRET).identity(
        mint_token(SECRET, sub=user), audience="authenticated"
    )
    assert (identity.role, identity.user_id, identity.is_service) == ("authenticated", user, False)


def test_service_key_has_no_user() -> None:
    identity = TokenVerifier(secret=SECRET).identity(mint_token(SECRET, role="service_role"))
    assert identity.is_service and identity.user_id is None


@pytest.mark.parametrize(
    ("token", "error", "message"),
    [
        (mint_token(SECRET, sub=uuid4(), expires_in=-120), TokenExpired, "expired"),
        (
            mint_token("another-secret-of-at-least-32-characters!", sub=uuid4()),
            InvalidSignature,
            "signature",
        ),
        ("not.a.jwt", MalformedToken, "not a valid JWT"),
        (jwt.encode({"sub": "x"}, SECRET, algorithm="HS256"), InvalidClaims, "exp"),
        (
            jwt.encode(
                {"exp": time.time() + 3600, "aud": "authenticated"}, SECRET, algorithm="HS256"
            ),
            InvalidClaims,
            "role",
        ),
        (mint_token(SECRET, role="anon"), InvalidClaims, "aud"),
        (mint_token(SECRET, sub="not-a-uuid"), InvalidClaims, "UUID"),
    ],
)
def test_bad_tokens_are_refused(token: str, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        TokenVerifier(secret=SECRET).identity(token, audience="authenticated")


def test_unsigned_token_is_refused() -> None:
    token = jwt.encode({"role": "service_role", "exp": time.time() + 60}, "", algorithm="none")
    with pytest.raises(InvalidSignature, match="'none'"):
        TokenVerifier(secret=SECRET).verify(token)


@pytest.mark.parametrize(
    "header",
    [
        {"alg": "HS256", "kid": {"x": 1}},
        {"alg": "HS256", "crit": ["exp"]},
        {"alg": "HS256", "crit": 5},
    ],
    ids=["kid not a string", "crit naming a claim", "crit not a list"],
)
def test_a_header_pyjwt_refuses_is_a_malformed_token(header: dict[str, object]) -> None:
    encoded = base64.urlsafe_b64encode(json.dumps(header).encode()).rstrip(b"=").decode()
    with pytest.raises(MalformedToken, match="not a valid JWT"):
        TokenVerifier(secret=SECRET).verify(f"{encoded}.e30.c2ln")


def test_no_key_source_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="SUPABASE_JWT_SECRET"):
        TokenVerifier()


@pytest.fixture(scope="module")
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def jwks_url(rsa_key: rsa.RSAPrivateKey) -> Iterator[str]:
    public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(rsa_key.public_key()))
    body = json.dumps({"keys": [{**public, "kid": "key-1", "alg": "RS256", "use": "sig"}]})
    with _serving(body.encode(), "application/json") as url:
        yield url


@contextmanager
def _serving(body: bytes, content_type: str) -> Iterator[str]:
    """A JWKS URL answering `body` to every GET."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/auth/v1/.well-known/jwks.json"
    finally:
        server.shutdown()
        server.server_close()


def _rs256(key: rsa.RSAPrivateKey, kid: str, **claims: object) -> str:
    base = {"role": "authenticated", "aud": "authenticated", "exp": int(time.time()) + 60}
    return jwt.encode({**base, **claims}, key, algorithm="RS256", headers={"kid": kid})


def test_asymmetric_token_verifies_through_jwks(rsa_key: rsa.RSAPrivateKey, jwks_url: str) -> None:
    user = uuid4()
    identity = TokenVerifier(jwks_url=jwks_url).identity(
        _rs256(rsa_key, "key-1", sub=str(user)), audience="authenticated"
    )
    assert identity.user_id == user


def test_unknown_key_id_is_refused(rsa_key: rsa.RSAPrivateKey, jwks_url: str) -> None:
    with pytest.raises(InvalidSignature, match="signing key"):
        TokenVerifier(jwks_url=jwks_url).verify(_rs256(rsa_key, "key-2", sub=str(uuid4())))


def test_unreachable_signing_keys_are_not_blamed_on_the_token(rsa_key: rsa.RSAPrivateKey) -> None:
    """A JWKS that cannot be fetched is the server's trouble (502), not a bad token (401, which
    a frontend would answer by signing its user out)."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    verifier = TokenVerifier(jwks_url=f"http://127.0.0.1:{port}/auth/v1/.well-known/jwks.json")
    with pytest.raises(UpstreamUnavailable, match="signing keys could not be fetched"):
        verifier.verify(_rs256(rsa_key, "key-1", sub=str(uuid4())))


@pytest.mark.parametrize(
    ("body", "content_type"),
    [(b"<html>502 Bad Gateway</html>", "text/html"), (b'{"keys": []}', "application/json")],
    ids=["not JSON", "no keys"],
)
def test_unreadable_signing_keys_are_not_blamed_on_the_token(
    rsa_key: rsa.RSAPrivateKey, body: bytes, content_type: str
) -> None:
    unreadable = pytest.raises(UpstreamUnavailable, match="signing keys could not be fetched")
    with _serving(body, content_type) as url, unreadable:
        TokenVerifier(jwks_url=url).verify(_rs256(rsa_key, "key-1", sub=str(uuid4())))


def test_hmac_token_is_not_checked_against_jwks(jwks_url: str) -> None:
    with pytest.raises(InvalidSignature, match="HS256"):
        TokenVerifier(jwks_url=jwks_url).verify(mint_token(SECRET, sub=uuid4()))
