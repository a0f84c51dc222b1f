"""Who is subscribed to what, and fan-out to them ("fastlane" messages in the real server).

Members are keyed by *tenant topic*: `public:<subtopic>` or `private:<subtopic>`, so a public and
a private channel with the same name never see each other's messages, as on hosted Supabase.
Each message is encoded once per (serializer, joined topic) and the bytes reused.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Protocol

from local.realtime.frames import Frame, Payload, Serializer


class Member(Protocol):
    """A joined channel, as the hub sees it."""

    @property
    def topic(self) -> str:
        """The topic as joined, e.g. `realtime:room1`."""
        ...

    @property
    def serializer(self) -> Serializer: ...

    def accepts(self, event: str, message_id: str | None = None) -> bool:
        """False for messages this member may not read (private channel policies) or has
        already had (replayed)."""
        ...

    def deliver(self, data: str | bytes, event: str, message_id: str | None = None) -> None:
        """Queue encoded bytes for the member's socket (and count them against the limits)."""
        ...


def tenant_topic(subtopic: str, *, private: bool) -> str:
    """The fan-out key: public and private channels of one name are separate namespaces."""
    return f"{'private' if private else 'public'}:{subtopic}"


class Hub:
    """Topic membership and fan-out."""

    def __init__(self) -> None:
        self._members: dict[str, set[Member]] = defaultdict(set)

    def add(self, topic: str, member: Member) -> None:
        self._members[topic].add(member)

    def remove(self, topic: str, member: Member) -> None:
        members = self._members.get(topic)
        if members is not None:
            members.discard(member)
            if not members:
                del self._members[topic]

    def members(self, topic: str) -> list[Member]:
        return list(self._members.get(topic, ()))

    def publish(
        self,
        topic: str,
        event: str,
        payload: Payload,
        *,
        exclude: Member | None = None,
        message_id: str | None = None,
    ) -> int:
        """Send `event` to every member of `topic` (but `exclude`); returns how many got it.

        `message_id` identifies a stored message (Broadcast from Database), which a member that
        replayed it on join does not get twice.
        """
        encoded: dict[tuple[str, str], str | bytes | None] = {}
        sent = 0
        for member in self.members(topic):
            if member is exclude or not member.accepts(event, message_id):
                continue
            key = (member.serializer.vsn, member.topic)
            if key not in encoded:
                encoded[key] = member.serializer.encode(Frame(member.topic, event, payload))
            data = encoded[key]
            if data is not None:
                member.deliver(data, event, message_id)
                sent += 1
        return sent
