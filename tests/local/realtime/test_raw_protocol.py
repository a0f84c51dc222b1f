"""Wire conformance with a bare websocket: framing, replies, refs, join_refs, errors."""

from __future__ import annotations

import json
import re
import struct

import jwt
import pytest
from realtime import AsyncRealtimeClient
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from local.auth.keys import mint_token
from local.realtime import RealtimeServer
from shared.kernel.settings import LOCAL_JWT_SECRET
from tests.support.realtime_clients import RawSocket, anon_key, service_key

OK_EMPTY = {"status": "ok", "response": {}}
BINDINGS = [
    {"event": "*", "schema": "public", "table": "agent_chat_messages"},
    {"event": "INSERT", "table": "chat_messages"},  # no schema: echoed without one
    {"event": "UPDATE", "schema": "public", "table": "chat_messages", "filter": "role=eq.user"},
]


async def test_v1_heartbeat_replies_echo_the_ref(realtime: RealtimeServer) -> None:
    sock = await RawSocket.open(realtime.realtime_url, anon_key())
    for ref in ("hb-1", None):
        await sock.send("phoenix", "heartbeat", {}, ref)
        reply = await sock.recv_json()
        assert reply == {"topic": "phoenix", "event": "phx_reply", "payload": OK_EMPTY, "ref": ref}
    await sock.close()


async def test_v2_heartbeat_reply(realtime: RealtimeServer) -> None:
    sock = await RawSocket.open(realtime.realtime_url, anon_key(), "2.0.0")
    await sock.send("phoenix", "heartbeat", {}, "7")
    assert await sock.recv_json() == [None, "7", "phoenix", "phx_reply", OK_EMPTY]
    await sock.close()


async def test_v1_join_echoes_bindings_then_system(realtime: RealtimeServer) -> None:
    sock = await RawSocket.open(realtime.realtime_url, anon_key())
    config = {"broadcast": {"self": False}, "postgres_changes": BINDINGS}
    reply = await sock.join("realtime:room-v1", config, access_token=service_key())
    assert set(reply) == {"topic", "event", "payload", "ref"}
    assert (reply["event"], reply["ref"], reply["payload"]["status"]) == ("phx_reply", "1", "ok")
    echoed = reply["payload"]["response"]["postgres_changes"]
    assert [{k: v for k, v in b.items() if k != "id"} for b in echoed] == BINDINGS
    ids = [b["id"] for b in echoed]
    assert len(set(ids)) == 3 and all(isinstance(i, int) and i > 0 for i in ids)
    assert await sock.recv_json() == {
        "topic": "realtime:room-v1",
        "event": "system",
        "payload": {
            "channel": "room-v1",
            "extension": "postgres_changes",
            "message": "Subscribed to PostgreSQL",
            "status": "ok",
        },
        "ref": None,
    }
    await sock.close()


async def test_v2_channel_pushes_carry_the_join_ref(realtime: RealtimeServer) -> None:
    sock = await RawSocket.open(realtime.realtime_url, anon_key(), "2.0.0")
    config = {"presence": {"enabled": True, "key": "me"}, "postgres_changes": BINDINGS[:1]}
    await sock.send("realtime:room-v2", "phx_join", {"config": config}, "4", "4")
    reply = await sock.recv_json()
    assert reply[:4] == ["4", "4", "realtime:room-v2", "phx_reply"]
    assert await sock.recv_json() == ["4", None, "realtime:room-v2", "presence_state", {}]
    system = await sock.recv_json()
    assert system[:4] == ["4", None, "realtime:room-v2", "system"]
    await sock.send(
        "realtime:room-v2", "presence", {"event": "track", "payload": {"u": 1}}, "5", "4"
    )
    frames = [await sock.recv_json(), await sock.recv_json()]
    diff = next(f for f in frames if f[3] == "presence_diff")
    assert diff[:3] == [None, None, "realtime:room-v2"]  # fastlane: no join_ref
    (meta,) = diff[4]["joins"]["me"]["metas"]
    assert meta["u"] == 1 and isinstance(meta["phx_ref"], str)
    assert ["4", "5", "realtime:room-v2", "phx_reply", OK_EMPTY] in frames
    await sock.close()


async def test_unknown_topics_and_empty_topic_names(realtime: RealtimeServer) -> None:
    sock = await RawSocket.open(realtime.realtime_url, anon_key())
    await sock.send("realtime:never-joined", "broadcast", {"event": "x"}, "2")
    unmatched = {"status": "error", "response": {"reason": "unmatched topic"}}
    assert (await sock.recv_json())["payload"] == unmatched
    assert (await sock.join("room-without-prefix"))["payload"] == unmatched
    refused = await sock.join("realtime:")
    reason = "TopicNameRequired: You must provide a topic name"
    assert refused["payload"] == {"status": "error", "response": {"reason": reason}}
    await sock.close()


async def test_leave_replies_then_closes(realtime: RealtimeServer) -> None:
    sock = await RawSocket.open(realtime.realtime_url, anon_key())
    joined = await sock.join("realtime:leaving", ref="9")
    assert joined["payload"] == {"status": "ok", "response": {"postgres_changes": []}}
    assert set(joined) == {"topic", "event", "payload", "ref"}
    await sock.send("realtime:leaving", "phx_leave", {}, "10", "9")
    reply, close = await sock.recv_json(), await sock.recv_json()
    assert (reply["event"], reply["ref"], reply["payload"]) == ("phx_reply", "10", OK_EMPTY)
    assert close == {"topic": "realtime:leaving", "event": "phx_close", "payload": {}, "ref": "9"}
    await sock.close()


async def test_a_second_join_replaces_the_first(realtime: RealtimeServer) -> None:
    sock = await RawSocket.open(realtime.realtime_url, anon_key(), "2.0.0")
    await sock.send("realtime:twice", "phx_join", {"config": {}}, "1", "1")
    await sock.recv_json()
    await sock.send("realtime:twice", "phx_join", {"config": {}}, "2", "2")
    assert await sock.recv_json() == ["1", "1", "realtime:twice", "phx_close", {}]
    assert (await sock.recv_json())[:4] == ["2", "2", "realtime:twice", "phx_reply"]
    await sock.close()


async def test_binary_broadcasts_cross_serializers(realtime: RealtimeServer) -> None:
    topic, config = "realtime:bin", {"broadcast": {"self": True}}
    sender = await RawSocket.open(realtime.realtime_url, anon_key(), "2.0.0")
    v2 = await RawSocket.open(realtime.realtime_url, anon_key(), "2.0.0")
    v1 = await RawSocket.open(realtime.realtime_url, anon_key())
    for sock in (sender, v2, v1):
        await sock.join(topic, config)
    await sender.ws.send(_kind3("1", topic, "ping", b'{"n":1}', json_payload=True))
    expected_kind4 = bytes([4, len(topic), 4, 0, 1]) + topic.encode() + b'ping{"n":1}'
    assert await sender.recv() == expected_kind4  # self: true
    assert await v2.recv() == expected_kind4
    assert await v1.recv_json() == {
        "topic": topic,
        "event": "broadcast",
        "ref": None,
        "payload": {"event": "ping", "payload": {"n": 1}, "type": "broadcast"},
    }
    await sender.ws.send(_kind3("1", topic, "blob", b"\x00\xff", json_payload=False))
    assert await v2.recv() == bytes([4, len(topic), 4, 0, 0]) + topic.encode() + b"blob\x00\xff"
    await v1.send(topic, "broadcast", {"type": "broadcast", "event": "after", "payload": {}}, None)
    # V1 never got the binary payload: the next thing it sees is its own JSON broadcast.
    assert (await v1.recv_json())["payload"]["event"] == "after"
    assert await v2.recv_json() == [
        None,
        None,
        topic,
        "broadcast",
        {"type": "broadcast", "event": "after", "payload": {}},
    ]
    for sock in (sender, v2, v1):
        await sock.close()


def _kind3(join_ref: str, topic: str, event: str, payload: bytes, *, json_payload: bool) -> bytes:
    strings = [join_ref.encode(), b"", topic.encode(), event.encode(), b""]
    header = struct.pack("!B5BB", 3, *map(len, strings), 1 if json_payload else 0)
    return header + b"".join(strings) + payload


@pytest.mark.parametrize(
    ("token", "message"),
    [
        ("", "API key is missing"),
        ("not-a-jwt", "The token provided is not a valid JWT"),
        (mint_token("x" * 40, role="anon"), "Failed to validate JWT signature"),
        (mint_token(LOCAL_JWT_SECRET, role="anon", expires_in=-10), "Token has expired"),
        (
            jwt.encode({"exp": 9_999_999_999}, LOCAL_JWT_SECRET),
            "Fields `role` and `exp` are required in JWT",
        ),
    ],
)
async def test_bad_keys_are_refused_before_the_upgrade(
    realtime: RealtimeServer, token: str, message: str
) -> None:
    url = realtime.realtime_url.replace("http", "ws") + f"/websocket?apikey={token}"
    with pytest.raises(InvalidStatus) as refused:
        await connect(url)
    assert refused.value.response.status_code == 401
    assert json.loads(refused.value.response.body or b"") == {"error": message}


async def test_unknown_vsn_is_refused(realtime: RealtimeServer) -> None:
    url = realtime.realtime_url.replace("http", "ws") + f"/websocket?apikey={anon_key()}&vsn=3.0.0"
    with pytest.raises(InvalidStatus) as refused:
        await connect(url)
    assert refused.value.response.status_code == 403


async def test_x_api_key_header_wins_over_the_query(realtime: RealtimeServer) -> None:
    url = realtime.realtime_url.replace("http", "ws") + "/websocket?apikey=garbage"
    async with connect(url, additional_headers={"x-api-key": anon_key()}) as ws:
        await ws.send(
            json.dumps({"topic": "phoenix", "event": "heartbeat", "payload": {}, "ref": "1"})
        )
        assert json.loads(await ws.recv())["payload"] == OK_EMPTY


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ({"access_token": "nonsense"}, "MalformedJWT: The token provided is not a valid JWT"),
        (
            {"access_token": mint_token(LOCAL_JWT_SECRET, expires_in=-5)},
            r"InvalidJWTToken: Token has expired \d+ seconds ago",
        ),
        (
            {"config": {"broadcast": {"replay": {}}}},
            "UnableToReplayMessages: Replay is not allowed for public channels",
        ),
    ],
)
async def test_join_errors(
    realtime: RealtimeServer, payload: dict[str, object], reason: str
) -> None:
    sock = await RawSocket.open(realtime.realtime_url, anon_key())
    await sock.send("realtime:refused", "phx_join", {"config": {}, **payload}, "1", "1")
    reply = await sock.recv_json()
    assert reply["payload"]["status"] == "error"
    assert re.fullmatch(reason, reply["payload"]["response"]["reason"])
    await sock.close()


async def test_token_refresh_is_silent_and_expiry_shuts_the_channel(
    realtime: RealtimeServer,
) -> None:
    sock = await RawSocket.open(realtime.realtime_url, anon_key())
    await sock.join("realtime:tokens")
    fresh = mint_token(LOCAL_JWT_SECRET, role="anon", expires_in=120)
    await sock.send("realtime:tokens", "access_token", {"access_token": fresh}, None, "1")
    await sock.send("phoenix", "heartbeat", {}, "hb")
    assert (await sock.recv_json())["topic"] == "phoenix"  # nothing answered the refresh
    stale = mint_token(LOCAL_JWT_SECRET, role="anon", expires_in=-30)
    await sock.send("realtime:tokens", "access_token", {"access_token": stale}, None, "1")
    system, close = await sock.recv_json(), await sock.recv_json()
    assert system["event"] == "system" and system["ref"] is None
    assert system["payload"]["status"] == "error" and system["payload"]["extension"] == "system"
    assert system["payload"]["channel"] == "tokens"
    assert system["payload"]["message"].startswith("Token has expired ")
    assert close == {"topic": "realtime:tokens", "event": "phx_close", "payload": {}, "ref": "1"}
    await sock.close()


@pytest.mark.parametrize(
    ("binding", "message"),
    [
        (
            {"event": "*", "schema": "public", "table": "agents"},
            "Unable to subscribe to changes with given parameters. Please check Realtime is "
            "enabled for the given connect parameters: [event: *, schema: public, "
            "table: agents, filters: [], select: nil]",
        ),
        (
            {
                "event": "INSERT",
                "schema": "public",
                "table": "chat_messages",
                "filter": "nope=eq.1",
            },
            "Unable to subscribe to changes with given parameters. An exception happened so "
            "please check your connect parameters: [event: INSERT, schema: public, "
            'table: chat_messages, filters: [{"nope", "eq", "1", false}], select: nil]. '
            "Exception: ERROR P0001 (raise_exception) invalid column for filter nope",
        ),
    ],
)
async def test_unusable_bindings_join_but_report_a_system_error(
    realtime: RealtimeServer, binding: dict[str, str], message: str
) -> None:
    sock = await RawSocket.open(realtime.realtime_url, anon_key())
    reply = await sock.join("realtime:bad-binding", {"postgres_changes": [binding]})
    assert reply["payload"]["status"] == "ok"
    system = await sock.recv_json()
    assert system["payload"] == {
        "channel": "bad-binding",
        "extension": "postgres_changes",
        "message": message,
        "status": "error",
    }
    await sock.close()


async def test_malformed_frames_are_dropped_and_the_socket_stays(realtime: RealtimeServer) -> None:
    sock = await RawSocket.open(realtime.realtime_url, anon_key())
    await sock.ws.send('{"topic": "phoenix", "event": "heartbeat"}')
    await sock.ws.send("not json")
    await sock.send("phoenix", "heartbeat", {}, "after")
    assert (await sock.recv_json())["ref"] == "after"
    await sock.close()


async def test_python_client_gives_up_on_a_refused_key(realtime: RealtimeServer) -> None:
    client = AsyncRealtimeClient(
        realtime.realtime_url, "not-a-jwt", max_retries=2, initial_backoff=0.01
    )
    with pytest.raises(InvalidStatus) as refused:
        await client.connect()
    assert refused.value.response.status_code == 401
