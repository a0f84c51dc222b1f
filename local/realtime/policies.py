"""Private channels, authorised the Supabase way: RLS policies on `realtime.messages`.

As in `lib/realtime/tenants/authorization.ex`: to test *read* access the server inserts probe rows
(`topic`, `extension` = broadcast / presence) as itself, then — as the client's role with its
claims and `realtime.topic` set — selects them back; visible means readable. To test *write*
access it inserts a probe as the client's role under a savepoint. Everything is rolled back.
The settings a policy may read are the hosted server's: `role`, `realtime.topic`,
`request.jwt.claims`, `request.jwt.claim.sub` / `.role`, and `request.headers` — a JSON object of
the socket's `x-*` upgrade headers (all headers for the REST API), names in lower case.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import psycopg

from local.realtime.changes.router import Pool


@dataclass(frozen=True, slots=True)
class Access:
    """What a client may do on one private topic, per extension."""

    broadcast: bool = False
    presence: bool = False


class PolicyError(Exception):
    """The policies could not be evaluated (e.g. a policy raised); treated as no access."""


_CONTEXT = """
    SELECT set_config('role', %(role)s, true),
           set_config('realtime.topic', %(topic)s, true),
           set_config('request.jwt.claims', %(claims)s, true),
           set_config('request.jwt.claim.sub', %(sub)s, true),
           set_config('request.jwt.claim.role', %(role)s, true),
           set_config('request.headers', %(headers)s, true)
"""


def _context(
    topic: str, claims: Mapping[str, Any], headers: Mapping[str, str] | None
) -> dict[str, str]:
    return {
        "role": str(claims.get("role", "")),
        "topic": topic,
        "claims": json.dumps(dict(claims)),
        "sub": str(claims.get("sub") or ""),
        "headers": json.dumps(dict(headers or {})),
    }


async def read_access(
    pool: Pool,
    topic: str,
    claims: Mapping[str, Any],
    *,
    presence: bool = True,
    headers: Mapping[str, str] | None = None,
) -> Access:
    """Which extensions `claims` may read on private `topic`."""
    probes = {"broadcast": uuid.uuid4(), **({"presence": uuid.uuid4()} if presence else {})}
    try:
        async with pool.connection() as conn, conn.transaction(force_rollback=True):
            for extension, probe in probes.items():
                await conn.execute(
                    "INSERT INTO realtime.messages (id, topic, extension) VALUES (%s, %s, %s)",
                    (probe, topic, extension),
                )
            await conn.execute(_CONTEXT, _context(topic, claims, headers))
            cur = await conn.execute(
                "SELECT id FROM realtime.messages WHERE id = ANY(%s)", (list(probes.values()),)
            )
            visible = {row[0] for row in await cur.fetchall()}
    except psycopg.Error as exc:
        raise PolicyError(str(exc)) from exc
    return Access(
        broadcast=probes["broadcast"] in visible, presence=probes.get("presence") in visible
    )


async def write_access(
    pool: Pool,
    topic: str,
    claims: Mapping[str, Any],
    extension: str,
    *,
    headers: Mapping[str, str] | None = None,
) -> bool:
    """Whether `claims` may write `extension` messages on private `topic`."""
    try:
        async with pool.connection() as conn, conn.transaction(force_rollback=True):
            await conn.execute(_CONTEXT, _context(topic, claims, headers))
            try:
                async with conn.transaction():
                    await conn.execute(
                        "INSERT INTO realtime.messages (topic, extension) VALUES (%s, %s)",
                        (topic, extension),
                    )
            except psycopg.errors.InsufficientPrivilege:
                return False
    except psycopg.Error as exc:
        raise PolicyError(str(exc)) from exc
    return True
