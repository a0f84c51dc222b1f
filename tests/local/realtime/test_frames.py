"""Serializers, binding parsing and join payloads, without a server."""

from __future__ import annotations

import json

import pytest

from local.realtime.bindings import BindingError, Filter, binding_ids, parse_binding
from local.realtime.frames import (
    Frame,
    MalformedFrame,
    RawJson,
    UserBroadcast,
    V1Serializer,
    V2Serializer,
    encode_user_broadcast,
    serializer_for,
)
from local.realtime.join_request import parse_join


def test_v1_frames_hold_exactly_topic_event_payload_ref() -> None:
    encoded = V1Serializer().encode(Frame("realtime:a", "phx_reply", {"status": "ok"}, "3", "1"))
    assert encoded is not None
    assert json.loads(encoded) == {
        "topic": "realtime:a",
        "event": "phx_reply",
        "payload": {"status": "ok"},
        "ref": "3",
    }


def test_v2_frames_are_five_arrays() -> None:
    encoded = V2Serializer().encode(Frame("realtime:a", "system", {"x": 1}, None, "7"))
    assert json.loads(encoded) == ["7", None, "realtime:a", "system", {"x": 1}]


def test_raw_json_is_spliced_unparsed() -> None:
    frame = Frame("realtime:a", "postgres_changes", RawJson('{"ids": [1], "data": {"n": 1.50}}'))
    encoded = V2Serializer().encode(frame)
    assert isinstance(encoded, str) and encoded.endswith('{"ids": [1], "data": {"n": 1.50}}]')


def test_kind_3_push_decodes_to_a_broadcast() -> None:
    payload = b'{"n":1}'
    meta = b'{"a":1}'
    header = bytes([3, 1, 1, 10, 4, len(meta), 1])
    frame = V2Serializer().decode(header + b"12realtime:aping" + meta + payload)
    assert frame == Frame(
        "realtime:a", "broadcast", UserBroadcast("ping", payload, True, {"a": 1}), "2", "1"
    )


def test_kind_4_broadcast_layout() -> None:
    data = encode_user_broadcast("realtime:a", UserBroadcast("ev", b"\x00\x01", False, {"id": "x"}))
    assert data[:5] == bytes([4, 10, 2, 10, 0])
    assert data[5:] == b'realtime:aev{"id":"x"}\x00\x01'


def test_binary_broadcasts_are_not_sent_to_v1() -> None:
    frame = Frame("realtime:a", "broadcast", UserBroadcast("ev", b"\x00", False))
    assert V1Serializer().encode(frame) is None
    json_frame = Frame("realtime:a", "broadcast", UserBroadcast("ev", b'{"k":2}', True))
    assert json.loads(V1Serializer().encode(json_frame) or "")["payload"] == {
        "event": "ev",
        "payload": {"k": 2},
        "type": "broadcast",
    }


@pytest.mark.parametrize(
    "data",
    ['{"topic": "t", "event": "e", "payload": {}}', "[1, 2]", "not json", b"\x03"],
)
def test_malformed_frames_are_refused(data: str | bytes) -> None:
    serializer = (
        V2Serializer() if isinstance(data, bytes) or data.startswith("[") else V1Serializer()
    )
    with pytest.raises(MalformedFrame):
        serializer.decode(data)


def test_vsn_negotiation() -> None:
    assert serializer_for(None) is serializer_for("1.0.0")
    assert serializer_for("2.0.0") is not None and serializer_for("2.0.0").vsn == "2.0.0"  # type: ignore[union-attr]
    assert serializer_for("3.0.0") is None
    assert serializer_for("banana") is None


def test_binding_parsing_follows_the_server() -> None:
    spec = parse_binding(
        {"event": "insert", "schema": "public", "table": "t", "filter": "id=in.(1,2)"}
    )
    assert (spec.action, spec.filters) == ("INSERT", (Filter("id", "in", "{1,2}"),))
    assert parse_binding({"table": "t"}).schema == "public"
    assert parse_binding({"schema": "s"}).table == "*"
    assert parse_binding({"event": "whatever", "schema": "s"}).action == "*"
    anded = parse_binding({"schema": "p", "table": "t", "filter": 'a=not.eq."x,y",b=gt.1'})
    assert anded.filters == (Filter("a", "eq", "x,y", True), Filter("b", "gt", "1"))


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (
            {"schema": "p", "table": "t", "filter": "id=foo.1"},
            'Error parsing `filter` params: ["foo", "1"]',
        ),
        (
            {"schema": "p", "table": "t", "filter": "undefined"},
            'Error parsing `filter` params: ["undefined"]',
        ),
        ({"schema": "p", "table": "t", "filter": "id=in.1"}, "must be wrapped by parentheses"),
        ({}, "No subscription params provided"),
    ],
)
def test_binding_errors_use_the_server_messages(params: dict[str, str], message: str) -> None:
    with pytest.raises(BindingError, match=message.replace("(", r"\(").replace("[", r"\[")):
        parse_binding(params)


def test_binding_ids_are_27_bit_and_shared_by_identical_bindings() -> None:
    same = {"event": "*", "schema": "public", "table": "t"}
    ids = binding_ids([same, dict(same), {"event": "INSERT", "table": "t"}])
    assert ids[0] == ids[1] != ids[2]  # as hosted's :erlang.phash2(params)
    assert all(0 <= i < 2**27 for i in ids)


def test_join_payload_is_read_leniently() -> None:
    request = parse_join(
        {"config": {"broadcast": {"self": "true", "ack": 3}, "presence": None, "private": "False"}},
        "room",
    )
    assert (request.self_broadcast, request.ack_broadcast, request.private) == (True, False, False)
    assert request.presence_key  # a random key when none is given
    legacy = parse_join({}, "public:todos:id=eq.1")
    assert not legacy.new_api
    assert legacy.postgres_changes == ({"schema": "public", "table": "todos", "filter": "id=eq.1"},)
