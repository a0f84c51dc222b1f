"""postgres_changes subscriptions: checking them at join, and routing captured changes to them.

A channel's bindings become subscriptions, one per (binding, table). Each captured change is
offered to the subscriptions on its table; `parley_realtime.apply_rls` (a port of the real
server's function) checks filters and RLS per subscriber role and claims, and renders the
`data` each group of subscribers receives. Messages leave as raw JSON text from Postgres.
"""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import psycopg
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from local.realtime.bindings import BindingError, BindingSpec, parse_binding
from local.realtime.changes import capture
from local.realtime.frames import RawJson

log = logging.getLogger(__name__)

Pool = AsyncConnectionPool[psycopg.AsyncConnection[tuple[Any, ...]]]
_ACTIONS = {"I": "INSERT", "U": "UPDATE", "D": "DELETE"}


class ChangeSubscriber(Protocol):
    """A joined channel with postgres_changes bindings."""

    @property
    def claims(self) -> Mapping[str, Any]:
        """The channel's current JWT claims (refreshed by `access_token`)."""
        ...

    def deliver_change(self, binding_ids: list[int], change_type: str, data: RawJson) -> None: ...


@dataclass(frozen=True, slots=True)
class ChangeNotice:
    """What a capture NOTIFY says: which change, on which table, of which kind."""

    change_id: int
    relid: int
    action: str

    @classmethod
    def parse(cls, payload: str) -> ChangeNotice:
        change_id, relid, action = payload.split(",")
        return cls(int(change_id), int(relid), _ACTIONS[action])


@dataclass(frozen=True, slots=True)
class Subscription:
    key: str
    relid: int
    subscriber: ChangeSubscriber
    binding_id: int
    spec: BindingSpec


class SubscriptionFailed(Exception):
    """Bindings the server cannot subscribe; the message goes to the client as `system` error."""


class ChangeRouter:
    """The registry of subscriptions, and the routing of each captured change."""

    def __init__(self, pool: Pool, *, publication: str, max_record_bytes: int) -> None:
        self._pool = pool
        self._publication = publication
        self._max_record_bytes = max_record_bytes
        self._by_table: dict[int, dict[str, Subscription]] = {}
        self._by_subscriber: dict[int, list[Subscription]] = {}
        self._keys = itertools.count(1)
        self.captured: frozenset[int] = frozenset()
        """Oids of the tables the capture triggers are on."""

    async def subscribe(
        self, subscriber: ChangeSubscriber, bindings: Sequence[tuple[int, Mapping[str, Any]]]
    ) -> None:
        """Check every binding and start routing to them all, or raise `SubscriptionFailed`."""
        role = str(subscriber.claims.get("role"))
        specs = []
        for binding_id, params in bindings:
            try:
                specs.append((binding_id, parse_binding(params)))
            except BindingError as exc:
                raise SubscriptionFailed(str(exc)) from None
        tables = [await self._check(spec, role) for _, spec in specs]
        if not frozenset().union(*tables) <= self.captured:
            await self.sync()
        self.unsubscribe(subscriber)
        subscriptions = self._by_subscriber.setdefault(id(subscriber), [])
        for (binding_id, spec), relids in zip(specs, tables, strict=True):
            for relid in relids:
                key = str(next(self._keys))
                sub = Subscription(key, relid, subscriber, binding_id, spec)
                self._by_table.setdefault(relid, {})[sub.key] = sub
                subscriptions.append(sub)

    def unsubscribe(self, subscriber: ChangeSubscriber) -> None:
        """Stop routing to `subscriber` (idempotent)."""
        for sub in self._by_subscriber.pop(id(subscriber), []):
            table = self._by_table.get(sub.relid, {})
            table.pop(sub.key, None)
            if not table:
                self._by_table.pop(sub.relid, None)

    async def sync(self) -> None:
        """Re-sync the capture triggers with the publication."""
        async with self._pool.connection() as conn:
            self.captured = await capture.sync_triggers(conn, self._publication)

    async def route(self, notice: ChangeNotice) -> int:
        """Deliver one captured change to every subscriber allowed to see it; messages sent."""
        subs = [
            sub
            for sub in self._by_table.get(notice.relid, {}).values()
            if sub.spec.action in ("*", notice.action)
        ]
        if not subs:
            return 0
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT data::text, subscription_ids FROM parley_realtime.apply_rls(%s, %s, %s)",
                (notice.change_id, Jsonb([_describe(sub) for sub in subs]), self._max_record_bytes),
            )
            rows = await cur.fetchall()
        by_key = {sub.key: sub for sub in subs}
        sent = 0
        for data, keys in rows:
            sent += self._deliver(RawJson(data), notice.action, [by_key[k] for k in keys])
        return sent

    def _deliver(self, data: RawJson, change_type: str, subs: list[Subscription]) -> int:
        # One id per matching binding, as hosted's MessageDispatcher lists them: two identical
        # bindings (one id) that both match make the id appear twice. A change is on one table,
        # so each binding has at most one subscription among `subs`.
        bindings_by_subscriber: dict[int, tuple[ChangeSubscriber, list[int]]] = {}
        for sub in subs:
            if id(sub.subscriber) not in self._by_subscriber:
                continue  # left while the change was being checked
            entry = bindings_by_subscriber.setdefault(id(sub.subscriber), (sub.subscriber, []))
            entry[1].append(sub.binding_id)
        for subscriber, ids in bindings_by_subscriber.values():
            subscriber.deliver_change(ids, change_type, data)
        return len(bindings_by_subscriber)

    async def _check(self, spec: BindingSpec, role: str) -> frozenset[int]:
        """The published tables `spec` covers, checked like `realtime.subscription` inserts."""
        try:
            async with self._pool.connection() as conn, conn.transaction():
                cur = await conn.execute(
                    _TABLES,
                    {"publication": self._publication, "schema": spec.schema, "table": spec.table},
                )
                relids = [int(row[0]) for row in await cur.fetchall()]
                for relid in relids:
                    await conn.execute(
                        "SELECT parley_realtime.check_subscription(%s::oid::regclass, %s, %s, %s)",
                        (relid, role, Jsonb(spec.filter_rows()), list(spec.select or []) or None),
                    )
        except psycopg.DatabaseError as exc:
            raise SubscriptionFailed(
                "Unable to subscribe to changes with given parameters. An exception happened "
                f"so please check your connect parameters: [{spec.describe()}]. "
                f"Exception: {_postgrex_message(exc)}"
            ) from None
        if not relids:
            raise SubscriptionFailed(
                "Unable to subscribe to changes with given parameters. Please check Realtime is "
                f"enabled for the given connect parameters: [{spec.describe()}]"
            )
        return frozenset(relids)


_TABLES = """
    SELECT c.oid
      FROM pg_publication_tables p
      JOIN pg_namespace n ON n.nspname = p.schemaname
      JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = p.tablename
     WHERE p.pubname = %(publication)s
       AND p.schemaname LIKE (CASE WHEN %(schema)s = '*' THEN '%%' ELSE %(schema)s END) ESCAPE ''
       AND p.tablename LIKE (CASE WHEN %(table)s = '*' THEN '%%' ELSE %(table)s END) ESCAPE ''
"""


def _describe(sub: Subscription) -> dict[str, Any]:
    claims = dict(sub.subscriber.claims)
    return {
        "id": sub.key,
        "role": str(claims.get("role")),
        "claims": claims,
        "filters": sub.spec.filter_rows(),
        "select": list(sub.spec.select) if sub.spec.select is not None else None,
    }


def _postgrex_message(exc: psycopg.DatabaseError) -> str:
    # Postgrex renders errors as "ERROR P0001 (raise_exception) message".
    name = re.sub(r"(?<!^)(?=[A-Z])", "_", type(exc).__name__).lower()
    return f"ERROR {exc.sqlstate or 'XX000'} ({name}) {exc.diag.message_primary or exc}"
