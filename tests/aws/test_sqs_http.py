"""The SQS sender without boto3 (`shared.queues.sqs_http`), held to botocore and moto's server.

* Its signature is botocore's `SigV4Auth`, byte for byte, for the same request at the same
  instant (with and without a session token) — and so is the signature of the request it
  actually puts on the wire (moto's server does not check signatures, so this is the check).
* A message it sends is received by boto3 with the identical body and id; a missing queue
  raises `QueueSendFailed` with AWS's error code, and so does a port nobody listens on —
  never naming the credentials.
* It keeps one connection, and opens a new one when the server has closed the kept one.
* Without the credentials in the environment, `Services` sends with boto3 instead, and its
  failures reach `SqsInvoker`'s callers the same way.
"""

from __future__ import annotations

import hashlib
import json
import socket
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from uuid import uuid4

import pytest

from shared.aws.sigv4 import Credentials, sign
from shared.dispatch.sqs_invoker import SqsInvoker
from shared.kernel.errors import UpstreamUnavailable
from shared.kernel.settings import Settings
from shared.queues.senders import BotoSender, QueueSendFailed, attributes_md5
from shared.queues.sqs_http import (
    ATTEMPTS,
    BACKOFF_SECONDS,
    CONTENT_TYPE,
    IDLE_SECONDS,
    TARGET,
    SqsHttpSender,
)
from shared.services import Services
from tests.support.cloud import Cloud
from tests.support.proxy import Proxy

FROZEN = datetime(2026, 11, 25, 9, 0, 7, tzinfo=UTC)
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
TOKEN = "IQoJb3JpZ2luX2VjEPa//////////wEaDGV1LWNlbnRyYWwtMSJHMEUCIQ+token/EXAMPLE=="
SIGNATURE_HEADERS = ("X-Amz-Date", "X-Amz-Security-Token", "Authorization")
BODY = json.dumps(
    {
        "QueueUrl": "https://sqs.eu-central-1.amazonaws.com/123456789012/parley-planner",
        "MessageBody": '{"type": "run_plan"}',
    }
).encode()
JSON_HEADERS = {"Content-Type": CONTENT_TYPE, "X-Amz-Target": TARGET}


def credentials(token: str | None = TOKEN) -> Credentials:
    return Credentials("AKIDEXAMPLE", SECRET_KEY, "eu-central-1", token)


def botocore_signature(
    monkeypatch: pytest.MonkeyPatch,
    credentials: Credentials,
    *,
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes,
) -> dict[str, str]:
    """What botocore's `SigV4Auth` adds to this request at `FROZEN`."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials as BotoCredentials

    monkeypatch.setattr("botocore.auth.get_current_datetime", lambda: FROZEN.replace(tzinfo=None))
    request = AWSRequest(method=method, url=url, headers=dict(headers), data=body)
    keys = BotoCredentials(
        credentials.access_key, credentials.secret_key, credentials.session_token
    )
    SigV4Auth(keys, "sqs", credentials.region).add_auth(request)
    return {name: request.headers[name] for name in SIGNATURE_HEADERS if name in request.headers}


@pytest.mark.parametrize("token", [TOKEN, None], ids=["session token", "long-term key"])
@pytest.mark.parametrize(
    ("url", "headers", "body"),
    [
        ("https://sqs.eu-central-1.amazonaws.com/", JSON_HEADERS, BODY),
        (
            "http://127.0.0.1:4566/",
            {**JSON_HEADERS, "User-Agent": "parley", "X-Note": "  runs   of  blanks "},
            BODY,
        ),
        ("https://SQS.eu-central-1.amazonaws.com:443/", {"Host": "sqs.example"}, b""),
    ],
    ids=["aws", "other port, unsigned and untrimmed headers", "default port, given host"],
)
def test_the_signature_is_botocores_byte_for_byte(
    monkeypatch: pytest.MonkeyPatch,
    token: str | None,
    url: str,
    headers: dict[str, str],
    body: bytes,
) -> None:
    keys = credentials(token)
    ours = sign(keys, service="sqs", method="POST", url=url, headers=headers, body=body, now=FROZEN)
    assert ours == botocore_signature(
        monkeypatch, keys, method="POST", url=url, headers=headers, body=body
    )
    assert ("X-Amz-Security-Token" in ours) is (token is not None)


def test_credentials_come_from_what_lambda_sets_in_the_environment() -> None:
    lambdas = {
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_SESSION_TOKEN": TOKEN,
        "AWS_REGION": "eu-central-1",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    assert Credentials.from_environment(lambdas) == credentials()
    assert "AKIDEXAMPLE" in repr(credentials())
    assert_no_credentials(repr(credentials()))
    default_region = {**lambdas, "AWS_REGION": "", "AWS_SESSION_TOKEN": ""}
    assert Credentials.from_environment(default_region) == Credentials(
        "AKIDEXAMPLE", SECRET_KEY, "us-east-1"
    )
    for missing in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        assert Credentials.from_environment({**lambdas, missing: ""}) is None
    no_region = {k: v for k, v in lambdas.items() if "REGION" not in k}
    assert Credentials.from_environment(no_region) is None


def via(proxy: Proxy, queue_url: str) -> str:
    """The queue URL reached through the proxy."""
    return proxy.url + urlsplit(queue_url).path


@pytest.fixture
def sender() -> Iterator[SqsHttpSender]:
    sender = SqsHttpSender(credentials(), clock=lambda: FROZEN, sleep=lambda _: None)
    yield sender
    sender.close()


def bodies(cloud: Cloud, queue_url: str) -> list[str]:
    found = cloud.sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)
    return sorted(message["Body"] for message in found.get("Messages", []))


def test_the_request_on_the_wire_carries_botocores_signature_for_it(
    aws: str, cloud: Cloud, sender: SqsHttpSender, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Proxy(aws) as proxy:
        queue = via(proxy, cloud.urls["planner"])
        sender.send_message(queue, '{"type": "run_plan"}')
        (request,) = proxy.requests

    assert (request.method, request.path) == ("POST", "/")
    assert json.loads(request.body) == {"QueueUrl": queue, "MessageBody": '{"type": "run_plan"}'}
    authorization = request.headers["Authorization"]
    signed = authorization.split("SignedHeaders=")[1].split(",")[0].split(";")
    assert signed == ["content-type", "host", "x-amz-date", "x-amz-security-token", "x-amz-target"]
    assert request.headers["Host"] == urlsplit(proxy.url).netloc
    given = {
        name: value
        for name, value in request.headers.items()
        if name.lower() in ("content-type", "x-amz-target")
    }
    expected = botocore_signature(
        monkeypatch,
        credentials(),
        method="POST",
        url=f"{proxy.url}/",
        headers=given,
        body=request.body,
    )
    assert {name: request.headers[name] for name in SIGNATURE_HEADERS} == expected


def test_a_message_it_sends_is_received_with_the_same_body_and_id(
    cloud: Cloud, sender: SqsHttpSender
) -> None:
    body = json.dumps(
        {"type": "run_plan", "plan_id": str(uuid4()), "note": 'é ✓ \u2028 "quoted" </tag> \\'},
        ensure_ascii=False,
    )

    message_id = sender.send_message(cloud.urls["planner"], body)

    (received,) = cloud.sqs.receive_message(QueueUrl=cloud.urls["planner"])["Messages"]
    assert (received["Body"], received["MessageId"]) == (body, message_id)


def assert_no_credentials(*texts: str) -> None:
    for text in texts:
        assert SECRET_KEY not in text and TOKEN not in text


def test_a_missing_queue_raises_queue_send_failed_with_awss_code(
    cloud: Cloud, sender: SqsHttpSender
) -> None:
    with pytest.raises(QueueSendFailed) as refused:
        sender.send_message(cloud.urls["planner"] + "-gone", "{}")

    failed = refused.value
    assert (failed.code, failed.status) == ("QueueDoesNotExist", 400)
    assert str(failed) == "QueueDoesNotExist: The specified queue does not exist."
    assert_no_credentials(str(failed), repr(failed), repr(sender.credentials))


def test_a_port_nobody_listens_on_raises_queue_send_failed(sender: SqsHttpSender) -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
    # closed now: nothing listens there

    with pytest.raises(QueueSendFailed) as refused:
        sender.send_message(f"http://127.0.0.1:{port}/123456789012/parley-planner", "{}")

    failed = refused.value
    assert (failed.code, failed.status) == ("ConnectionRefusedError", None)
    assert f"SQS at http://127.0.0.1:{port} could not be reached" in str(failed)
    assert_no_credentials(str(failed), repr(failed))


def test_one_connection_is_kept_and_a_new_one_opened_once_the_server_closed_it(
    aws: str, cloud: Cloud, sender: SqsHttpSender
) -> None:
    with Proxy(aws) as proxy:
        queue = via(proxy, cloud.urls["planner"])
        sender.send_message(queue, "one")
        sender.send_message(queue, "two")
        assert proxy.connections == 1

        proxy.cut()  # as SQS closes a connection held idle (a Lambda frozen between requests)
        sender.send_message(queue, "three")
        assert proxy.connections == 2

    assert bodies(cloud, cloud.urls["planner"]) == ["one", "three", "two"]


@pytest.fixture
def no_credentials_in_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """AWS credentials only in a config file, as on a developer's machine (boto3 finds them;
    the light sender does not look): no key in the environment, no instance metadata."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name)
    keys = tmp_path / "credentials"
    keys.write_text(
        f"[default]\naws_access_key_id = AKIDEXAMPLE\naws_secret_access_key = {SECRET_KEY}\n"
    )
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(keys))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def queue_services(cloud: Cloud, **settings: str) -> Services:
    given: dict[str, Any] = {**cloud.settings(), **settings}
    return Services(Settings(**given))


def test_with_lambdas_credentials_in_the_environment_sends_go_over_http(cloud: Cloud) -> None:
    services = queue_services(cloud)
    assert isinstance(services.queue_sender, SqsHttpSender)


@pytest.mark.usefixtures("no_credentials_in_env")
async def test_without_them_boto3_sends_and_its_failures_reach_callers_the_same_way(
    cloud: Cloud,
) -> None:
    services = queue_services(cloud)
    assert isinstance(services.queue_sender, BotoSender)
    plan_id = uuid4()
    await SqsInvoker(services).start_plan(plan_id=plan_id)
    assert cloud.bodies("planner") == [{"type": "run_plan", "plan_id": str(plan_id)}]

    gone = queue_services(cloud, planner_queue_url=cloud.urls["planner"] + "-gone")
    with pytest.raises(UpstreamUnavailable) as refused:
        await SqsInvoker(gone).start_plan(plan_id=plan_id)
    assert "planner queue could not be reached (AWS.SimpleQueueService.NonExistentQueue)" in str(
        refused.value
    )
    assert isinstance(refused.value.__cause__, QueueSendFailed)
    assert_no_credentials(str(refused.value), str(refused.value.__cause__))


def test_a_connection_idle_past_the_limit_is_not_reused(aws: str, cloud: Cloud) -> None:
    now = [FROZEN]  # wall-clock time: a frozen Lambda's monotonic clock stands still
    sender = SqsHttpSender(credentials(), clock=lambda: now[0])
    with Proxy(aws) as proxy:
        queue = via(proxy, cloud.urls["planner"])
        sender.send_message(queue, "one")
        now[0] += timedelta(seconds=IDLE_SECONDS)  # idle exactly as long as allowed: kept
        sender.send_message(queue, "two")
        assert proxy.connections == 1

        now[0] += timedelta(seconds=IDLE_SECONDS + 1)  # a Lambda frozen longer: a new one
        sender.send_message(queue, "three")
        assert proxy.connections == 2
        sender.close()

    assert bodies(cloud, cloud.urls["planner"]) == ["one", "three", "two"]


@pytest.fixture
def waits() -> list[float]:
    """The waits between tries, as the sender asked for them (nothing sleeps)."""
    return []


@pytest.fixture
def retrying(waits: list[float]) -> Iterator[SqsHttpSender]:
    sender = SqsHttpSender(credentials(), clock=lambda: FROZEN, sleep=waits.append)
    yield sender
    sender.close()


@pytest.mark.parametrize(
    ("status", "answer"),
    [
        (500, {"__type": "com.amazonaws.sqs#InternalError", "message": "We hit a snag"}),
        (400, {"__type": "com.amazon.coral.availability#ThrottlingException", "message": "Slow"}),
    ],
    ids=["5xx", "throttled"],
)
def test_a_failed_or_throttled_send_is_tried_again_after_a_short_wait(
    aws: str,
    cloud: Cloud,
    retrying: SqsHttpSender,
    waits: list[float],
    status: int,
    answer: dict[str, str],
) -> None:
    with Proxy(aws) as proxy:
        proxy.refuse(status, answer)
        retrying.send_message(via(proxy, cloud.urls["planner"]), "once")
        retrying.close()
        assert len(proxy.requests) == 2

    assert len(waits) == 1 and 0 < waits[0] <= BACKOFF_SECONDS
    assert bodies(cloud, cloud.urls["planner"]) == ["once"]


def test_a_send_refused_for_good_is_not_tried_again(
    aws: str, cloud: Cloud, retrying: SqsHttpSender, waits: list[float]
) -> None:
    with Proxy(aws) as proxy, pytest.raises(QueueSendFailed) as refused:
        retrying.send_message(via(proxy, cloud.urls["planner"]) + "-gone", "{}")
    assert (refused.value.code, len(proxy.requests), waits) == ("QueueDoesNotExist", 1, [])


def test_tries_end_after_the_third_with_the_last_failure(
    aws: str, cloud: Cloud, retrying: SqsHttpSender, waits: list[float]
) -> None:
    snag = {"__type": "com.amazonaws.sqs#ServiceUnavailable", "message": "Later"}
    with Proxy(aws) as proxy:
        for _ in range(ATTEMPTS):
            proxy.refuse(503, snag)
        with pytest.raises(QueueSendFailed) as refused:
            retrying.send_message(via(proxy, cloud.urls["planner"]), "{}")
        retrying.close()
        assert len(proxy.requests) == ATTEMPTS
    assert (refused.value.code, refused.value.status) == ("ServiceUnavailable", 503)
    assert len(waits) == ATTEMPTS - 1 and waits[1] > waits[0] / 2


def test_credentials_quoted_in_an_answer_are_cut_out(
    aws: str, cloud: Cloud, retrying: SqsHttpSender
) -> None:
    quoted = f"The Canonical String should have been 'x-amz-security-token:{TOKEN}'"
    with Proxy(aws) as proxy, pytest.raises(QueueSendFailed) as refused:
        proxy.refuse(403, {"__type": "com.amazonaws.sqs#SignatureDoesNotMatch", "message": quoted})
        retrying.send_message(via(proxy, cloud.urls["planner"]), "{}")
    assert "x-amz-security-token:[redacted]" in str(refused.value)
    assert_no_credentials(str(refused.value), repr(refused.value))


@pytest.mark.parametrize(
    "queue_url",
    ["http://127.0.0.1:99999/1/q", "http://127.0.0.1:abc/1/q", "ftp://sqs.example/1/q", "q"],
)
def test_a_queue_url_that_is_not_one_is_refused_before_sending(
    queue_url: str, retrying: SqsHttpSender, waits: list[float]
) -> None:
    with pytest.raises(QueueSendFailed) as refused:
        retrying.send_message(queue_url, "{}")
    assert (refused.value.code, waits) == ("InvalidQueueUrl", [])


def test_a_token_http_cannot_carry_is_refused_without_quoting_it(aws: str, cloud: Cloud) -> None:
    broken = Credentials("AKIDEXAMPLE", SECRET_KEY, "eu-central-1", TOKEN + "\n")
    sender = SqsHttpSender(broken, clock=lambda: FROZEN, sleep=lambda _: None)
    with pytest.raises(QueueSendFailed) as refused:
        sender.send_message(cloud.urls["planner"], "{}")
    failed = refused.value
    assert (failed.code, failed.__cause__, failed.__context__) == ("InvalidRequest", None, None)
    assert_no_credentials(str(failed), repr(failed))
    sender.close()


def test_sends_in_flight_together_each_get_a_connection_kept_for_the_next(
    aws: str, cloud: Cloud, sender: SqsHttpSender
) -> None:
    with Proxy(aws) as proxy:
        queue = via(proxy, cloud.urls["planner"])
        proxy.gather(2)  # neither is answered before both arrived: two connections
        with ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(lambda body: sender.send_message(queue, body), ["a", "b"]))
        proxy.gather(1)
        sender.send_message(queue, "c")
        sender.send_message(queue, "d")
        assert proxy.connections == 2

    assert bodies(cloud, cloud.urls["planner"]) == ["a", "b", "c", "d"]


def test_an_endpoint_override_takes_the_requests(aws: str, cloud: Cloud) -> None:
    with Proxy(aws) as proxy:
        sender = SqsHttpSender(credentials(), clock=lambda: FROZEN, endpoint=proxy.url)
        sender.send_message(cloud.urls["planner"], "via the endpoint")
        sender.close()
        (request,) = proxy.requests
    assert json.loads(request.body)["QueueUrl"] == cloud.urls["planner"]
    assert bodies(cloud, cloud.urls["planner"]) == ["via the endpoint"]


TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@pytest.mark.parametrize("kind", ["http", "boto3"])
def test_message_attributes_travel_with_the_message(
    cloud: Cloud, sender: SqsHttpSender, kind: str
) -> None:
    """The trace context goes in string message attributes; SQS's MD5OfMessageAttributes
    (checked by the sender) matches what was sent, and the consumer receives them."""
    attributes = {"traceparent": TRACEPARENT, "tracestate": "vendor=é1"}
    sending = sender if kind == "http" else BotoSender(cloud.sqs)
    message_id = sending.send_message(cloud.urls["planner"], "{}", attributes)
    (received,) = cloud.sqs.receive_message(
        QueueUrl=cloud.urls["planner"], MessageAttributeNames=["All"]
    )["Messages"]
    assert received["MessageId"] == message_id
    assert {k: v["StringValue"] for k, v in received["MessageAttributes"].items()} == attributes
    assert received["MD5OfMessageAttributes"] == attributes_md5(attributes)


def test_attributes_sqs_stored_otherwise_are_refused(aws: str, cloud: Cloud) -> None:
    body = "{}"
    answer = {
        "MessageId": "m-1",
        "MD5OfMessageBody": hashlib.md5(body.encode()).hexdigest(),
        "MD5OfMessageAttributes": "0" * 32,
    }
    sending = SqsHttpSender(credentials(), clock=lambda: FROZEN, sleep=lambda _: None)
    with Proxy(aws) as proxy, pytest.raises(QueueSendFailed) as refused:
        proxy.refuse(200, answer)
        try:
            sending.send_message(via(proxy, cloud.urls["planner"]), body, {"traceparent": "x"})
        finally:
            sending.close()
    assert refused.value.code == "ChecksumMismatch"
    assert "message attributes" in refused.value.message


def test_without_attributes_the_request_is_as_before(aws: str, cloud: Cloud) -> None:
    """Tracing off: `{}` attributes send the same request as none (no MessageAttributes)."""
    sending = SqsHttpSender(credentials(), clock=lambda: FROZEN, sleep=lambda _: None)
    with Proxy(aws) as proxy:
        sending.send_message(via(proxy, cloud.urls["planner"]), "{}", {})
        sending.close()
        (request,) = proxy.requests
    assert set(json.loads(request.body)) == {"QueueUrl", "MessageBody"}
