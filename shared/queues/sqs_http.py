"""SQS `SendMessage` without boto3: SQS's JSON protocol over `http.client`, signed with SigV4.

Why hand-written: cold start. On `POST /chat` the deployed chat function
(`INVOKER_TRANSPORT=sqs`) needs AWS for one thing, putting "run plan" on the planner's queue.
Through boto3, the first `202` of every new Lambda environment paid ~175 ms for `import boto3`
and building an SQS client (a warm `202` takes ~8 ms). No library is light enough: botocore's
`auth` module alone takes ~100 ms to import, `httpx` ~70 ms. This sender needs only the
standard library (`http.client`, `hmac`, `hashlib`, `json`) and sends one kind of request.
Its signature (`shared.queues.sigv4`) is checked byte for byte against botocore's
`SigV4Auth`, and its requests end to end against moto's SQS server, in
`tests/aws/test_sqs_http.py`.

The request: `POST /` to the queue URL's scheme and host (`https://sqs.<region>.amazonaws.com`
on AWS; moto's server names itself in its queue URLs), `X-Amz-Target: AmazonSQS.SendMessage`,
`Content-Type: application/x-amz-json-1.0`, the body `{"QueueUrl": ..., "MessageBody": ...}`,
signed for the service `sqs` in the credentials' region. The answer's `MD5OfMessageBody` is
checked against the body sent, as boto3 does.

A sender keeps one keep-alive connection (`Services` holds one sender per process) and sends
one request at a time on it, under a lock. A kept connection that the server has closed
meanwhile fails on its next request; that request is sent once more on a new connection (were
it a duplicate, no harm: delivery is at least once and every consumer is idempotent). One left
idle for more than `IDLE_SECONDS` (a Lambda frozen between requests) is not reused at all: it
may have been dropped without a word, and a request on it would only fail after the read
timeout. Connecting and each read wait at most `TIMEOUT_SECONDS`. Every failure raises
`QueueSendFailed`, naming AWS's error code and message or the network failure — never the
credentials.
"""

from __future__ import annotations

import hashlib
import json
import ssl
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from http.client import HTTPConnection, HTTPException, HTTPSConnection
from typing import Any
from urllib.parse import urlsplit

from shared.queues.senders import QueueSendFailed
from shared.queues.sigv4 import Credentials, host_of, sign

TIMEOUT_SECONDS = 5.0
"""Longest wait to connect, and for each read of SQS's answer."""
IDLE_SECONDS = 50.0
"""A kept connection idle for longer is replaced (load balancers drop idle ones after ~60 s)."""
TARGET = "AmazonSQS.SendMessage"
CONTENT_TYPE = "application/x-amz-json-1.0"


def utc_now() -> datetime:
    return datetime.now(UTC)


class SqsHttpSender:
    """Sends SQS messages with `credentials` over one kept connection (a `QueueSender`)."""

    def __init__(
        self,
        credentials: Credentials,
        *,
        timeout: float = TIMEOUT_SECONDS,
        clock: Callable[[], datetime] = utc_now,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.credentials = credentials
        self.timeout = timeout
        self._clock = clock
        self._monotonic = monotonic
        self._used_at = 0.0
        """When the kept connection last answered (`monotonic`)."""
        self._lock = threading.Lock()
        self._connection: HTTPConnection | None = None
        self._origin = ""
        """`scheme://host[:port]` of the kept connection."""
        self._tls: ssl.SSLContext | None = None

    def send_message(self, queue_url: str, body: str) -> str:
        """Put `body` on the queue at `queue_url`; its `MessageId`. Raises `QueueSendFailed`."""
        origin = _origin(queue_url)
        payload = json.dumps({"QueueUrl": queue_url, "MessageBody": body}).encode()
        with self._lock:
            try:
                status, answer = self._exchange(origin, payload)
            except (OSError, HTTPException) as exc:
                self._close()
                raise QueueSendFailed(
                    type(exc).__name__, f"SQS at {origin} could not be reached: {exc}"
                ) from exc
        return _message_id(status, answer, body)

    def close(self) -> None:
        with self._lock:
            self._close()

    def _exchange(self, origin: str, payload: bytes) -> tuple[int, bytes]:
        if self._connection is not None and self._monotonic() - self._used_at > IDLE_SECONDS:
            self._close()  # idle too long: it may have been dropped without a word
        reused = self._connection is not None and self._origin == origin
        try:
            return self._post(origin, payload)
        except ConnectionError:
            if not reused:
                raise
            self._close()  # the server closed the kept connection: once more, on a new one
        return self._post(origin, payload)

    def _post(self, origin: str, payload: bytes) -> tuple[int, bytes]:
        connection = self._connect(origin)
        url = f"{origin}/"
        headers = {"Host": host_of(url), "Content-Type": CONTENT_TYPE, "X-Amz-Target": TARGET}
        headers |= sign(self.credentials, service="sqs", method="POST", url=url,
                        headers=headers, body=payload, now=self._clock())  # fmt: skip
        connection.request("POST", "/", body=payload, headers=headers)
        response = connection.getresponse()
        answer = response.read()
        self._used_at = self._monotonic()
        if response.will_close:
            self._close()
        return response.status, answer

    def _connect(self, origin: str) -> HTTPConnection:
        if self._connection is None or self._origin != origin:
            self._close()
            parts = urlsplit(origin)
            if parts.scheme == "https":
                self._tls = self._tls or ssl.create_default_context()
                self._connection = HTTPSConnection(
                    parts.hostname or "", parts.port, timeout=self.timeout, context=self._tls
                )
            else:
                self._connection = HTTPConnection(
                    parts.hostname or "", parts.port, timeout=self.timeout
                )
            self._origin = origin
        return self._connection

    def _close(self) -> None:
        if self._connection is not None:
            self._connection.close()
        self._connection, self._origin = None, ""


def _origin(queue_url: str) -> str:
    parts = urlsplit(queue_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise QueueSendFailed("InvalidQueueUrl", f"not a queue URL: {queue_url!r}")
    return f"{parts.scheme}://{parts.netloc.rsplit('@', 1)[-1]}"


def _message_id(status: int, answer: bytes, body: str) -> str:
    """The `MessageId` of SQS's answer; `QueueSendFailed` for a refusal or a garbled answer."""
    try:
        found: Any = json.loads(answer)
    except ValueError:
        found = None
    if not 200 <= status < 300:
        raise _refusal(status, found, answer)
    if not isinstance(found, dict) or not isinstance(found.get("MessageId"), str):
        raise QueueSendFailed("InvalidResponse", f"no MessageId in {answer[:200]!r}",
                              status=status)  # fmt: skip
    digest = hashlib.md5(body.encode(), usedforsecurity=False).hexdigest()
    if found.get("MD5OfMessageBody") != digest:
        raise QueueSendFailed("ChecksumMismatch", "SQS stored another body than the one sent",
                              status=status)  # fmt: skip
    message_id: str = found["MessageId"]
    return message_id


def _refusal(status: int, found: Any, answer: bytes) -> QueueSendFailed:
    """SQS's JSON error (`{"__type": "com.amazonaws.sqs#QueueDoesNotExist", "message": ...}`)
    as a `QueueSendFailed`; an answer that is not one gives its status and first bytes."""
    if isinstance(found, dict) and isinstance(found.get("__type"), str):
        code = found["__type"].rsplit("#", 1)[-1].split(":", 1)[0]
        message = str(found.get("message") or found.get("Message") or "")
    else:
        code, message = f"HTTP{status}", answer[:200].decode(errors="replace")
    return QueueSendFailed(code, message, status=status)
