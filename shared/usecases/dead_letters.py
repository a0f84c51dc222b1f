"""Messages that kept failing: the sweeper reads the dead-letter queues and ends their work.

A message lands in its queue's dead-letter queue after `maxReceiveCount` failed deliveries
(infra/serverless.yml). Its plan (or step) would otherwise stay unfinished, so each sweep
receives the dead letters and fails what they were about, cleanly
(`shared.agents.planner.abandoning`): a plan ends `failed` with `error` and `done`; a step ends
`failed` and its plan is resumed, to go on without it. What had ended already is left as it is, and
a letter about a plan or step that no longer exists (its user deleted) is logged. The messages are
*not* deleted: they stay for an operator (the DLQ depth alarm fires), hidden for `RECHECK_SECONDS`
after each sweep, which handles them again harmlessly — failing is idempotent. Purge them once
looked at.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from uuid import UUID

from pydantic import ValidationError

from shared.agents.planner.abandoning import fail_plan, fail_step
from shared.dispatch.sqs_invoker import SqsInvoker, queue_url
from shared.events import Publisher
from shared.queues.queue_messages import Message, RunStep, parse

if TYPE_CHECKING:
    from shared.services import Services

log = logging.getLogger(__name__)

RECHECK_SECONDS = 900
"""How long a dead letter stays hidden after a sweep handled it."""
MAX_BATCHES = 10
"""Receives per dead-letter queue per sweep (10 messages each)."""
PLAN_DEAD = (
    "This request could not be run: processing it failed repeatedly, so it was set aside for "
    "an operator. Your message is saved; send it again to retry."
)
STEP_DEAD = "This step could not be run: it failed repeatedly and was set aside for an operator."


@dataclass(slots=True)
class DeadLetters:
    """What one sweep did with the dead letters."""

    plans_failed: list[UUID] = field(default_factory=list)
    steps_failed: list[UUID] = field(default_factory=list)
    unreadable: int = 0
    busy: int = 0
    gone: int = 0
    """Dead letters about a plan or step that does not exist."""


async def handle_dead_letters(services: Services, publisher: Publisher) -> DeadLetters:
    """Fail the plans and steps of every dead letter in the two dead-letter queues."""
    found = DeadLetters()
    for function in ("planner", "executor"):
        if not getattr(services.settings, f"{function}_dead_letter_queue_url"):
            continue
        url = queue_url(services, function, dead_letters=True)
        for _ in range(MAX_BATCHES):
            letters = await _receive(services, url)
            for letter in letters:
                await _handle(services, publisher, letter, found)
            if len(letters) < 10:
                break
    return found


async def _receive(services: Services, url: str) -> list[dict[str, Any]]:
    response = await asyncio.to_thread(
        services.sqs.receive_message,
        QueueUrl=url,
        MaxNumberOfMessages=10,
        VisibilityTimeout=RECHECK_SECONDS,
        WaitTimeSeconds=0,
    )
    messages: list[dict[str, Any]] = response.get("Messages", [])
    return messages


async def _handle(
    services: Services, publisher: Publisher, letter: dict[str, Any], found: DeadLetters
) -> None:
    try:
        message: Message = parse(letter["Body"])
    except ValidationError:
        log.error(
            "dead letter %s is not a Parley message: %r",
            letter.get("MessageId"),
            letter.get("Body", "")[:500],
        )
        found.unreadable += 1
        return
    log.error("dead letter: %s", letter["Body"])
    if isinstance(message, RunStep):
        done = await fail_step(services, message.step_id, error=STEP_DEAD, publisher=publisher)
        if done == "failed":
            found.steps_failed.append(message.step_id)
            await SqsInvoker(services).resume_plan(plan_id=message.plan_id, step_id=message.step_id)
    else:
        done = await fail_plan(services, message.plan_id, error=PLAN_DEAD, publisher=publisher)
        if done == "failed":
            found.plans_failed.append(message.plan_id)
    if done == "busy":
        found.busy += 1
    elif done == "gone":
        log.warning(
            "dead letter %s names no plan or step (its user deleted?): purge it",
            letter.get("MessageId"),
        )
        found.gone += 1
