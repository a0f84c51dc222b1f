"""The local stack's demo turn, played the way a frontend would.

It signs in as the demo user (a JWT), creates a session through the chat function, subscribes
with the official Python Realtime client to the session's private channel, sends a message,
and prints the planner/executor dialogue as it arrives over Realtime, then the answer.

If the connection drops, it joins the channel again with **replay** from a second before the
last event it printed (docs/events.md): the events sent meanwhile come first, marked
"replayed", and one already printed (by `seq`) is not printed twice. After a drop, or when the
turn's `done` never arrives, it reads `GET /sessions/{id}/timeline?after_seq=` for the stored
messages it still has not seen (more than replay's 25, or past its retention).
"""

from __future__ import annotations

import asyncio
import contextlib
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import httpx
from realtime import AsyncRealtimeClient, RealtimeSubscribeStates
from realtime.types import BroadcastPayload, RealtimeChannelOptions
from websockets.exceptions import WebSocketException

from shared.events import EVENT_TYPES
from shared.events.realtime import session_topic

DEMO_MESSAGE = "plan my week: list my tasks and my calendar, then create a task"
REPLAY_LIMIT = 25
"""At most this many events are replayed on a join (hosted Realtime's most)."""
REJOIN_DELAY = 0.2
"""Seconds between two attempts to join again while the connection is down."""


@dataclass
class DemoTurn:
    """What the demo saw."""

    reply: dict[str, Any] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    subscribed: bool = False
    rejoins: int = 0
    """How often the channel was joined again after a drop (each time with replay)."""
    replayed: int = 0
    """Events printed from a replay."""
    from_timeline: list[dict[str, Any]] = field(default_factory=list)
    """Stored messages read from the timeline that no event had brought."""


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
        narrator = Narrator(realtime_url, anon_key, user_token, session_id, seen, say)
        following: asyncio.Task[None] | None = None
        try:
            if await narrator.join(since=None):
                following = asyncio.create_task(narrator.follow())
            answer = await http.post(
                "/chat/chat", json={"session_id": session_id, "message": message}
            )
            answer.raise_for_status()
            seen.reply = answer.json()
            if following is not None:
                try:
                    async with asyncio.timeout(10):
                        await narrator.done.wait()  # the last broadcasts may trail the answer
                except TimeoutError:
                    say("  (realtime: the turn's `done` did not arrive)")
            if seen.rejoins or not narrator.done.is_set():
                await narrator.read_timeline(http)
        finally:
            if following is not None:
                following.cancel()
            await narrator.close()
    return seen


class Narrator:
    """Prints each event of the session's channel once; joins again after a drop, with replay."""

    def __init__(
        self,
        realtime_url: str,
        anon_key: str,
        token: str,
        session_id: str,
        seen: DemoTurn,
        say: Callable[[str], None],
    ) -> None:
        self.realtime_url, self.anon_key, self.token = realtime_url, anon_key, token
        self.session_id, self.seen, self.say = session_id, seen, say
        self.client: AsyncRealtimeClient | None = None
        self.printed: set[int] = set()
        """The seqs of the events printed."""
        self.last_ts: datetime | None = None
        """The newest printed event's `ts`: a replay starts a second before it."""
        self.gap_after: int | None = None
        """The highest seq printed when the connection first dropped."""
        self.done, self.dropped = asyncio.Event(), asyncio.Event()

    async def join(self, since: datetime | None) -> bool:
        """Join the channel (with replay from `since`); whether it was joined."""
        client = AsyncRealtimeClient(self.realtime_url, self.anon_key, auto_reconnect=False)
        self.client, joined = client, asyncio.Event()

        def on_event(message: BroadcastPayload) -> None:
            if client is self.client:
                self._print(message)

        def on_state(state: RealtimeSubscribeStates, error: Exception | None) -> None:
            if client is not self.client:
                return
            if state == RealtimeSubscribeStates.SUBSCRIBED:
                self.seen.subscribed = True
            elif self.seen.subscribed:  # dropped after it was joined
                self.seen.subscribed = False
                self.dropped.set()
            if error is not None and not self.dropped.is_set():
                self.say(f"  (realtime: {state.value}: {error}; the turn runs anyway)")
            joined.set()

        try:
            await client.connect()
            await client.set_auth(self.token)
            channel = client.channel(session_topic(self.session_id), _options(since))
            for event_type in EVENT_TYPES:
                channel.on_broadcast(event_type, on_event)
            await channel.subscribe(on_state)
            async with asyncio.timeout(10):
                await joined.wait()
        except (OSError, TimeoutError, WebSocketException) as exc:
            self.say(f"  (realtime: cannot join: {type(exc).__name__}: {exc})")
        return self.seen.subscribed

    async def follow(self) -> None:
        """After every drop, join again (with replay since the last event printed) until
        cancelled."""
        while True:
            await self.dropped.wait()
            self.dropped.clear()
            if self.gap_after is None:
                self.gap_after = max(self.printed, default=0)
            since = None if self.last_ts is None else self.last_ts - timedelta(seconds=1)
            self.say(
                "  (realtime: connection lost; joining again, with replay of what was sent "
                "meanwhile)"
            )
            await self._close_client()
            while not await self.join(since):
                await self._close_client()
                await asyncio.sleep(REJOIN_DELAY)
            self.seen.rejoins += 1

    async def read_timeline(self, http: httpx.AsyncClient) -> None:
        """Print the stored messages after the gap that no event brought (the user's message
        and the planner's assistant rows have none: they are not shown)."""
        after = self.gap_after or 0
        found = await http.get(
            f"/chat/sessions/{self.session_id}/timeline", params={"after_seq": after}
        )
        found.raise_for_status()
        for entry in found.json()["entries"]:
            if entry["seq"] in self.printed or (entry["source"], entry["kind"]) in (
                ("chat", "user"),
                ("chat", "assistant"),
            ):
                continue
            self.seen.from_timeline.append(entry)
            said = f"{entry['kind']}: {entry['content']}"
            self.say(f"  [{entry['seq']:>3}] {'(timeline)':<14} {_short(said)}")

    async def close(self) -> None:
        await self._close_client()

    async def _close_client(self) -> None:
        client, self.client = self.client, None
        if client is not None:
            with contextlib.suppress(Exception):  # a socket already lost
                await client.close()

    def _print(self, message: BroadcastPayload) -> None:
        event = message["payload"]
        if event["seq"] in self.printed:
            return  # replayed, and printed already
        if event["type"] == "token" and self.done.is_set():
            return  # the answer's last words, sent over REST, trailing `done` (which has them)
        self.printed.add(event["seq"])
        ts = datetime.fromisoformat(event["ts"])
        self.last_ts = ts if self.last_ts is None else max(self.last_ts, ts)
        replayed = bool((message.get("meta") or {}).get("replayed"))
        self.seen.replayed += replayed
        self.seen.events.append(event)
        self.say(describe(event) + ("  (replayed)" if replayed else ""))
        if event["type"] == "done":
            self.done.set()


def _options(since: datetime | None) -> RealtimeChannelOptions:
    broadcast: dict[str, Any] = {"self": False, "ack": False}
    if since is not None:
        broadcast["replay"] = {"since": int(since.timestamp() * 1000), "limit": REPLAY_LIMIT}
    return {
        "config": {
            "broadcast": broadcast,  # type: ignore[typeddict-item]
            "presence": {"key": "", "enabled": False},
            "private": True,
        }
    }


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
        return f"{data.get('tool_name')} {data.get('tool_args') or data.get('content') or ''}"
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
