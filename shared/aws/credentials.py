"""Where the AWS credentials Parley signs with come from, without boto3.

A Lambda function finds its execution role's credentials one of two ways:

* **in its environment** (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`):
  every function without SnapStart. They last as long as the execution environment.
* **from a credentials endpoint** (`AWS_CONTAINER_CREDENTIALS_FULL_URI`, with
  `AWS_CONTAINER_AUTHORIZATION_TOKEN` — or `…_TOKEN_FILE` — as its `Authorization` header):
  a function with SnapStart, whose snapshot must not hold credentials that expire while it
  waits to be restored. The endpoint answers `{"AccessKeyId", "SecretAccessKey", "Token",
  "Expiration"}`; the credentials are fetched when first needed and again before they expire
  (`REFRESH_SECONDS`). After a restore none cached before the snapshot is used: the hooks
  (`shared.runtime.snapstart`) drop the queue sender, and with it its `ContainerCredentials`.

Which way, and in that order, is botocore's (`EnvProvider` before `ContainerProvider`,
botocore/credentials.py), and so is what the endpoint may be: HTTPS, a loopback address, or
one of the container hosts AWS names (`ContainerMetadataFetcher._ALLOWED_HOSTS`,
botocore/utils.py) — a token sent anywhere else could be read on the way. The region is
`AWS_REGION` (else `AWS_DEFAULT_REGION`). AWS documents the endpoint for SDKs at
https://docs.aws.amazon.com/sdkref/latest/guide/feature-container-credentials.html and
SnapStart's use of it at https://docs.aws.amazon.com/lambda/latest/dg/snapstart-activate.html.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from ipaddress import ip_address
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

from shared.aws.sigv4 import Credentials

FULL_URI = "AWS_CONTAINER_CREDENTIALS_FULL_URI"
TOKEN = "AWS_CONTAINER_AUTHORIZATION_TOKEN"
TOKEN_FILE = "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"
CONTAINER_HOSTS = frozenset({"169.254.170.2", "169.254.170.23", "fd00:ec2::23", "localhost"})
REFRESH_SECONDS = 600.0
"""Credentials this close to their `Expiration` are fetched again (botocore: 10 minutes)."""
TIMEOUT_SECONDS = 2.0
ATTEMPTS = 3


class CredentialsUnavailable(Exception):
    """The credentials endpoint could not be read, or answered something unusable."""


class CredentialSource(Protocol):
    """What a request is signed with, now (`Credentials`, or `ContainerCredentials`)."""

    def current(self) -> Credentials:
        """Credentials good for a request made now; raises `CredentialsUnavailable`."""
        ...

    def forget(self) -> None:
        """Drop what is cached: the next `current()` reads the credentials afresh."""
        ...


Fetch = Callable[[str, Mapping[str, str], float], tuple[int, bytes]]
"""GET `url` with `headers` and a timeout: (status, body). `OSError` when unreachable."""


class ContainerCredentials:
    """Credentials read from the runtime's credentials endpoint, refreshed before they expire."""

    def __init__(
        self,
        uri: str,
        region: str,
        *,
        token: str | None = None,
        token_file: str | None = None,
        fetch: Fetch | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        check_endpoint(uri)
        self.uri = uri
        self.region = region
        self._token = token
        self._token_file = token_file
        self._fetch = fetch or http_get
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._cached: tuple[Credentials, datetime] | None = None

    def current(self) -> Credentials:
        with self._lock:
            cached = self._cached
            if cached is None or (cached[1] - self._clock()).total_seconds() < REFRESH_SECONDS:
                self._cached = cached = self._read()
            return cached[0]

    def forget(self) -> None:
        with self._lock:
            self._cached = None

    def _read(self) -> tuple[Credentials, datetime]:
        headers = {"Accept": "application/json"}
        if (token := self._authorization()) is not None:
            headers["Authorization"] = token
        failure = ""
        for attempt in range(1, ATTEMPTS + 1):
            try:
                status, body = self._fetch(self.uri, headers, TIMEOUT_SECONDS)
            except OSError as exc:
                failure = f"{type(exc).__name__}: {exc}"
            else:
                if status == 200:
                    return self._parse(body)
                failure = f"HTTP {status}"
            if attempt < ATTEMPTS:
                self._sleep(0.1 * attempt)
        raise CredentialsUnavailable(f"the credentials endpoint failed ({failure})")

    def _authorization(self) -> str | None:
        token = Path(self._token_file).read_text() if self._token_file else self._token
        if token is not None and ("\r" in token or "\n" in token):
            raise CredentialsUnavailable(f"{TOKEN} is not a legal header value")
        return token

    def _parse(self, body: bytes) -> tuple[Credentials, datetime]:
        try:
            found = json.loads(body)
            credentials = Credentials(
                found["AccessKeyId"], found["SecretAccessKey"], self.region, found.get("Token")
            )
            expires = datetime.fromisoformat(found["Expiration"].replace("Z", "+00:00"))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise CredentialsUnavailable(
                f"the credentials endpoint answered no usable credentials ({type(exc).__name__})"
            ) from None
        return credentials, expires


def from_environment(environ: Mapping[str, str]) -> CredentialSource | None:
    """The credentials the environment points to (keys first, then the endpoint), or None —
    also when no region is set: requests are signed for one."""
    keys = Credentials.from_environment(environ)
    if keys is not None:
        return keys
    region = environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION")
    uri = environ.get(FULL_URI)
    if not (uri and region):
        return None
    return ContainerCredentials(
        uri, region, token=environ.get(TOKEN), token_file=environ.get(TOKEN_FILE) or None
    )


def check_endpoint(uri: str) -> None:
    """Refuse an endpoint a token could be read on the way to (botocore's rule)."""
    parts = urlsplit(uri)
    host = parts.hostname or ""
    if parts.scheme == "https" or host in CONTAINER_HOSTS:
        return
    try:
        if ip_address(host).is_loopback:
            return
    except ValueError:
        pass
    raise CredentialsUnavailable(
        f"{FULL_URI} must use https, a loopback address or one of "
        f"{', '.join(sorted(CONTAINER_HOSTS))}; not {host!r}"
    )


def http_get(url: str, headers: Mapping[str, str], timeout: float) -> tuple[int, bytes]:
    """GET over `http.client` (the endpoint is local: no proxy, the process's TLS settings)."""
    from shared.aws.stdlib_http import exchange  # only for the endpoint

    return exchange("GET", url, headers, None, timeout)
