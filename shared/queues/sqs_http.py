"""SQS `SendMessage` without boto3: SQS's JSON protocol over `http.client`, signed with SigV4.

Why hand-written: cold start. On `POST /chat` the deployed chat function
(`INVOKER_TRANSPORT=sqs`) needs AWS for one thing, putting "run plan" on the planner's queue.
Through boto3, the first `202` of every new Lambda environment paid ~175 ms for `import boto3`
and building an SQS client (a warm `202` takes ~8 ms). No library is light enough: botocore's
`auth` module alone takes ~100 ms to import, `httpx` ~70 ms. This sender needs only the
standard library (`http.client`, `hmac`, `hashlib`, `json`) and sends one kind of request.
Its signature (`shared.aws.sigv4`) is checked against AWS's SigV4 test suite and byte for byte
against botocore's `SigV4Auth`, and its requests end to end against moto's SQS server, in
`tests/aws/`. The credentials come from Lambda's environment or, under SnapStart, from its
credentials endpoint (`shared.aws.credentials`), read for each send.

The request: `POST /` to the queue URL's scheme and host (`https://sqs.<region>.amazonaws.com`
on AWS; moto's server names itself in its queue URLs) or to `AWS_ENDPOINT_URL_SQS`,
`X-Amz-Target: AmazonSQS.SendMessage`, `Content-Type: application/x-amz-json-1.0`, the body
`{"QueueUrl": ..., "MessageBody": ..., "MessageAttributes": ...}` (string attributes: the
trace context, when tracing is on), signed for the service `sqs` in the credentials' region.
The answer's `MD5OfMessageBody` (and `MD5OfMessageAttributes`) is checked against what was
sent, as boto3 does.

Connections are kept alive and reused, one per send in flight (the planner sends a plan's
steps at once), at most `MAX_IDLE` kept between sends. One idle for more than `IDLE_SECONDS`
of wall-clock time (a Lambda frozen between requests: its monotonic clock stops meanwhile) is
not reused: it may have been dropped without a word. A send is tried up to `ATTEMPTS` times,
as boto3's standard retry mode does, when SQS could not be reached, answered 5xx or throttled
it — the next try after a short jittered wait (none when a kept connection turned out closed),
and none begun after `RETRY_DEADLINE_SECONDS`. A try that reached SQS may be repeated: no
harm, delivery is at least once and every consumer is idempotent. Connecting and each read
wait at most `TIMEOUT_SECONDS`. Every failure raises `QueueSendFailed`, naming AWS's error
code and message or the network failure, with the credentials cut out of anything quoted.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from http.client import HTTPConnection, HTTPException
from typing import Any
from urllib.parse import urlsplit

from shared.aws.credentials import CredentialSource, CredentialsUnavailable
from shared.aws.sigv4 import Credentials, host_of, sign
from shared.aws.stdlib_http import connect
from shared.queues.senders import QueueSendFailed, attributes_md5, message_attributes

TIMEOUT_SECONDS = 3.0
"""Longest wait to connect, and for each read of SQS's answer (it answers in milliseconds)."""
ATTEMPTS = 3
"""Tries of one send (boto3's standard retry mode makes 3)."""
RETRY_DEADLINE_SECONDS = 6.0
"""No new try begins this long after the first: the chat answers well within its timeout."""
BACKOFF_SECONDS = 0.05
"""The wait before the second try, doubling after; each wait jittered to 50–100% of it."""
IDLE_SECONDS = 50.0
"""A kept connection idle for longer is replaced (load balancers drop idle ones after ~60 s)."""
MAX_IDLE = 4
"""Connections kept between sends."""
TARGET = "AmazonSQS.SendMessage"
CONTENT_TYPE = "application/x-amz-json-1.0"
THROTTLED = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottledException",
        "TooManyRequestsException",
        "RequestThrottled",
        "RequestLimitExceeded",
        "SlowDown",
        "RequestTimeout",
        "RequestTimeoutException",
        "PriorRequestNotComplete",
    }
)
"""AWS error codes boto3's standard mode retries whatever the status (beside any 5xx)."""


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(slots=True)
class _Kept:
    connection: HTTPConnection
    origin: str
    """`scheme://host[:port]` it is connected to."""
    used_at: datetime
    """When it last answered (wall clock)."""


class SqsHttpSender:
    """Sends SQS messages with `credentials` over kept connections (a `QueueSender`)."""

    def __init__(
        self,
        credentials: CredentialSource,
        *,
        timeout: float = TIMEOUT_SECONDS,
        clock: Callable[[], datetime] = utc_now,
        sleep: Callable[[float], None] = time.sleep,
        endpoint: str | None = None,
    ) -> None:
        self.credentials = credentials
        self.endpoint = endpoint
        """Where requests go (`AWS_ENDPOINT_URL_SQS`, as boto3 reads it); None: the queue
        URL's own scheme and host."""
        self.timeout = timeout
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._idle: list[_Kept] = []
        self._generation = 0
        """Raised by `close`: a connection taken before it is not kept after its send."""

    def send_message(
        self, queue_url: str, body: str, attributes: Mapping[str, str] | None = None
    ) -> str:
        """Put `body` on the queue at `queue_url`, with string message `attributes`; its
        `MessageId`. Raises `QueueSendFailed`."""
        origin = _origin(self.endpoint or queue_url)
        request: dict[str, Any] = {"QueueUrl": queue_url, "MessageBody": body}
        if attributes:
            request["MessageAttributes"] = message_attributes(attributes)
        payload = json.dumps(request).encode()
        started, attempt = time.monotonic(), 1
        credentials: Credentials | None = None  # the last try's: its answer may quote them
        while True:
            try:
                credentials = self._current()
                status, answer = self._exchange(origin, payload, credentials)
                return _message_id(status, answer, body, attributes)
            except QueueSendFailed as failed:
                late = time.monotonic() - started > RETRY_DEADLINE_SECONDS
                if not _transient(failed) or attempt == ATTEMPTS or late:
                    raise _redacted(failed, credentials) from failed.__cause__
                if failed.code != "StaleConnection":
                    self._sleep(BACKOFF_SECONDS * 2 ** (attempt - 1) * random.uniform(0.5, 1))
                attempt += 1

    def close(self) -> None:
        """Close the kept connections (one in use closes once its send is done)."""
        with self._lock:
            idle, self._idle = self._idle, []
            self._generation += 1
        for kept in idle:
            kept.connection.close()

    def _current(self) -> Credentials:
        try:
            return self.credentials.current()
        except CredentialsUnavailable as exc:
            raise QueueSendFailed("CredentialsUnavailable", str(exc)) from exc

    def _exchange(self, origin: str, payload: bytes, credentials: Credentials) -> tuple[int, bytes]:
        """One try on one connection: SQS's status and answer, or `QueueSendFailed` (code
        `StaleConnection` when a kept connection turned out closed by the server)."""
        kept, generation = self._take(origin)
        reused = kept is not None
        connection = kept.connection if kept else connect(origin, self.timeout)
        try:
            status, answer, closing = self._post(connection, origin, payload, credentials)
        except ConnectionError as exc:
            connection.close()
            code = "StaleConnection" if reused else type(exc).__name__
            raise QueueSendFailed(code, f"SQS at {origin} could not be reached") from exc
        except (OSError, HTTPException) as exc:
            connection.close()
            raise QueueSendFailed(
                type(exc).__name__, f"SQS at {origin} could not be reached: {exc}"
            ) from exc
        except ValueError:  # http.client refused a header value, which it quotes: maybe a token
            connection.close()
            unsendable = True
        else:
            unsendable = False
        if unsendable:  # raised out here, so that nothing chains to the quoting error
            raise QueueSendFailed(
                "InvalidRequest", "the request could not be built: check the AWS_* variables"
            )
        if closing:
            connection.close()
        else:
            self._keep(_Kept(connection, origin, self._clock()), generation)
        return status, answer

    def _take(self, origin: str) -> tuple[_Kept | None, int]:
        now = self._clock()
        stale: list[_Kept] = []
        found = None
        with self._lock:
            generation = self._generation
            while self._idle and found is None:
                kept = self._idle.pop()
                if (now - kept.used_at).total_seconds() > IDLE_SECONDS or kept.origin != origin:
                    stale.append(kept)  # idle too long: it may have been dropped without a word
                else:
                    found = kept
        for kept in stale:
            kept.connection.close()
        return found, generation

    def _keep(self, kept: _Kept, generation: int) -> None:
        with self._lock:
            if generation == self._generation and len(self._idle) < MAX_IDLE:
                self._idle.append(kept)
                return
        kept.connection.close()

    def _post(
        self, connection: HTTPConnection, origin: str, payload: bytes, credentials: Credentials
    ) -> tuple[int, bytes, bool]:
        url = f"{origin}/"
        headers = {"Host": host_of(url), "Content-Type": CONTENT_TYPE, "X-Amz-Target": TARGET}
        headers |= sign(
            credentials,
            service="sqs",
            method="POST",
            url=url,
            headers=headers,
            body=payload,
            now=self._clock(),
        )
        connection.request("POST", "/", body=payload, headers=headers)
        response = connection.getresponse()
        return response.status, response.read(), response.will_close


def _redacted(failed: QueueSendFailed, credentials: Credentials | None) -> QueueSendFailed:
    """`failed` with the secret key and the session token of `credentials` (what the last
    try signed with; None: nothing was signed, so nothing secret was quoted) cut out."""
    if credentials is None:
        return failed
    message = credentials.redact(failed.message)
    if message == failed.message:
        return failed
    return QueueSendFailed(failed.code, message, status=failed.status)


def _transient(failed: QueueSendFailed) -> bool:
    """Whether another try may succeed: SQS unreachable, a 5xx, or throttling."""
    if failed.status is None:
        return failed.code not in ("InvalidQueueUrl", "InvalidRequest")
    return failed.status >= 500 or failed.status == 429 or failed.code in THROTTLED


def _origin(queue_url: str) -> str:
    parts = urlsplit(queue_url)
    try:
        parts.port  # noqa: B018 — raises ValueError for a port that is not one
    except ValueError:
        raise QueueSendFailed("InvalidQueueUrl", f"not a queue URL: {queue_url!r}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise QueueSendFailed("InvalidQueueUrl", f"not a queue URL: {queue_url!r}")
    return f"{parts.scheme}://{parts.netloc.rsplit('@', 1)[-1]}"


def _message_id(status: int, answer: bytes, body: str, attributes: Mapping[str, str] | None) -> str:
    """The `MessageId` of SQS's answer; `QueueSendFailed` for a refusal or a garbled answer."""
    try:
        found: Any = json.loads(answer)
    except ValueError:
        found = None
    if not 200 <= status < 300:
        raise _refusal(status, found, answer)
    if not isinstance(found, dict) or not isinstance(found.get("MessageId"), str):
        raise QueueSendFailed("InvalidResponse", f"no MessageId in {answer[:200]!r}", status=status)
    digest = hashlib.md5(body.encode(), usedforsecurity=False).hexdigest()
    if found.get("MD5OfMessageBody") != digest:
        raise QueueSendFailed(
            "ChecksumMismatch", "SQS stored another body than the one sent", status=status
        )
    if attributes and found.get("MD5OfMessageAttributes") != attributes_md5(attributes):
        raise QueueSendFailed(
            "ChecksumMismatch",
            "SQS stored other message attributes than the ones sent",
            status=status,
        )
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
