"""Where Parley's own AWS calls find credentials: Lambda's environment, or (SnapStart) its
credentials endpoint — here a small HTTP server on the loopback answering as the endpoint
does (botocore's `ContainerProvider` reads the same shape; `shared.aws.credentials` cites
AWS's documentation of it), and moto's SQS for a send signed with what it served."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from shared.aws.credentials import (
    FULL_URI,
    TOKEN,
    TOKEN_FILE,
    ContainerCredentials,
    CredentialsUnavailable,
    from_environment,
)
from shared.aws.sigv4 import Credentials
from shared.queues.senders import QueueSendFailed
from shared.queues.sqs_http import SqsHttpSender
from tests.support.cloud import Cloud

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
AUTH_TOKEN = "lambda-snapstart-authorization-token"


class Endpoint:
    """The runtime's credentials endpoint: answers each GET with the next set of keys (or
    `status`), expiring at `expires`, and records each request's headers."""

    def __init__(self) -> None:
        self.requests: list[dict[str, str]] = []
        self.status = 200
        self.served = 0
        self.url = ""
        self.expires = NOW + timedelta(hours=1)

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        self.requests.append(dict(handler.headers))
        if handler.headers.get("Authorization") != AUTH_TOKEN:
            handler.send_response(403)
            handler.end_headers()
            return
        self.served += 1
        body = json.dumps(
            {
                "AccessKeyId": f"ASIA{self.served:04d}",
                "SecretAccessKey": f"secret-{self.served}",
                "Token": f"token-{self.served}",
                "Expiration": self.expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
        ).encode()
        handler.send_response(self.status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    found = Endpoint()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found.answer(self)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    found.url = f"http://127.0.0.1:{server.server_address[1]}/2018-06-01/credentials"
    try:
        yield found
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def snapstart_environment(endpoint: Endpoint) -> dict[str, str]:
    return {FULL_URI: endpoint.url, TOKEN: AUTH_TOKEN, "AWS_REGION": "eu-central-1"}


def test_environment_keys_come_first_then_the_endpoint(endpoint: Endpoint) -> None:
    keys = {"AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "eu-west-1"}
    both = {**snapstart_environment(endpoint), **keys}
    assert from_environment(both) == Credentials("AKID", "s", "eu-west-1")
    source = from_environment(snapstart_environment(endpoint))
    assert isinstance(source, ContainerCredentials)
    assert from_environment({FULL_URI: endpoint.url}) is None  # no region to sign for
    assert from_environment({}) is None
    assert endpoint.requests == []  # nothing is fetched before it is needed


def test_the_endpoint_is_read_once_with_its_token_then_again_near_expiry(
    endpoint: Endpoint,
) -> None:
    now = [NOW]
    source = ContainerCredentials(
        endpoint.url, "eu-central-1", token=AUTH_TOKEN, clock=lambda: now[0]
    )

    first = source.current()
    assert (first.access_key, first.secret_key, first.session_token, first.region) == (
        "ASIA0001",
        "secret-1",
        "token-1",
        "eu-central-1",
    )
    assert source.current() is first
    now[0] = NOW + timedelta(minutes=49)  # 11 minutes left: still good
    assert source.current() is first
    now[0] = NOW + timedelta(minutes=51)  # 9 minutes left: fetched again
    assert source.current().access_key == "ASIA0002"
    assert [r["Authorization"] for r in endpoint.requests] == [AUTH_TOKEN, AUTH_TOKEN]
    assert "secret-1" not in repr(first) and "token-1" not in repr(first)


def test_forget_drops_what_was_read_as_a_restore_must(endpoint: Endpoint) -> None:
    source = ContainerCredentials(endpoint.url, "eu-central-1", token=AUTH_TOKEN, clock=lambda: NOW)
    assert source.current().access_key == "ASIA0001"
    source.forget()
    assert source.current().access_key == "ASIA0002"


def test_the_token_may_come_from_a_file(endpoint: Endpoint, tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text(AUTH_TOKEN)
    env = {FULL_URI: endpoint.url, TOKEN_FILE: str(path), "AWS_REGION": "eu-central-1"}
    source = from_environment(env)
    assert source is not None and source.current().access_key == "ASIA0001"


def test_a_refusal_is_tried_three_times_then_reported(endpoint: Endpoint) -> None:
    waits: list[float] = []
    source = ContainerCredentials(endpoint.url, "eu-central-1", token="wrong", sleep=waits.append)
    with pytest.raises(CredentialsUnavailable, match="HTTP 403"):
        source.current()
    assert len(endpoint.requests) == 3 and len(waits) == 2


def test_an_endpoint_a_token_could_leak_to_is_refused() -> None:
    for uri in ("http://10.0.0.8/credentials", "http://example.com/creds"):
        with pytest.raises(CredentialsUnavailable, match="loopback"):
            ContainerCredentials(uri, "eu-central-1", token=AUTH_TOKEN)
    for uri in (
        "https://example.com/creds",
        "http://169.254.170.2/v2/creds",
        "http://[::1]:9001/creds",
    ):
        ContainerCredentials(uri, "eu-central-1")


def test_a_token_with_a_line_break_is_never_sent(endpoint: Endpoint) -> None:
    source = ContainerCredentials(endpoint.url, "eu-central-1", token=AUTH_TOKEN + "\r\nX: y")
    with pytest.raises(CredentialsUnavailable, match="legal header"):
        source.current()
    assert endpoint.requests == []


def test_an_answer_without_keys_is_unusable(endpoint: Endpoint) -> None:
    def garbled(url: str, headers: object, timeout: float) -> tuple[int, bytes]:
        return 200, b'{"AccessKeyId": "A"}'

    source = ContainerCredentials(endpoint.url, "eu-central-1", fetch=garbled)
    with pytest.raises(CredentialsUnavailable, match="no usable credentials"):
        source.current()


def test_a_send_under_snapstart_is_signed_with_the_endpoints_keys(
    endpoint: Endpoint, cloud: Cloud
) -> None:
    """The chat's send with SnapStart's credentials: no boto3, the endpoint read once, the
    message on moto's queue."""
    endpoint.expires = datetime.now(UTC) + timedelta(hours=1)
    source = from_environment(snapstart_environment(endpoint))
    assert source is not None
    sender = SqsHttpSender(source)
    try:
        sender.send_message(cloud.urls["planner"], '{"type": "run_plan"}')
        sender.send_message(cloud.urls["planner"], '{"type": "run_plan"}')
    finally:
        sender.close()
    assert len(cloud.bodies("planner")) == 2
    assert len(endpoint.requests) == 1


def test_a_send_without_credentials_fails_cleanly(endpoint: Endpoint, cloud: Cloud) -> None:
    endpoint.status = 500
    source = ContainerCredentials(
        endpoint.url, "eu-central-1", token=AUTH_TOKEN, sleep=lambda _: None
    )
    sender = SqsHttpSender(source, sleep=lambda _: None)
    with pytest.raises(QueueSendFailed) as failed:
        sender.send_message(cloud.urls["planner"], "{}")
    assert failed.value.code == "CredentialsUnavailable"
    assert cloud.bodies("planner") == []
