"""HTTP over the standard library's `http.client`, for Parley's own AWS calls: the
credentials endpoint (`shared.aws.credentials`), Secrets Manager at init (`shared.aws.secrets`)
and SQS sends (`shared.queues.sqs_http`). No proxy, no HTTP library to import (why: the
`sqs_http` docstring); HTTPS with the process's TLS settings (`shared.kernel.tls.tls_context`).
"""

from __future__ import annotations

from collections.abc import Mapping
from http.client import HTTPConnection, HTTPSConnection
from urllib.parse import urlsplit

from shared.kernel.tls import tls_context


def connect(url: str, timeout: float) -> HTTPConnection:
    """A connection to `url`'s host and port (a URL or an origin, `scheme://host[:port]`),
    opened by its first request; `timeout` bounds connecting and each read."""
    parts = urlsplit(url)
    if parts.scheme == "https":
        return HTTPSConnection(
            parts.hostname or "", parts.port, timeout=timeout, context=tls_context()
        )
    return HTTPConnection(parts.hostname or "", parts.port, timeout=timeout)


def exchange(
    method: str, url: str, headers: Mapping[str, str], body: bytes | None, timeout: float
) -> tuple[int, bytes]:
    """One request on a connection of its own, closed after: (status, body). Raises `OSError`
    when the host cannot be reached, `http.client.HTTPException` for a garbled answer."""
    parts = urlsplit(url)
    path = parts.path or "/"
    connection = connect(url, timeout)
    try:
        connection.request(
            method,
            f"{path}?{parts.query}" if parts.query else path,
            body=body,
            headers=dict(headers),
        )
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()
