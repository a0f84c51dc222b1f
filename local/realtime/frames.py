"""Phoenix frames on the wire: serializer 1.0.0 (JSON objects) and 2.0.0 (JSON arrays + binary).

V1 server frames hold exactly `topic, event, payload, ref` (Phoenix never emits `join_ref` on
1.0.0). V2 text frames are `[join_ref, ref, topic, event, payload]`; V2 binary frames carry user
broadcasts: kind 3 from the client, kind 4 to it (github.com/supabase/realtime,
lib/realtime_web/socket/v2_serializer.ex).
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import Any, Protocol

JsonObject = dict[str, Any]
Ref = str | int | None

_USER_BROADCAST_PUSH = 3
_USER_BROADCAST = 4


@dataclass(frozen=True, slots=True)
class RawJson:
    """JSON text spliced into a frame unparsed (change data exactly as Postgres rendered it)."""

    text: str


@dataclass(frozen=True, slots=True)
class UserBroadcast:
    """A broadcast whose user payload travels as bytes (V2 binary kinds 3 and 4)."""

    event: str
    payload: bytes
    is_json: bool
    """True: `payload` is UTF-8 JSON; False: opaque binary (never sent to V1 sockets)."""
    meta: JsonObject | None = None


Payload = JsonObject | RawJson | UserBroadcast


@dataclass(frozen=True, slots=True)
class Frame:
    """One Phoenix message, whichever serializer carries it."""

    topic: str
    event: str
    payload: Payload
    ref: Ref = None
    join_ref: Ref = None


class MalformedFrame(ValueError):
    """A client frame the serializer cannot read; it is dropped and the socket stays open."""


class Serializer(Protocol):
    """Turns wire data into frames and back for one protocol version."""

    vsn: str

    def decode(self, data: str | bytes) -> Frame: ...

    def encode(self, frame: Frame) -> str | bytes | None:
        """The wire form of `frame`, or None when this version cannot carry it."""
        ...


def dumps(value: Any) -> str:
    """Compact JSON, UTF-8 kept as is (like Jason)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _payload_json(payload: Payload) -> str:
    if isinstance(payload, RawJson):
        return payload.text
    if isinstance(payload, UserBroadcast):
        parts = [f'"event":{dumps(payload.event)}', f'"payload":{payload.payload.decode()}']
        parts.append('"type":"broadcast"')
        if payload.meta:
            parts.append(f'"meta":{dumps(payload.meta)}')
        return "{" + ",".join(parts) + "}"
    return dumps(payload)


class V1Serializer:
    """vsn 1.0.0: `{"topic","event","payload","ref"}` text frames."""

    vsn = "1.0.0"

    def decode(self, data: str | bytes) -> Frame:
        if isinstance(data, bytes):
            raise MalformedFrame("binary frames need vsn 2.0.0")
        message = _loads(data)
        if not isinstance(message, dict) or not {"topic", "event", "payload", "ref"} <= set(
            message
        ):
            raise MalformedFrame("expected an object with topic, event, payload and ref")
        return _frame(
            message["topic"],
            message["event"],
            message["payload"],
            message["ref"],
            message.get("join_ref"),
        )

    def encode(self, frame: Frame) -> str | None:
        payload = frame.payload
        if isinstance(payload, UserBroadcast) and not payload.is_json:
            return None
        return (
            f'{{"topic":{dumps(frame.topic)},"event":{dumps(frame.event)},'
            f'"payload":{_payload_json(payload)},"ref":{dumps(frame.ref)}}}'
        )


class V2Serializer:
    """vsn 2.0.0: `[join_ref, ref, topic, event, payload]` text frames plus binary broadcasts."""

    vsn = "2.0.0"

    def decode(self, data: str | bytes) -> Frame:
        if isinstance(data, bytes):
            return _decode_user_broadcast_push(data)
        message = _loads(data)
        if not isinstance(message, list) or len(message) < 5:
            raise MalformedFrame("expected a V2 array [join_ref, ref, topic, event, payload]")
        join_ref, ref, topic, event, payload = message[:5]
        return _frame(topic, event, payload, ref, join_ref)

    def encode(self, frame: Frame) -> str | bytes:
        payload = frame.payload
        if isinstance(payload, UserBroadcast):
            return encode_user_broadcast(frame.topic, payload)
        return (
            f"[{dumps(frame.join_ref)},{dumps(frame.ref)},{dumps(frame.topic)},"
            f"{dumps(frame.event)},{_payload_json(payload)}]"
        )


def encode_user_broadcast(topic: str, broadcast: UserBroadcast) -> bytes:
    """Kind 4: `u8 4 | u8 topic_len | u8 event_len | u8 meta_len | u8 enc` + strings + payload."""
    topic_bytes, event_bytes = topic.encode(), broadcast.event.encode()
    meta = dumps(broadcast.meta).encode() if broadcast.meta else b""
    for name, value in (("topic", topic_bytes), ("event", event_bytes), ("meta", meta)):
        if len(value) > 255:
            raise ValueError(f"{name} is {len(value)} bytes; binary frames allow at most 255")
    header = struct.pack(
        "!BBBBB",
        _USER_BROADCAST,
        len(topic_bytes),
        len(event_bytes),
        len(meta),
        1 if broadcast.is_json else 0,
    )
    return header + topic_bytes + event_bytes + meta + broadcast.payload


def _decode_user_broadcast_push(data: bytes) -> Frame:
    # u8 3 | u8 join_ref_len | u8 ref_len | u8 topic_len | u8 event_len | u8 meta_len | u8 enc
    if len(data) < 7 or data[0] != _USER_BROADCAST_PUSH:
        raise MalformedFrame("only binary user broadcast pushes (kind 3) are accepted")
    sizes = data[1:6]
    if len(data) < 7 + sum(sizes):
        raise MalformedFrame("binary frame shorter than its header says")
    fields, offset = [], 7
    for size in sizes:
        fields.append(data[offset : offset + size])
        offset += size
    join_ref, ref, topic, event, meta = fields
    try:
        strings = [field.decode() for field in (join_ref, ref, topic, event)]
        metadata = json.loads(meta) if meta else None
    except (UnicodeDecodeError, ValueError) as exc:
        raise MalformedFrame(f"unreadable binary frame: {exc}") from exc
    broadcast = UserBroadcast(
        event=strings[3], payload=data[offset:], is_json=data[6] != 0, meta=metadata
    )
    return Frame(strings[2], "broadcast", broadcast, strings[1] or None, strings[0] or None)


def _loads(data: str) -> Any:
    try:
        return json.loads(data)
    except ValueError as exc:
        raise MalformedFrame(f"not JSON: {exc}") from exc


def _frame(topic: Any, event: Any, payload: Any, ref: Any, join_ref: Any) -> Frame:
    if not isinstance(topic, str) or not isinstance(event, str):
        raise MalformedFrame("topic and event must be strings")
    if not isinstance(payload, dict):
        raise MalformedFrame("payload must be an object")
    for value in (ref, join_ref):
        if value is not None and not isinstance(value, str | int):
            raise MalformedFrame("ref and join_ref must be strings")
    return Frame(topic, event, payload, ref, join_ref)


SERIALIZERS: dict[str, Serializer] = {"1.0.0": V1Serializer(), "2.0.0": V2Serializer()}


def serializer_for(vsn: str | None) -> Serializer | None:
    """Phoenix's negotiation: no vsn means 1.0.0; `~> 1.0.0` / `~> 2.0.0`; anything else fails."""
    if vsn is None:
        return SERIALIZERS["1.0.0"]
    parts = vsn.split(".")
    if len(parts) != 3 or not all(part.isdigit() for part in parts):
        return None
    return SERIALIZERS.get(f"{parts[0]}.0.0") if parts[1] == "0" else None
