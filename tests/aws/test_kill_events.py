"""Events that exist exactly when their rows do, across kills.

The week plan of `test_kill_anywhere` runs through the queues while the session's owner is
subscribed to its private channel `session:<id>` on the local Realtime server, with the official
Python client and their own token; token deltas reach it too, over Realtime's REST endpoint. At
each kill point one write fails inside its transaction (the runner "dies" there) and
redelivery finishes the plan. Then what the subscriber received is held against the tables:

* it got exactly the events stored in `realtime.messages` (same seq, type and payload), each
  once, and the in-process sinks got the same ones — so no event left the process but through
  its transaction;
* no two stored events share a `seq`, and no token batch took a number of a row or event;
* every `seq` the subscriber never saw (token batches aside) is missing from the tables too: no
  dialogue row, planner tool result or stored event without the event;
* no event without its row: every `agent_message` names a stored dialogue row with its `seq`
  (a tool call's row, once answered, has its result's `seq`: the call's event names it still),
  every `tool_result` a stored `tool` message with its `seq`, every `tool_call` a stored
  message holding that call, every step event a stored step, and `done` a plan stored with
  that status.

Among the kill points are the event inserts themselves (`realtime.messages`): killing an event
kills its rows with it, or the check that every row has its event fails. Sending any event
after its rows' transaction committed (or from the process, past the database) fails it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import pytest
from psycopg.types.json import Jsonb
from realtime import AsyncRealtimeClient

from local.deepseek import FakeModelServer
from local.realtime import RealtimeServer
from shared.db import Database
from shared.db.delegations import DIALOGUE
from shared.events.realtime import session_topic
from tests.aws.test_kill_anywhere import (
    POINTS,
    Functions,
    KillPoint,
    assert_completed_once,
    run_with,
    script_week,
)
from tests.aws.test_queues import a_user_with_a_week
from tests.functions.conftest import SECRET, token
from tests.local.realtime.test_db_broadcast import Received, options
from tests.local.realtime.test_db_broadcast import join as join_channel
from tests.support.cloud import Cloud
from tests.support.factories import make_session
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.kills import Kill
from tests.support.llm_models import EXECUTOR_MODEL
from tests.support.realtime_clients import Inbox, config
from tests.support.scripting import Script
from tests.support.stack import SERVICE_KEY

EVENTS = "realtime.messages"
END = "test_end"
"""A marker the test sends from the database after the plan: delivered after everything else."""


def sent(kind: str, extra: str = "") -> str:
    return f"NEW.extension = 'broadcast' AND NEW.payload ->> 'type' = '{kind}'{extra}"


EVENT_POINTS = [
    KillPoint("plan_created sent", EVENTS, sent("plan_created")),
    KillPoint(
        "executor's tool result sent",
        EVENTS,
        sent("agent_message", " AND NEW.payload #>> '{data,message_type}' = 'tool_result'"),
    ),
    KillPoint(
        "an executor's usage sent",
        EVENTS,
        sent("usage", f" AND NEW.payload #>> '{{data,model}}' = '{EXECUTOR_MODEL}'"),
    ),
    KillPoint("step_completed sent", EVENTS, sent("step_completed")),
    KillPoint("done sent", EVENTS, sent("done")),
]
ALL_POINTS = [*POINTS, *EVENT_POINTS]


@pytest.fixture(scope="module")
async def realtime(database_url: str) -> AsyncIterator[RealtimeServer]:
    """The local Realtime server, taking the functions' keys. Its tenant may send more than
    hosted's 100 events a second (averaged over a minute): a turn sends about 40 from the
    database, a subscriber's delivery counts again, and this module plays 17 turns in a row."""
    settings = config(
        database_url,
        jwt_secret=SECRET,
        api_keys={SERVICE_KEY: "service_role"},
        max_events_per_second=100_000,
    )
    async with RealtimeServer(settings) as server:
        yield server


@pytest.fixture
def settings(settings: dict[str, Any], realtime: RealtimeServer) -> dict[str, Any]:
    """The functions' settings, with Realtime's REST endpoint for token deltas."""
    return {**settings, "supabase_url": realtime.url}


@dataclass
class Subscriber:
    """The session's owner, subscribed to its private channel."""

    client: AsyncRealtimeClient
    inbox: Inbox[Received]

    async def until_end(self) -> list[dict[str, Any]]:
        """Everything received, up to the end marker (which is not kept)."""
        got: list[dict[str, Any]] = []
        while (message := await self.inbox.get())["event"] != END:
            got.append(dict(message))
        return got


@pytest.fixture
async def subscribe(realtime: RealtimeServer) -> AsyncIterator[Any]:
    clients: list[AsyncRealtimeClient] = []

    async def join(user: UUID, session_id: UUID) -> Subscriber:
        client = AsyncRealtimeClient(realtime.realtime_url, token(role="anon"))
        clients.append(client)
        await client.set_auth(token(user))
        inbox: Inbox[Received] = Inbox()
        channel = client.channel(session_topic(session_id), options())
        assert await join_channel(channel, inbox) == ("SUBSCRIBED", None)
        return Subscriber(client, inbox)

    yield join
    for client in clients:
        await client.close()


async def rows(db: Database, query: str, *args: Any) -> list[dict[str, Any]]:
    async with db.service() as conn:
        cur = await conn.execute(query, args)
        return list(await cur.fetchall())


@dataclass
class Tables:
    """What the tables hold for one session: events, dialogue and messages (by seq), plans and
    steps (by id)."""

    events: list[dict[str, Any]]
    dialogue: dict[int, dict[str, Any]]
    messages: dict[int, dict[str, Any]]
    plans: dict[str, dict[str, Any]]
    steps: dict[str, dict[str, Any]]

    @classmethod
    async def read(cls, db: Database, session_id: UUID) -> Tables:
        events = await rows(
            db,
            "SELECT id::text, event, payload FROM realtime.messages "
            "WHERE topic = %s AND extension = 'broadcast' AND event <> %s",
            session_topic(session_id),
            END,
        )
        dialogue = await rows(  # the rows, and the delegations the runs hold
            db,
            f"SELECT id::text, seq, message_type FROM {DIALOGUE} d WHERE session_id = %s",
            session_id,
        )
        messages = await rows(
            db,
            "SELECT id::text, seq, role, tool_calls FROM chat_messages WHERE session_id = %s",
            session_id,
        )
        plans = await rows(
            db, "SELECT id::text, status FROM agent_plans WHERE session_id = %s", session_id
        )
        steps = await rows(
            db,
            "SELECT s.id::text, s.status FROM agent_plan_steps s "
            "JOIN agent_plans p ON p.id = s.plan_id WHERE p.session_id = %s",
            session_id,
        )
        return cls(
            events,
            {r["seq"]: r for r in dialogue},
            {r["seq"]: r for r in messages},
            {r["id"]: r for r in plans},
            {r["id"]: r for r in steps},
        )

    @property
    def seqs(self) -> list[int]:
        """The stored events' seqs."""
        return [int(e["payload"]["seq"]) for e in self.events]


def clean(payload: dict[str, Any]) -> dict[str, Any]:
    """An event as Parley made it: without the `id` key `realtime.send()` adds."""
    return {k: v for k, v in payload.items() if k != "id"}


def by_seq(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(events, key=lambda e: int(e["seq"]))


def assert_received_as_stored(
    tables: Tables, live: list[dict[str, Any]], local: list[dict[str, Any]]
) -> None:
    """The subscriber got exactly the stored events, each once, as stored; so did this
    process's own sinks (nothing went out but through the database); no seq is used twice."""
    assert Counter(m["meta"]["id"] for m in live) == Counter(e["id"] for e in tables.events)
    stored = {e["id"]: e for e in tables.events}
    for message in live:
        row = stored[message["meta"]["id"]]
        assert (message["event"], message["payload"]) == (row["event"], row["payload"])
        assert message["payload"]["type"] == message["event"]
    assert by_seq(local) == by_seq(clean(e["payload"]) for e in tables.events)
    duplicated = [seq for seq, n in Counter(tables.seqs).items() if n > 1]
    assert not duplicated, f"two stored events share a seq: {duplicated}"


def assert_no_unannounced_row(tables: Tables, live: list[dict[str, Any]]) -> None:
    """No gap in what the subscriber saw that is not a gap in the tables.

    Two kinds of row are announced without a number of their own: the user's message (its
    sender has it: no event) and a planner's assistant message, which the events about it name
    by `message_id` (`tool_call` for its calls, `done` or `error` for an answer or notice).
    """
    seen = {int(m["payload"]["seq"]) for m in live}
    named = {m["payload"]["data"].get("message_id") for m in live}
    unnamed = [
        m for m in tables.messages.values() if m["role"] == "assistant" and m["id"] not in named
    ]
    assert not unnamed, f"an assistant message no event names: {unnamed}"
    tools = {seq for seq, m in tables.messages.items() if m["role"] == "tool"}
    missing = sorted((set(tables.dialogue) | tools | set(tables.seqs)) - seen)
    assert not missing, "stored without its event: " + repr(
        [tables.dialogue.get(n) or tables.messages.get(n) or n for n in missing]
    )
    for step_id, step in tables.steps.items():
        ended = [
            m["payload"]["data"]["status"]
            for m in live
            if m["event"] == "step_completed" and m["payload"]["data"]["step_id"] == step_id
        ]
        assert ended[-1:] == [step["status"]], f"step {step} announced as {ended}"
    for plan_id, plan in tables.plans.items():
        done = [
            m["payload"]["data"]["status"]
            for m in live
            if m["event"] == "done" and m["payload"]["plan_id"] == plan_id
        ]
        assert done == [plan["status"]], f"plan {plan} announced as {done}"


def assert_no_event_without_its_row(tables: Tables, live: list[dict[str, Any]]) -> None:
    by_id = {m["id"]: m for m in tables.messages.values()}
    dialogue_by_id = {m["id"]: m for m in tables.dialogue.values()}
    for message in live:
        event = message["payload"]
        kind, data, seq = event["type"], event["data"], event["seq"]
        assert event["plan_id"] is None or event["plan_id"] in tables.plans, event
        if kind == "agent_message":
            row = tables.dialogue.get(seq)
            if row is None and data["message_type"] == "tool_call":  # answered in its row
                row = dialogue_by_id.get(data["message_id"])
                assert row is not None and row["message_type"] == "tool_result", event
            assert row is not None and row["id"] == data["message_id"], f"no row for {event}"
        elif kind == "tool_result":
            row = tables.messages.get(seq)
            assert row is not None and row["id"] == data["message_id"], f"no row for {event}"
            assert row["role"] == "tool"
        elif kind == "tool_call":
            calls = (by_id.get(data["message_id"]) or {}).get("tool_calls") or ()
            assert data["tool_call_id"] in {c["id"] for c in calls}, f"no row for {event}"
        elif kind in ("step_started", "step_completed"):
            assert data["step_id"] in tables.steps, f"no step for {event}"
        elif kind == "done":
            plan = tables.plans.get(event["plan_id"])
            assert plan is not None and plan["status"] == data["status"], f"no plan for {event}"


async def assert_events_are_the_rows(
    db: Database, session_id: UUID, received: list[dict[str, Any]], events: InMemoryPublisher
) -> None:
    tables = await Tables.read(db, session_id)
    tokens = [m for m in received if m["event"] == "token"]
    live = [m for m in received if m["event"] != "token"]
    assert tokens, "no token batch reached the subscriber"
    assert "token" not in {e["event"] for e in tables.events}, "a token event was stored"
    token_seqs = {int(m["payload"]["seq"]) for m in tokens}
    taken = set(tables.seqs) | set(tables.dialogue) | set(tables.messages)
    assert not token_seqs & taken, "a token batch took the number of a row or an event"
    # A plan's token batches are numbered before its `done`, and arrive before it: the answer's
    # last batch is posted before the statement that sends `done`.
    for at, message in enumerate(received):
        if message["event"] == "done":
            plan, done_seq = message["payload"]["plan_id"], message["payload"]["seq"]
            late = [
                m["payload"]["seq"]
                for m in tokens
                if m["payload"]["plan_id"] == plan and m["payload"]["seq"] > done_seq
            ]
            assert not late, f"token batches numbered after done: {late}"
            after = [
                m
                for m in received[at + 1 :]
                if m["event"] == "token" and m["payload"]["plan_id"] == plan
            ]
            assert not after, "a token batch arrived after the turn's done"

    local = [
        json.loads(json.dumps(e.wire()))
        for e in events.events
        if e.session_id == session_id and e.type != "token"
    ]
    assert_received_as_stored(tables, live, local)
    assert_no_unannounced_row(tables, live)
    assert_no_event_without_its_row(tables, live)


async def end_marker(db: Database, session_id: UUID) -> None:
    async with db.service() as conn:
        await conn.execute(
            "SELECT realtime.send(%s, %s, %s, true)",
            (Jsonb({"type": END}), END, session_topic(session_id)),
        )


@pytest.mark.parametrize("point", ALL_POINTS, ids=[p.name for p in ALL_POINTS])
async def test_a_subscriber_gets_exactly_the_stored_rows_events(
    point: KillPoint,
    db: Database,
    cloud: Cloud,
    functions: Functions,
    script: Script,
    fake: FakeModelServer,
    events: InMemoryPublisher,
    subscribe: Any,
) -> None:
    user = await a_user_with_a_week(db)
    session = await make_session(db, user)
    subscriber: Subscriber = await subscribe(user, session.id)
    script_week(script, fake)
    async with Kill(db, point.table, point.when, on=point.on) as kill:
        plan_id, at_kill = await run_with(
            db, cloud, functions, fake, user, session_id=str(session.id)
        )
        assert await kill.fired() == 1
    assert at_kill is not None
    await assert_completed_once(db, fake, events, user, plan_id, at_kill)

    await end_marker(db, session.id)
    received = await subscriber.until_end()
    await assert_events_are_the_rows(db, session.id, received, events)
