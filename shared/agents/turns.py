"""A user's turn: store the message first (`start_turn`), then answer it (`run_plan`).

`start_turn` makes no model call and is idempotent on `client_message_id`: a resend returns the
same message and plan (`created=False`). Storing before answering means the user's words are
kept whatever happens to the answer. `run_turn` is both, in this process (tests, local stack).
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

from shared.agents.invoker import InProcessInvoker
from shared.agents.outcomes import TurnOutcome, TurnStarted
from shared.agents.prompts import PLANNER
from shared.db import agents, chats, plans
from shared.db.records import Plan
from shared.errors import InvalidInput, NotFound
from shared.events import Publisher

if TYPE_CHECKING:
    from shared.services import Services

MAX_MESSAGE_CHARS = 32_000
TITLE_CHARS = 60


async def start_turn(
    services: Services,
    *,
    user_id: UUID,
    session_id: UUID | None,
    message: str,
    client_message_id: str | None = None,
) -> TurnStarted:
    """Store the user's message (in a new session when `session_id` is None), make sure the
    session has its planner, and create the message's plan — one transaction, no model call."""
    text = message.strip()
    if not text:
        raise InvalidInput("The message is empty.")
    if len(text) > MAX_MESSAGE_CHARS:
        raise InvalidInput(f"The message is longer than {MAX_MESSAGE_CHARS} characters.")
    settings = services.settings
    budget = min(settings.planner_token_budget,
                 services.models.lookup(settings.llm_planner_model).context_window)  # fmt: skip
    async with services.db.service() as conn:
        if session_id is None:
            title = " ".join(text.split())[:TITLE_CHARS]
            session = await chats.create_session(conn, user_id=user_id, title=title)
        else:
            found = await chats.get_session(conn, session_id=session_id, user_id=user_id)
            if found is None or found.status == "deleted":
                raise NotFound(f"Chat session {session_id} not found")
            session = found
        stored, created = await chats.add_user_message(
            conn, session_id=session.id, user_id=user_id, content=text,
            client_message_id=client_message_id,
        )  # fmt: skip
        planner = await agents.ensure_planner(
            conn, user_id=user_id, chat_session_id=session.id, model=settings.llm_planner_model,
            token_budget=budget, system_prompt=PLANNER,
        )  # fmt: skip
        plan, _ = await plans.create_plan(
            conn, session_id=session.id, user_id=user_id, user_message_id=stored.id,
            planner_agent_id=planner.id,
        )  # fmt: skip
    return TurnStarted(session.id, stored.id, plan.id, planner.id, created)


async def run_turn(
    services: Services,
    *,
    user_id: UUID,
    session_id: UUID | None,
    message: str,
    publisher: Publisher,
    client_message_id: str | None = None,
) -> TurnOutcome:
    """`start_turn`, then `run_plan` in this process (executor steps in-process too)."""
    started = await start_turn(
        services, user_id=user_id, session_id=session_id, message=message,
        client_message_id=client_message_id,
    )  # fmt: skip
    outcome = await InProcessInvoker(services, publisher).run_plan(plan_id=started.plan_id)
    return TurnOutcome(started, outcome)


async def request_cancel(services: Services, *, plan_id: UUID, user_id: UUID | None = None) -> Plan:
    """Ask the agents working on the plan to stop; they do before their next model or tool
    call, and the plan ends `cancelled`. Cancelling a finished plan changes nothing."""
    async with services.db.service() as conn:
        plan = await plans.get_plan(conn, plan_id=plan_id, user_id=user_id)
        if plan is None:
            raise NotFound(f"Plan {plan_id} not found")
        if plan.status in ("completed", "failed", "cancelled"):
            return plan
        flagged = await plans.request_cancel(conn, plan_id=plan_id)
    assert flagged is not None
    return flagged
