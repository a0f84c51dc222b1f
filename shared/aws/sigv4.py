"""AWS Signature Version 4 for one request, with the standard library (`hmac`, `hashlib`).

The signer of Parley's own AWS calls (`shared.queues.sqs_http`: SQS sends; `shared.aws.secrets`:
Secrets Manager at init), made without boto3 (why: `sqs_http`'s docstring). It computes what
`botocore.auth.SigV4Auth.add_auth` adds to a request — the `X-Amz-Date`,
`X-Amz-Security-Token` (with temporary credentials) and `Authorization` headers — for a request
with no query string whose body is signed (SHA-256), as every JSON-protocol call is. The steps
are AWS's: https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv.html

Checked two ways: against AWS's own SigV4 test suite (`tests/aws/test_sigv4.py`: every case
without a query string), and byte for byte against botocore's output
(`tests/aws/test_sqs_http.py`).

* **Paths are signed as given, never normalised.** The canonical URI is the request's path
  percent-encoded once (every byte but the unreserved `A-Za-z0-9-._~` and `/`); `.` and `..`
  segments and repeated slashes stay as they are, where the suite's `normalize-path` cases (and
  botocore, for services other than S3) would resolve them. Parley signs only `POST /`, where
  the two agree; a caller with another path must send exactly the path it signed.
* **Repeated headers** are one entry of `headers`, their values joined by commas in the order
  sent (the suite's `get-header-key-duplicate` and `get-header-value-order`).
* **Temporary credentials' token is signed** (`X-Amz-Security-Token` is in `SignedHeaders`),
  as botocore does and the suite's `post-sts-header-before` case shows.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import quote, urlsplit

ALGORITHM = "AWS4-HMAC-SHA256"
UNSIGNED_HEADERS = frozenset(
    {
        "baggage",
        "connection",
        "expect",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "traceparent",
        "tracestate",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "user-agent",
        "x-amzn-trace-id",
    }
)
"""Headers botocore leaves out of the signature (hop-by-hop ones, and what proxies change)."""
DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True, slots=True)
class Credentials:
    """An access key, its secret and (for temporary credentials) the session token, and the
    region requests are signed for. The secret and the token never appear in its repr.

    As a `CredentialSource` (`shared.aws.credentials`) it is its own current value."""

    access_key: str
    secret_key: str = field(repr=False)
    region: str
    session_token: str | None = field(default=None, repr=False)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> Credentials | None:
        """The credentials the Lambda runtime always sets (`AWS_ACCESS_KEY_ID`,
        `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`, else
        `AWS_DEFAULT_REGION`); None when the key, its secret or the region is missing."""
        access_key = environ.get("AWS_ACCESS_KEY_ID")
        secret_key = environ.get("AWS_SECRET_ACCESS_KEY")
        region = environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION")
        if not (access_key and secret_key and region):
            return None
        token = environ.get("AWS_SESSION_TOKEN") or None
        return cls(access_key, secret_key, region, token)

    def current(self) -> Credentials:
        return self

    def redact(self, text: str) -> str:
        """`text` with the secret key and the session token cut out (an answer refusing a
        signature quotes the canonical request, token included)."""
        for secret in (self.secret_key, self.session_token):
            if secret:
                text = text.replace(secret, "[redacted]")
        return text

    def forget(self) -> None:
        """Nothing to forget: these never expire while the process lives."""


def host_of(url: str) -> str:
    """The `Host` a request to `url` is signed with (and must carry): lowercase, without a
    default port or user info (botocore's `_host_from_url`)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    if parts.port is not None and parts.port != DEFAULT_PORTS.get(parts.scheme):
        host = f"{host}:{parts.port}"
    return host


def sign(
    credentials: Credentials,
    *,
    service: str,
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes,
    now: datetime,
) -> dict[str, str]:
    """The headers that sign this request at `now` (UTC): `X-Amz-Date`, the session token
    when there is one, and `Authorization`. `headers` are the request's own (a `Host` is
    derived from `url` when they have none); every one but `UNSIGNED_HEADERS` is signed."""
    parts = urlsplit(url)
    if parts.query:
        raise ValueError("this signer signs requests without a query string")
    timestamp = now.strftime("%Y%m%dT%H%M%SZ")
    added = {"X-Amz-Date": timestamp}
    if credentials.session_token:
        added["X-Amz-Security-Token"] = credentials.session_token
    signed = _canonical_headers({**headers, **added}, url)
    names = ";".join(signed)
    canonical_request = "\n".join(
        (
            method.upper(),
            quote(parts.path or "/", safe="/~"),
            "",
            "".join(f"{name}:{value}\n" for name, value in signed.items()),
            names,
            hashlib.sha256(body).hexdigest(),
        )
    )
    scope = f"{timestamp[:8]}/{credentials.region}/{service}/aws4_request"
    string_to_sign = "\n".join(
        (ALGORITHM, timestamp, scope, hashlib.sha256(canonical_request.encode()).hexdigest())
    )
    signature = hmac.new(
        _signing_key(credentials, timestamp[:8], service), string_to_sign.encode(), hashlib.sha256
    ).hexdigest()
    added["Authorization"] = (
        f"{ALGORITHM} Credential={credentials.access_key}/{scope}, SignedHeaders={names}, "
        f"Signature={signature}"
    )
    return added


def _canonical_headers(headers: Mapping[str, str], url: str) -> dict[str, str]:
    """Signed header names (lowercase, sorted) → values with their runs of blanks made one."""
    found: dict[str, list[str]] = {}
    for name, value in headers.items():
        if (lower := name.lower()) not in UNSIGNED_HEADERS:
            found.setdefault(lower, []).append(" ".join(value.split()))
    if "host" not in found:
        found["host"] = [host_of(url)]
    return {name: ",".join(found[name]) for name in sorted(found)}


def _signing_key(credentials: Credentials, date: str, service: str) -> bytes:
    key = f"AWS4{credentials.secret_key}".encode()
    for part in (date, credentials.region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return key
