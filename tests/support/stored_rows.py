"""Reading back what a turn stored, for assertions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

from shared.db import Database, chats, dialogue, plans
from shared.db._rows import fetch_all
from shared.db.records import (
    Agent,
    AgentMessage,
    AgentThread,
    ChatMessage,
    Execution,
    Plan,
    PlanStep,
    columns,
)
from shared.events import Event
from tests.support.in_memory_publisher import InMemoryPublisher


@dataclass(frozen=True)
class Stored:
    """Every row a plan left behind."""

    plan: Plan
    steps: list[PlanStep]
    messages: list[ChatMessage]
    agents: list[Agent]
    threads: list[AgentThread]
    dialogue: dict[UUID, list[AgentMessage]]
    executions: list[Execution]

    def thread_of(self, step_number: int) -> AgentThread:
        step = next(s for s in self.steps if s.step_number == step_number)
        return next(t for t in self.threads if t.step_id == step.id)

    def types_of(self, step_number: int) -> list[str]:
        return [m.message_type for m in self.dialogue[self.thread_of(step_number).id]]

    @property
    def answer(self) -> ChatMessage:
        return next(m for m in self.messages if m.metadata.get("kind") == "answer")


async def stored(db: Database, plan_id: UUID) -> Stored:
    async with db.service() as conn:
        plan = await plans.get_plan(conn, plan_id=plan_id)
        assert plan is not None
        steps = await plans.list_steps(conn, plan_id=plan_id)
        messages = await chats.list_messages(conn, session_id=plan.session_id)
        found = await fetch_all(
            conn,
            Agent,
            f"SELECT {columns(Agent)} FROM agents WHERE chat_session_id = %s "
            "ORDER BY created_at, id",
            (plan.session_id,),
        )
        threads = await dialogue.list_threads(conn, plan_id=plan_id)
        said = {t.id: await dialogue.list_thread_messages(conn, thread_id=t.id) for t in threads}
        runs = await fetch_all(
            conn,
            Execution,
            f"SELECT {columns(Execution)} FROM agent_executions "
            "WHERE plan_id = %s ORDER BY created_at, id",
            (plan_id,),
        )
    return Stored(plan, steps, messages, found, threads, said, runs)


def types(publisher: InMemoryPublisher, plan_id: UUID | None = None) -> list[str]:
    """Event types, without the `token` and `usage` noise between them."""
    noise = ("token", "usage")
    return [
        e.type
        for e in publisher.events
        if e.type not in noise and (plan_id is None or e.plan_id == plan_id)
    ]


def of_type(publisher: InMemoryPublisher, kind: str) -> list[Event]:
    return [e for e in publisher.events if e.type == kind]


def streamed_text(publisher: InMemoryPublisher) -> str:
    return "".join(str(e.data["text"]) for e in of_type(publisher, "token"))


def data(event: Event) -> dict[str, Any]:
    return dict(event.data)
