"""Supabase Realtime broadcast over REST, for what the database does not send: token deltas.

Every event about stored state is sent from the database, in its row's transaction
(`shared.events.emitter`); token deltas are ephemeral and high-rate, so they skip the database
and go here (no socket to hold, from a Lambda). This publisher passes only `token` events on.

Events go to the session's channel, topic `session:<session_id>`, with the event type as the
broadcast event name and the event itself as payload. Events are batched: the first event of a
batch starts a short linger timer, and everything published meanwhile leaves in one
`POST {SUPABASE_URL}/realtime/v1/api/broadcast`. Failures are logged and dropped — the tables
hold the truth and clients catch up with `?after_seq=`.

The HTTP client is httpx2, the model client's own (`openai` depends on it): one HTTP stack in
the functions, and the model client's TLS settings (`shared.kernel.tls.http_client_tls_context`), so
a planner's first broadcast loads nothing new.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import httpx2

from shared.events.models import Event
from shared.kernel.tls import http_client_tls_context

log = logging.getLogger(__name__)
EPHEMERAL = frozenset({"token"})
"""The event types this publisher sends: the ones not sent from the database."""


def session_topic(session_id: object) -> str:
    """The Realtime channel (subtopic) a session's events are broadcast on."""
    return f"session:{session_id}"


class SupabaseRealtimePublisher:
    """Broadcasts events to Supabase Realtime through its REST endpoint, in batches."""

    def __init__(
        self,
        *,
        supabase_url: str,
        service_key: str,
        private: bool = False,
        linger_seconds: float = 0.05,
        max_batch: int = 100,
        timeout_seconds: float = 5.0,
        retry_delay_seconds: float = 0.2,
        client: httpx2.AsyncClient | None = None,
    ) -> None:
        self.endpoint = f"{supabase_url.rstrip('/')}/realtime/v1/api/broadcast"
        self._headers = {"apikey": service_key, "Authorization": f"Bearer {service_key}"}
        self._private = private
        self._linger = linger_seconds
        self._max_batch = max_batch
        self._retry_delay = retry_delay_seconds
        self._client = client or new_client(timeout_seconds)
        self._owns_client = client is None
        self._pending: list[dict[str, Any]] = []
        self._timer: asyncio.Task[None] | None = None
        self._sending: set[asyncio.Task[None]] = set()

    async def publish(self, events: Sequence[Event]) -> None:
        tokens = [event for event in events if event.type in EPHEMERAL]
        if not tokens:
            return
        self._pending.extend(self._message(event) for event in tokens)
        if len(self._pending) >= self._max_batch:
            self._send_now()
        elif self._timer is None:
            self._timer = asyncio.create_task(self._flush_later())

    async def flush(self) -> None:
        """Send what is pending and wait for every request in flight."""
        self._send_now()
        while self._sending:
            await asyncio.gather(*self._sending)

    async def aclose(self) -> None:
        await self.flush()
        if self._owns_client:
            await self._client.aclose()

    def _message(self, event: Event) -> dict[str, Any]:
        return {
            "topic": session_topic(event.session_id),
            "event": event.type,
            "payload": event.wire(),
            "private": self._private,
        }

    async def _flush_later(self) -> None:
        await asyncio.sleep(self._linger)
        self._timer = None
        self._send_now()

    def _send_now(self) -> None:
        if self._timer is not None and self._timer is not asyncio.current_task():
            self._timer.cancel()
        self._timer = None
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        for start in range(0, len(pending), self._max_batch):
            task = asyncio.create_task(self._post(pending[start : start + self._max_batch]))
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)

    async def _post(self, batch: list[dict[str, Any]]) -> None:
        for attempt in (1, 2):
            try:
                response = await self._client.post(
                    self.endpoint, json={"messages": batch}, headers=self._headers
                )
            except httpx2.HTTPError as exc:
                failure = f"{type(exc).__name__}"
            else:
                if response.status_code < 300:
                    return
                failure = f"HTTP {response.status_code}"
                if response.status_code < 500 and response.status_code != 429:
                    break
            if attempt == 1:
                await asyncio.sleep(self._retry_delay)
        log.warning("realtime broadcast of %d events failed (%s); dropped", len(batch), failure)


def new_client(timeout_seconds: float) -> httpx2.AsyncClient:
    """An httpx2 client with the process's shared TLS settings."""

    return httpx2.AsyncClient(timeout=timeout_seconds, verify=http_client_tls_context())
