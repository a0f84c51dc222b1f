"""A plan as a Markdown document: request, steps, every agent-to-agent message, the answer.

This is the original system's "discussion file", rendered on demand from the tables instead of
being written alongside them, so it can never disagree with what was stored.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from uuid import UUID

from shared.auth.access_tokens import User
from shared.db import Database, chats, dialogue, plans
from shared.db._rows import fetch_all
from shared.db.database import Connection
from shared.db.records import Agent, AgentMessage, AgentThread, ChatMessage, Plan, PlanStep, columns
from shared.kernel.errors import NotFound
from shared.usecases.plan_views import SHOWN_REMOVED
from shared.usecases.retention import removed_details

PREVIEW = 2000


async def plan_transcript(db: Database, user: User, plan_id: UUID) -> str:
    """The Markdown transcript of one of the user's plans; `NotFound` for anyone else, and
    once its session is deleted."""
    async with db.as_user(user.id, read_only=True, claims=user.claims) as conn:
        plan = await plans.get_user_plan(conn, plan_id=plan_id)
        if plan is None:
            raise NotFound(f"Plan {plan_id} not found")
        steps = await plans.list_steps(conn, plan_id=plan_id)
        threads = await dialogue.list_threads(conn, plan_id=plan_id)
        said: dict[UUID, list[AgentMessage]] = {t.id: [] for t in threads}
        for message in await dialogue.list_plan_dialogue(conn, plan_id=plan_id):
            if message.agent_session_id in said:
                said[message.agent_session_id].append(message)
        agents = await _agents(conn, plan)
        messages = await _plan_messages(conn, plan)
        removed = await removed_details(conn, [plan.id], SHOWN_REMOVED)
    lines = _render(plan, steps, threads, said, agents, messages, [r.note for r in removed])
    return "\n".join(lines) + "\n"


async def _agents(conn: Connection, plan: Plan) -> dict[UUID, Agent]:
    rows = await fetch_all(
        conn,
        Agent,
        f"SELECT {columns(Agent)} FROM agents WHERE chat_session_id = %s",
        (plan.session_id,),
    )
    return {agent.id: agent for agent in rows}


async def _plan_messages(conn: Connection, plan: Plan) -> list[ChatMessage]:
    request = await chats.get_message(conn, message_id=plan.user_message_id)
    replies = await fetch_all(
        conn,
        ChatMessage,
        f"SELECT {chats.READ_MESSAGE} FROM chat_messages m WHERE m.plan_id = %s ORDER BY m.seq",
        (plan.id,),
    )
    return ([request] if request else []) + [m for m in replies if m.id != plan.user_message_id]


def _render(
    plan: Plan,
    steps: list[PlanStep],
    threads: list[AgentThread],
    said: dict[UUID, list[AgentMessage]],
    agents: dict[UUID, Agent],
    messages: list[ChatMessage],
    removed: list[str],
) -> Iterable[str]:
    yield f"# Plan: {plan.goal or 'untitled'}"
    yield ""
    yield (
        f"- Strategy: {plan.strategy or 'undecided'} · Status: {plan.status} · "
        f"Cost: ${plan.cost_usd:.6f} · Tokens: {plan.prompt_tokens} in "
        f"({plan.cache_hit_tokens} cached) / {plan.completion_tokens} out"
    )
    if plan.error:
        yield f"- Error: {plan.error}"
    for note in removed:  # what is not below, and why
        yield f"- Removed: {note}"
    for message in messages:
        heading = "Request" if message.role == "user" else f"{message.role.title()} message"
        yield from ("", f"## {heading}", "", _quote(message.content))
    if steps:
        yield from ("", "## Steps", "")
        for step in steps:
            who = "executor" if step.executor_required else "planner"
            deps = f" (after {', '.join(map(str, step.depends_on))})" if step.depends_on else ""
            yield f"{step.step_number}. **[{step.status}]** {step.description} — {who}{deps}"
            outcome = step.result or step.error
            if outcome:
                yield f"   - {'Result' if step.result else 'Error'}: {_one_line(outcome)}"
    for thread in threads:
        yield from _render_thread(thread, said[thread.id], agents, steps)


def _render_thread(
    thread: AgentThread,
    messages: list[AgentMessage],
    agents: dict[UUID, Agent],
    steps: list[PlanStep],
) -> Iterable[str]:
    number = next((s.step_number for s in steps if s.id == thread.step_id), None)
    child = agents.get(thread.child_agent_id)
    title = f"Step {number}" if number else "Thread"
    model = f", {child.model}" if child else ""
    yield ""
    yield f"## {title} — {thread.status}, {thread.turn_count} turns{model}"
    yield ""
    for message in messages:
        sender = _name(agents, message.sender_agent_id)
        receiver = _name(agents, message.receiver_agent_id)
        route = f"{sender} → {receiver}" if message.receiver_agent_id else sender
        yield f"- **{route}** · _{message.message_type}_{_tool_part(message)}"
        if message.content:
            yield f"  {_quote(message.content, indent='  ')}"


def _tool_part(message: AgentMessage) -> str:
    if not message.tool_name:
        return ""
    args = f" `{json.dumps(message.tool_args, ensure_ascii=False)}`" if message.tool_args else ""
    result = ""
    if message.message_type == "tool_result" and message.content:
        result = f" → `{_one_line(message.content)}`"
    return f" `{message.tool_name}`{args}{result}"


def _name(agents: dict[UUID, Agent], agent_id: UUID | None) -> str:
    agent = agents.get(agent_id) if agent_id else None
    return agent.name if agent else "system"


def _quote(text: str, *, indent: str = "") -> str:
    lines = (text[:PREVIEW] + ("…" if len(text) > PREVIEW else "")).splitlines() or [""]
    return f"\n{indent}".join(f"> {line}" for line in lines)


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat[:300] + ("…" if len(flat) > 300 else "")
