"""The `phx_join` payload, read as leniently as the hosted server reads it.

Supabase Realtime validates the payload (`lib/realtime_web/channels/payloads/*.ex`) but never
refuses a join for it: invalid parts are logged and their defaults used. Booleans may arrive as
`true`/`"true"` (`FlexibleBoolean`). A payload without `config` is the legacy API, whose topic
names the table to follow (`schema[:table[:filter]]`).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any

from local.realtime.frames import JsonObject

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class JoinRequest:
    """What a client asked for when joining a channel."""

    private: bool
    self_broadcast: bool
    ack_broadcast: bool
    presence_enabled: bool
    presence_key: str
    postgres_changes: tuple[JsonObject, ...]
    """Bindings exactly as sent (echoed back verbatim, with an id, in the join reply)."""
    new_api: bool
    """False for the legacy API: no `config`; the topic itself names the table."""
    wants_replay: bool
    """A `broadcast.replay` key was present (refused on public channels, even when `{}`)."""
    replay: object
    """Its value as sent: `{"since": epoch ms, "limit": n}`, checked by the join."""
    replication_ready: bool
    """`broadcast.replication_ready`, read as hosted reads it: any value but null or false."""
    access_token: object
    """`access_token` (or legacy `user_token`) from the payload, if any; checked by the caller."""


def parse_join(payload: JsonObject, subtopic: str) -> JoinRequest:
    """Read a join payload; unusable parts fall back to their defaults."""
    config = payload.get("config")
    new_api = "config" in payload
    if not isinstance(config, dict):
        if config is not None:
            log.warning("InvalidJoinPayload: config must be a map, got %r", type(config).__name__)
        config = {}
    broadcast = _map(config.get("broadcast"), "broadcast")
    presence = _map(config.get("presence"), "presence")
    key = presence.get("key")
    return JoinRequest(
        private=_flag(config.get("private"), "private"),
        self_broadcast=_flag(broadcast.get("self"), "broadcast.self"),
        ack_broadcast=_flag(broadcast.get("ack"), "broadcast.ack"),
        presence_enabled=_flag(presence.get("enabled"), "presence.enabled"),
        presence_key=str(key) if key not in (None, "") else str(uuid.uuid1()),
        postgres_changes=_bindings(config.get("postgres_changes"), new_api, subtopic),
        new_api=new_api,
        wants_replay="replay" in broadcast,
        replay=broadcast.get("replay"),
        replication_ready=broadcast.get("replication_ready") not in (None, False),
        access_token=payload.get("access_token") or payload.get("user_token"),
    )


def _map(value: Any, name: str) -> JsonObject:
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    log.warning("InvalidJoinPayload: %s must be a map", name)
    return {}


def _flag(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if value is not None:
        log.warning("InvalidJoinPayload: %s must be a boolean", name)
    return False


def _bindings(value: Any, new_api: bool, subtopic: str) -> tuple[JsonObject, ...]:
    if not new_api:
        parts = subtopic.split(":", 2)
        return (dict(zip(("schema", "table", "filter"), parts, strict=False)),)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(b, dict | None) for b in value):
        log.warning("InvalidJoinPayload: postgres_changes must be an array of maps")
        return ()
    return tuple(binding for binding in value if binding is not None)
