"""What `SqsInvoker` sends messages with, and the one error a failed send raises.

Two senders do the job (`Services.queue_sender` picks one):

* `shared.queues.sqs_http.SqsHttpSender` — SQS's JSON API over `http.client`, signed here:
  used when the environment leads to the credentials, as a Lambda function's does (its keys,
  or SnapStart's credentials endpoint). It keeps boto3 off the chat function's first `202`
  (see its docstring).
* `BotoSender` — boto3's SQS client, for every other way AWS credentials are found
  (instance profiles, SSO, config files) and behind an HTTPS proxy.

Both retry what may pass on a second try, and raise `QueueSendFailed` — AWS's error code and
message, or the network failure — without the credentials.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Protocol


class QueueSendFailed(Exception):
    """A message could not be put on its queue: SQS refused it (`code` is AWS's error code,
    e.g. `QueueDoesNotExist`) or could not be reached (`code` names the failure, e.g.
    `ConnectionRefusedError`)."""

    def __init__(self, code: str, message: str, *, status: int | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status
        """The HTTP status of SQS's answer; None when there was none."""


class QueueSender(Protocol):
    def send_message(
        self, queue_url: str, body: str, attributes: Mapping[str, str] | None = None
    ) -> str:
        """Put `body` on the queue at `queue_url`, with string message `attributes` (the trace
        context: `traceparent`); its `MessageId`. Raises `QueueSendFailed`."""
        ...

    def close(self) -> None:
        """Let go of any connection kept open (sending again opens a new one)."""
        ...


class BotoSender:
    """boto3's SQS client as a `QueueSender`."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def send_message(
        self, queue_url: str, body: str, attributes: Mapping[str, str] | None = None
    ) -> str:
        from botocore.exceptions import BotoCoreError, ClientError  # boto3's, when used

        extra = {"MessageAttributes": message_attributes(attributes)} if attributes else {}
        try:
            response = self.client.send_message(QueueUrl=queue_url, MessageBody=body, **extra)
        except ClientError as exc:
            error = exc.response.get("Error", {})
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            raise QueueSendFailed(
                str(error.get("Code") or "ClientError"),
                str(error.get("Message") or exc),
                status=status,
            ) from exc
        except BotoCoreError as exc:
            raise QueueSendFailed(type(exc).__name__, str(exc)) from exc
        return str(response["MessageId"])

    def close(self) -> None:
        """Nothing to do: the client belongs to `Services.sqs`, which the consumer uses too."""


def message_attributes(attributes: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """String attributes as SQS's `MessageAttributes` (`{"traceparent": {"DataType": "String",
    "StringValue": "00-…"}}`)."""
    return {
        name: {"DataType": "String", "StringValue": value} for name, value in attributes.items()
    }


def attributes_md5(attributes: Mapping[str, str]) -> str:
    """`MD5OfMessageAttributes`, as SQS computes it for string attributes: for each attribute
    in name order, its name, `String` and its value, each as a 4-byte big-endian length and its
    UTF-8 bytes, the data type followed by transport type 1 (string); the MD5 of it all
    (docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-message-metadata.html,
    "Calculating the MD5 message digest for message attributes")."""
    digest = hashlib.md5(usedforsecurity=False)
    for name in sorted(attributes):
        for part in (name, "String"):
            encoded = part.encode()
            digest.update(len(encoded).to_bytes(4, "big") + encoded)
        value = attributes[name].encode()
        digest.update(b"\x01" + len(value).to_bytes(4, "big") + value)
    return digest.hexdigest()
