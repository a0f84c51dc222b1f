"""The AWS side of Parley under moto: its queues, and Lambda playing its functions.

`Cloud` creates the four queues the way infra/serverless.yml declares them (a dead-letter
queue behind each, `maxReceiveCount` deliveries before a message moves there) and plays the
event source mappings: it receives one message at a time (batch size 1) with real boto3
calls, builds the SQS event Lambda would (from the committed events in
tests/support/lambda_events/), invokes the function's real handler, then deletes the message —
unless the handler reported it in `batchItemFailures` (the consumer has then set when it comes back:
at once here, with `QUEUE_RETRY_SECONDS=0`). `Function` is one Lambda function: its handler module,
its own services, one thread with one event loop reused by every invocation (warm starts).
"""

from __future__ import annotations

import asyncio
import base64
import copy
import hashlib
import importlib
import json
import sys
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal
from uuid import uuid4

from shared.services import Services, get_services
from tests.support import ROOT

EVENTS = ROOT / "tests" / "support" / "lambda_events"
Queue = Literal["planner", "executor", "planner_dlq", "executor_dlq"]
CONSUMERS: dict[Queue, str] = {"planner": "agent_planner", "executor": "agent_executor"}
MAX_RECEIVES = 3


def body_of(response: dict[str, Any]) -> Any:
    """The JSON body of a function URL response (Mangum base64-encodes problem+json)."""
    body = response["body"]
    return json.loads(base64.b64decode(body) if response.get("isBase64Encoded") else body)


def lambda_event(name: str) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((EVENTS / name).read_text())
    return event


@dataclass
class LambdaContext:
    function_name: str
    aws_request_id: str = "c0ffee00-1a2b-4c3d-8e4f-5a6b7c8d9e0f"
    memory_limit_in_mb: int = 1024

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


class Function:
    """One Lambda function: its handler, called on one thread with one loop (warm reuse)."""

    def __init__(self, name: str, services: Services) -> None:
        self.name, self.services = name, services
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._loop = asyncio.new_event_loop()
        self._worker.submit(asyncio.set_event_loop, self._loop).result()
        # Imported on the worker, as the runtime does: Mangum sets up a loop where it is built.
        module = self._worker.submit(importlib.import_module, f"functions.{name}.handler")
        self.handler = module.result().handler
        self.handler.app.dependency_overrides[get_services] = lambda: services
        self.invocations = 0
        self.request_ids: list[str] = []
        """Each invocation's Lambda request id, in order."""

    async def invoke(self, event: dict[str, Any]) -> dict[str, Any]:
        self.invocations += 1
        context = LambdaContext(f"parley-{self.name}", aws_request_id=str(uuid4()))
        self.request_ids.append(context.aws_request_id)
        future = self._worker.submit(self._as_the_runtime, event, context)
        result: dict[str, Any] = await asyncio.wrap_future(future)
        return result

    def _as_the_runtime(self, event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        """Call the handler as the Lambda runtime does: where its log handler is installed (a
        test set it up), it names the invocation the records are made in."""
        bootstrap = sys.modules.get("awslambdaric.bootstrap")
        if bootstrap is not None:
            bootstrap._GLOBAL_AWS_REQUEST_ID = context.aws_request_id  # type: ignore[attr-defined]
        result: dict[str, Any] = self.handler(event, context)
        return result

    def on_its_thread(self, work: Callable[..., Any], *args: Any) -> Any:
        """Run `work(*args)` on the function's thread, as the runtime runs its hooks."""
        return self._worker.submit(work, *args).result()

    def close(self) -> None:
        self._worker.submit(self._loop.run_until_complete, self.services.aclose()).result()
        self._worker.submit(self._loop.close).result()
        self._worker.shutdown()
        self.handler.app.dependency_overrides.clear()


@dataclass
class Delivery:
    """One message handed to a function, and what came of it."""

    queue: Queue
    body: dict[str, Any]
    receive_count: int
    failed: bool


@dataclass
class Cloud:
    """moto's SQS with Parley's queues, and the event source mappings that feed the functions."""

    sqs: Any
    prefix: str
    urls: dict[Queue, str] = field(default_factory=dict)
    arns: dict[Queue, str] = field(default_factory=dict)
    deliveries: list[Delivery] = field(default_factory=list)

    def create_queues(self) -> Cloud:
        for function in ("planner", "executor"):
            dlq: Queue = "planner_dlq" if function == "planner" else "executor_dlq"
            self._create(dlq, {"MessageRetentionPeriod": "1209600"})
            redrive = {"deadLetterTargetArn": self.arns[dlq], "maxReceiveCount": MAX_RECEIVES}
            self._create(
                function, {"VisibilityTimeout": "900", "RedrivePolicy": json.dumps(redrive)}
            )
        return self

    def _create(self, queue: Queue, attributes: dict[str, str]) -> None:
        url = self.sqs.create_queue(QueueName=f"{self.prefix}-{queue}", Attributes=attributes)
        self.urls[queue] = url["QueueUrl"]
        found = self.sqs.get_queue_attributes(QueueUrl=url["QueueUrl"], AttributeNames=["QueueArn"])
        self.arns[queue] = found["Attributes"]["QueueArn"]

    def settings(self) -> dict[str, str]:
        """The queue settings infra/serverless.yml gives every function."""
        return {
            "invoker_transport": "sqs",
            "planner_queue_url": self.urls["planner"],
            "executor_queue_url": self.urls["executor"],
            "planner_dead_letter_queue_url": self.urls["planner_dlq"],
            "executor_dead_letter_queue_url": self.urls["executor_dlq"],
        }

    def depth(self, queue: Queue) -> int:
        """Messages in the queue, visible or in flight."""
        found = self.sqs.get_queue_attributes(
            QueueUrl=self.urls[queue],
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return int(found["ApproximateNumberOfMessages"]) + int(
            found["ApproximateNumberOfMessagesNotVisible"]
        )

    def bodies(self, queue: Queue) -> list[dict[str, Any]]:
        """The bodies waiting in a queue (received and released at once: nothing consumed,
        but each counts as a receive towards `MAX_RECEIVES`)."""
        messages = self.sqs.receive_message(
            QueueUrl=self.urls[queue], MaxNumberOfMessages=10, VisibilityTimeout=0
        )
        return [json.loads(m["Body"]) for m in messages.get("Messages", [])]

    def take(self, queue: Queue) -> dict[str, Any]:
        """Receive and delete one message (it is lost); its body."""
        (message,) = self.sqs.receive_message(QueueUrl=self.urls[queue], MaxNumberOfMessages=1)[
            "Messages"
        ]
        self.sqs.delete_message(QueueUrl=self.urls[queue], ReceiptHandle=message["ReceiptHandle"])
        body: dict[str, Any] = json.loads(message["Body"])
        return body

    def send(self, queue: Queue, body: dict[str, Any]) -> None:
        self.sqs.send_message(QueueUrl=self.urls[queue], MessageBody=json.dumps(body))

    async def deliver(
        self,
        queue: Queue,
        function: Function,
        *,
        after: Callable[[Delivery], Awaitable[None]] | None = None,
    ) -> Delivery | None:
        """Receive one message and invoke `function` with it, like the event source mapping;
        None when the queue has nothing visible (moto moves a message past its last delivery
        to the dead-letter queue on that receive)."""
        received = self.sqs.receive_message(
            QueueUrl=self.urls[queue],
            MaxNumberOfMessages=1,
            WaitTimeSeconds=0,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        if not received:
            return None
        message = received[0]
        response = await function.invoke(self.event(queue, message))
        failures = {f["itemIdentifier"] for f in response.get("batchItemFailures", [])}
        delivery = Delivery(
            queue,
            json.loads(message["Body"]),
            int(message["Attributes"]["ApproximateReceiveCount"]),
            message["MessageId"] in failures,
        )
        self.deliveries.append(delivery)
        if not delivery.failed:  # a failed one comes back when the consumer said it would
            self.sqs.delete_message(
                QueueUrl=self.urls[queue], ReceiptHandle=message["ReceiptHandle"]
            )
        if after is not None:
            await after(delivery)
        return delivery

    def event(self, queue: Queue, message: dict[str, Any]) -> dict[str, Any]:
        """The SQS event Lambda builds for one message (the committed event, filled in)."""
        name = "agent_planner" if queue == "planner" else "agent_executor"
        kind = "run_plan" if queue == "planner" else "run_step"
        event = copy.deepcopy(lambda_event(f"{name}_sqs_{kind}.json"))
        record = event["Records"][0]
        attributes = message["Attributes"]
        record.update(
            messageId=message["MessageId"],
            receiptHandle=message["ReceiptHandle"],
            body=message["Body"],
            md5OfBody=hashlib.md5(message["Body"].encode()).hexdigest(),
            eventSourceARN=self.arns[queue],
            awsRegion=self.arns[queue].split(":")[3],
        )
        record["messageAttributes"] = {  # as Lambda gives them: camelCase, lists empty
            name: {
                "stringValue": value["StringValue"],
                "stringListValues": [],
                "binaryListValues": [],
                "dataType": value["DataType"],
            }
            for name, value in message.get("MessageAttributes", {}).items()
        }
        record["attributes"].update(
            ApproximateReceiveCount=attributes["ApproximateReceiveCount"],
            SentTimestamp=attributes["SentTimestamp"],
            ApproximateFirstReceiveTimestamp=attributes.get(
                "ApproximateFirstReceiveTimestamp", attributes["SentTimestamp"]
            ),
        )
        return event

    async def drain(
        self,
        functions: dict[str, Function],
        *,
        limit: int = 200,
        after: Callable[[Delivery], Awaitable[None]] | None = None,
    ) -> list[Delivery]:
        """Deliver until both queues are empty (executor messages first); the deliveries."""
        done: list[Delivery] = []
        for _ in range(limit):
            delivery = await self.deliver("executor", functions["agent_executor"], after=after)
            if delivery is None:
                delivery = await self.deliver("planner", functions["agent_planner"], after=after)
            if delivery is None:
                return done
            done.append(delivery)
        raise AssertionError(f"the queues did not drain in {limit} deliveries")
