"""`SqsInvoker`: the functions reach each other through SQS and never wait for one another.

Chat sends "run plan" and answers 202; the planner sends one "run step" per runnable executor
step and ends its invocation; an executor whose step settled sends "resume plan". Each function
consumes its queue through a Lambda event source mapping (`shared.runtime.queue_consumer`).

Standard queues, not FIFO: delivery is at least once and unordered, and neither matters —
every handler is idempotent and the run leases in the rows order the work (a FIFO group per
plan would add nothing but a lower throughput ceiling and deduplication windows to tune).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any
from uuid import UUID

from shared.agents.outcomes import PlanOutcome, StepOutcome
from shared.kernel.errors import ConfigurationError, UpstreamUnavailable
from shared.observability import tracing
from shared.queues.queue_messages import Message, ResumePlan, RunPlan, RunStep, dump
from shared.queues.senders import QueueSendFailed

if TYPE_CHECKING:
    from shared.services import Services

log = logging.getLogger(__name__)

NEVER_WAITS = (
    "INVOKER_TRANSPORT=sqs hands work to queues and never waits for another function: "
    "{what} cannot be awaited here. Send the turn with `wait: false` and watch the session's "
    "Realtime channel (or GET /plans/{{id}})."
)


class SqsInvoker:
    """Hands plans to the planner queue and steps to the executor queue."""

    hands_off = True

    def __init__(self, services: Services) -> None:
        self.services = services

    async def start_plan(self, *, plan_id: UUID) -> None:
        """Queue "run plan": the planner runs (or resumes) it in its own invocation."""
        await self.send(RunPlan(plan_id=plan_id))

    async def resume_plan(self, *, plan_id: UUID, step_id: UUID | None = None) -> None:
        """Queue "resume plan": a step of it settled."""
        await self.send(ResumePlan(plan_id=plan_id, step_id=step_id))

    async def start_step(self, *, plan_id: UUID, step_id: UUID, attempt: int) -> None:
        """Queue "run step" for an executor."""
        await self.send(RunStep(plan_id=plan_id, step_id=step_id, attempt=attempt))

    async def run_plan(self, *, plan_id: UUID) -> PlanOutcome:
        raise ConfigurationError(NEVER_WAITS.format(what="a plan"))

    async def run_step(self, *, step_id: UUID, attempt: int) -> StepOutcome:
        raise ConfigurationError(NEVER_WAITS.format(what="an executor step"))

    async def send(self, message: Message) -> None:
        """Queue `message`; `UpstreamUnavailable` when SQS cannot be reached or refuses it.
        With tracing on, the send is a PRODUCER span whose context (`traceparent`) the message
        carries in its attributes: its handling continues the trace."""
        function = "executor" if isinstance(message, RunStep) else "planner"
        url = queue_url(self.services, function)
        sender = self.services.queue_sender
        body = dump(message)
        queue = url.rsplit("/", 1)[-1]
        attributes = {
            "messaging.system": "aws_sqs",
            "messaging.operation.type": "send",
            "messaging.destination.name": queue,
            "parley.message.type": message.type,
        }
        try:
            with tracing.span(f"send {queue}", kind="producer", attributes=attributes) as span:
                # the trace goes on where the message is handled: its context in the message
                sent = await asyncio.to_thread(sender.send_message, url, body, tracing.carrier())
                span.set_attribute("messaging.message.id", sent)
        except QueueSendFailed as exc:
            log.error("could not queue %s: %s", body, exc)
            raise UpstreamUnavailable(
                f"The {function} queue could not be reached ({exc.code}); nothing is "
                "lost: send again (the same client_message_id returns this turn) or wait for "
                "the sweeper."
            ) from exc
        log.info("queued %s", body)


def queue_url(services: Services, function: str, *, dead_letters: bool = False) -> str:
    """The URL of a function's queue (or of its dead-letter queue), from the settings."""
    setting = f"{function}_{'dead_letter_' if dead_letters else ''}queue_url"
    url: Any = getattr(services.settings, setting)
    if not url:
        raise ConfigurationError(
            f"INVOKER_TRANSPORT=sqs needs {setting.upper()} (set by infra/serverless.yml)"
        )
    return str(url)
