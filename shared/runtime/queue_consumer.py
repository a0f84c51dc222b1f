"""A function consuming its queue: one SQS batch from Lambda's event source mapping.

Each record is handled on its own; the ones that fail are returned as `batchItemFailures`
(the mapping has `ReportBatchItemFailures`), so only they come back — after
`QUEUE_RETRY_SECONDS` × their delivery count (the consumer shortens their visibility timeout,
which is sized for Lambda's throttling retries, not for ours). After `maxReceiveCount`
deliveries they move to the queue's dead-letter queue, where the sweeper fails their plan or
step (`shared.usecases.dead_letters`).

* `run_plan` / `resume_plan` → `run_plan` in this invocation (its executor steps are queued,
  never awaited). A plan that has ended, or that another invocation holds, is left alone.
* `run_step` → the step attempt in this invocation; once the step has settled (now or before:
  a redelivery), "resume plan" is queued for its planner.

A message for a plan or step that no longer exists is dropped with a warning: retrying
cannot bring it back.

A record's log lines carry its message's ids (`shared.observability.logs`); with tracing on, its
handling is a CONSUMER span continuing the trace whose context (`traceparent`) the message carries
in its attributes — the sender's (`SqsInvoker.send`) — so a turn is one trace across the queues.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from shared.agents.planner.scheduler import UNSETTLED
from shared.dispatch.sqs_invoker import SqsInvoker
from shared.dispatch.transport import run_plan_here, run_step_here
from shared.kernel.errors import NotFound
from shared.observability import logs, tracing
from shared.queues.queue_messages import Message, ResumePlan, RunPlan, RunStep, parse

if TYPE_CHECKING:
    from shared.services import Services

log = logging.getLogger(__name__)
MAX_VISIBILITY = 900


async def consume(services: Services, records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Handle an SQS batch; the response Lambda expects for `ReportBatchItemFailures`."""
    failures = [
        {"itemIdentifier": str(record["messageId"])}
        for record in records
        if not await _consumed(services, record)
    ]
    return {"batchItemFailures": failures}


async def _consumed(services: Services, record: Mapping[str, Any]) -> bool:
    """Handle one record; whether it is done with (False: it comes back). Its log records
    carry the message's ids; with tracing on, its handling is a CONSUMER span in the trace
    whose context the message brought (`traceparent` attribute)."""
    message_id = str(record["messageId"])
    try:
        message: Message | None = parse(record["body"])
    except ValidationError as exc:
        message, invalid = None, exc
    queue = str(record.get("eventSourceARN", "")).rsplit(":", 1)[-1]
    attributes = {
        "messaging.system": "aws_sqs",
        "messaging.operation.type": "process",
        "messaging.destination.name": queue,
        "messaging.message.id": message_id,
        "messaging.message.delivery_count": _delivery(record),
        **tracing.invocation(),
    }
    with (
        logs.bound(**_ids(message)),
        tracing.span(
            f"process {queue}", kind="consumer", attributes=attributes, parent=trace_context(record)
        ) as span,
    ):
        try:
            if message is None:
                raise invalid
            await handle(services, message)
        except Exception as exc:
            log.exception(
                "message %s failed on delivery %s: it will be delivered again (then dead-lettered)",
                message_id,
                _delivery(record),
            )
            tracing.failed(span, exc)
            await _retry_soon(services, record)
            return False
    return True


def _ids(message: Message | None) -> dict[str, Any]:
    """The ids a message names, for its log records (a resume's step is the planner's news,
    not the work: only the plan)."""
    if isinstance(message, RunStep):
        return {"plan_id": message.plan_id, "step_id": message.step_id, "attempt": message.attempt}
    return {"plan_id": message.plan_id} if message is not None else {}


def trace_context(record: Mapping[str, Any]) -> dict[str, str]:
    """The W3C trace context a record's message carries (its `traceparent` and `tracestate`
    message attributes, as Lambda's SQS event gives them); empty without one."""
    found = record.get("messageAttributes") or {}
    return {
        name: str(found[name]["stringValue"])
        for name in ("traceparent", "tracestate")
        if isinstance(found.get(name), dict) and found[name].get("stringValue")
    }


def _delivery(record: Mapping[str, Any]) -> int:
    try:
        return int(record.get("attributes", {}).get("ApproximateReceiveCount", 1))
    except ValueError:
        return 1


async def _retry_soon(services: Services, record: Mapping[str, Any]) -> None:
    """Bring a failed message back after a short, growing delay (best effort)."""
    name = str(record.get("eventSourceARN", "")).rsplit(":", 1)[-1]
    urls = [services.settings.planner_queue_url, services.settings.executor_queue_url]
    url = next((u for u in urls if u and u.rsplit("/", 1)[-1] == name), None)
    delay = min(int(services.settings.queue_retry_seconds * _delivery(record)), MAX_VISIBILITY)
    try:
        if url is None:
            raise LookupError(f"no configured queue is named {name!r}")
        await asyncio.to_thread(
            services.sqs.change_message_visibility,
            QueueUrl=url,
            ReceiptHandle=record["receiptHandle"],
            VisibilityTimeout=delay,
        )
    except Exception:
        log.warning(
            "message %s comes back after its queue's visibility timeout (its retry "
            "delay could not be shortened)",
            record.get("messageId"),
            exc_info=True,
        )


async def handle(services: Services, message: Message) -> None:
    """Do what one message asks (idempotent: a redelivery does the work at most once)."""
    try:
        match message:
            case RunPlan() | ResumePlan():
                outcome = await run_plan_here(services, plan_id=message.plan_id, replay_ended=False)
                log.info(
                    "plan %s: %s%s",
                    message.plan_id,
                    outcome.status,
                    " (waits for its steps)" if outcome.handed_off else "",
                )
            case RunStep():
                await _run_step(services, message)
    except NotFound as exc:
        log.warning("dropped %s: %s", message.type, exc)


async def _run_step(services: Services, message: RunStep) -> None:
    step = await run_step_here(services, step_id=message.step_id, attempt=message.attempt)
    if step.running_elsewhere or step.status in UNSETTLED:
        return  # the invocation working on it sends the resume when it settles
    await SqsInvoker(services).resume_plan(plan_id=message.plan_id, step_id=message.step_id)
