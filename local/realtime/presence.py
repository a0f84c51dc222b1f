"""Presence: who tracks what on a topic, as `presence_state` snapshots and `presence_diff`s.

Shapes follow Phoenix.Presence: state `{key: {"metas": [{"phx_ref": …, …}]}}`, diff
`{"joins": {…}, "leaves": {…}}`; an update leaves the old meta and joins the new one, which
carries `phx_ref_prev`.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from local.realtime.frames import JsonObject


@dataclass(frozen=True, slots=True)
class Tracked:
    key: str
    payload: JsonObject
    meta: JsonObject
    """The payload plus `phx_ref` (and `phx_ref_prev` after an update)."""


def _ref() -> str:
    return secrets.token_urlsafe(12)


def _diff(joins: list[Tracked], leaves: list[Tracked]) -> JsonObject:
    return {"joins": _group(joins), "leaves": _group(leaves)}


def _group(entries: list[Tracked]) -> JsonObject:
    grouped: dict[str, Any] = {}
    for entry in entries:
        grouped.setdefault(entry.key, {"metas": []})["metas"].append(entry.meta)
    return grouped


class PresenceRegistry:
    """Tracked presences per tenant topic, one per channel (`tracker` is that channel)."""

    def __init__(self) -> None:
        self._topics: dict[str, dict[object, Tracked]] = {}

    def track(
        self, topic: str, tracker: object, key: str, payload: JsonObject
    ) -> JsonObject | None:
        """Track or update; the diff to publish, or None when nothing changed."""
        tracked = self._topics.setdefault(topic, {})
        old = tracked.get(tracker)
        if old is not None and old.key == key and old.payload == payload:
            return None
        meta: JsonObject = {**payload, "phx_ref": _ref()}
        if old is not None:
            meta["phx_ref_prev"] = old.meta["phx_ref"]
        new = Tracked(key, payload, meta)
        tracked[tracker] = new
        return _diff([new], [old] if old is not None else [])

    def changes(self, topic: str, tracker: object, key: str, payload: JsonObject) -> bool:
        """Whether tracking `payload` would change anything (re-tracking the same is a no-op)."""
        old = self._topics.get(topic, {}).get(tracker)
        return old is None or old.key != key or old.payload != payload

    def untrack(self, topic: str, tracker: object) -> JsonObject | None:
        """Stop tracking; the diff to publish, or None when nothing was tracked."""
        tracked = self._topics.get(topic, {})
        old = tracked.pop(tracker, None)
        if not tracked:
            self._topics.pop(topic, None)
        return _diff([], [old]) if old is not None else None

    def state(self, topic: str) -> JsonObject:
        """Everything tracked on `topic`, grouped by key."""
        return _group(list(self._topics.get(topic, {}).values()))
