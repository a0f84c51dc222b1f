"""The local stack's demo turn, played the way a frontend would.

It signs in as the demo user (a JWT), creates a session through the chat function, subscribes
with the official Python Realtime client to the session's private channel, sends a message,
and prints the planner/executor dialogue as it arrives over Realtime, then the answer.
"""

from __future__ import annotations

import asyncio
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from realtime import AsyncRealtimeClient, RealtimeSubscribeStates
from realtime.types import BroadcastPayload

from shared.events import EVENT_TYPES
from shared.events.realtime import session_topic

DEMO_MESSAGE = "plan my week: list my tasks and my calendar, then create a task"


@dataclass
class DemoTurn:
    """What the demo saw."""

    reply: dict[str, Any] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    subscribed: bool = False


async def play(
    *,
    functions_url: str,
    realtime_url: str,
    anon_key: str,
    user_token: str,
    message: str = DEMO_MESSAGE,
    say: Callable[[str], None] = print,
) -> DemoTurn:
    """Send `message` as the user and narrate the turn from its Realtime channel."""
    seen = DemoTurn()
    headers = {"Authorization": f"Bearer {user_token}"}
    async with httpx.AsyncClient(base_url=functions_url, headers=headers, timeout=300) as http:
        created = await http.post("/chat/sessions", json={"title": "Demo"})
        created.raise_for_status()
        session_id = created.json()["id"]
        client = AsyncRealtimeClient(realtime_url, anon_key, auto_reconnect=False)
        try:
            done = await _subscribe(client, user_token, session_id, seen, say)
            answer = await http.post(
                "/chat/chat", json={"session_id": session_id, "message": message}
            )
            answer.raise_for_status()
            seen.reply = answer.json()
            if seen.subscribed:
                async with asyncio.timeout(10):
                    await done.wait()  # the last broadcasts may trail the HTTP answer
        finally:
            await client.close()
    return seen


async def _subscribe(
    client: AsyncRealtimeClient,
    token: str,
    session_id: str,
    seen: DemoTurn,
    say: Callable[[str], None],
) -> asyncio.Event:
    done, joined = asyncio.Event(), asyncio.Event()

    def on_event(message: BroadcastPayload) -> None:
        event = message["payload"]
        seen.events.append(event)
        say(describe(event))
        if event["type"] == "done":
            done.set()

    def on_state(state: RealtimeSubscribeStates, error: Exception | None) -> None:
        seen.subscribed = state == RealtimeSubscribeStates.SUBSCRIBED
        if error is not None:
            say(f"  (realtime: {state.value}: {error}; the turn runs anyway)")
        joined.set()

    await client.connect()
    await client.set_auth(token)
    channel = client.channel(
        session_topic(session_id),
        {"config": {"broadcast": {"self": False, "ack": False},
                    "presence": {"key": "", "enabled": False}, "private": True}},
    )  # fmt: skip
    for event_type in EVENT_TYPES:
        channel.on_broadcast(event_type, on_event)
    await channel.subscribe(on_state)
    async with asyncio.timeout(10):
        await joined.wait()
    return done


def describe(event: dict[str, Any]) -> str:
    """One line per event, the way a console frontend might show the dialogue."""
    data, kind = event.get("data") or {}, event["type"]
    return f"  [{event['seq']:>3}] {kind:<14} {_short(_detail(kind, data))}"


def _detail(kind: str, data: dict[str, Any]) -> str:
    if kind == "token":
        return str(data.get("text", ""))
    if kind == "plan_created":
        steps = [f"{s['step_number']}. {s['assignee']}: {s['description']}" for s in data["steps"]]
        return f"{data.get('goal', '')} — " + " | ".join(steps)
    if kind in ("step_started", "step_completed"):
        said = data.get("description") or data.get("result") or data.get("error") or ""
        return f"step {data['step_number']} {data.get('assignee') or data.get('status')}: {said}"
    if kind == "agent_message":
        tool = f" {data['tool_name']}" if data.get("tool_name") else ""
        return f"{data['message_type']}{tool}: {data.get('content') or data.get('tool_args') or ''}"
    if kind in ("tool_call", "tool_result"):
        return f"{data.get('tool_name')} {data.get('arguments') or data.get('content') or ''}"
    if kind == "usage":
        call = data.get("call") or {}
        tokens = f"{call.get('prompt_tokens')} in / {call.get('completion_tokens')} out"
        return f"{data.get('model')}: {tokens}, ${call.get('cost_usd')}"
    # Keys in a fixed order: an event sent from the database arrives as jsonb left it.
    first = [k for k in ("status", "strategy", "answer", "message", "error") if k in data]
    ordered = {k: data[k] for k in [*first, *sorted(set(data) - set(first))]}
    detail = {k: v for k, v in ordered.items() if v not in (None, "", [], {}) and k != "usage"}
    return _flatten(detail)


def _flatten(data: dict[str, Any]) -> str:
    return " · ".join(f"{key}={value}" for key, value in data.items())


def _short(text: str, width: int = 110) -> str:
    return textwrap.shorten(" ".join(text.split()), width=width, placeholder=" …")
