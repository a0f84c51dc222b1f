"""Lambda SnapStart: what init does before the snapshot, and what each restored copy rebuilds.

With SnapStart on (`infra/serverless.yml`, per function), Lambda runs a version's init once,
snapshots the execution environment's memory, and starts every cold environment of that
version from the snapshot — many copies of one process. So:

* **before the snapshot**, the work init can do is done, so no copy pays for it: the imports
  and settings (with the stage's secret), for the agents the tool schemas and the model
  client's TLS context, at import (`LambdaHandler.prepare`), then here the tokenizer and the
  standard library's TLS context;
* **nothing connected is kept**: database connections, HTTP clients with open sockets (the
  model's, Realtime's, other functions'), kept SQS connections, the token verifier (its JWKS
  client) and MCP servers are closed and dropped — a socket restored into many copies would be
  one connection claimed by all of them, long closed by its peer. Each is built again on first
  use, after the restore;
* **after the restore**, what must differ between copies is made to: the `random` module's
  state (the jitter of retries: identical copies would retry in lockstep) is seeded afresh from
  the OS, and cached AWS credentials are dropped (they may have expired while the snapshot
  waited). Ids never come from `random`: `uuid4` and `secrets` read the OS's randomness.

The hooks are AWS's runtime hooks (`snapshot-restore-py`, part of the Lambda Python runtime
since 3.12; `parley[aws]` elsewhere): before-snapshot hooks run in reverse order of
registration, after-restore hooks in order, on the thread that runs the handler. Without the
package (the local stack, other hosts) nothing is registered and nothing changes.
"""

from __future__ import annotations

import asyncio
import logging
import random
from typing import TYPE_CHECKING, Protocol

from shared.kernel.errors import ConfigurationError
from shared.kernel.tls import tls_context

if TYPE_CHECKING:
    from shared.services import Services

log = logging.getLogger(__name__)


class Snapshotted(Protocol):
    """What the hooks need of a function's handler
    (`shared.runtime.lambda_handler.LambdaHandler`)."""

    @property
    def agent(self) -> str | None:
        """The agent the function runs ("planner", "executor"), or None (the chat)."""
        ...

    def services(self) -> Services:
        """The function's services, built at init (raises `ConfigurationError` if it cannot)."""
        ...


CONNECTED = ("db", "http", "llm", "queue_sender", "verifier", "_mcp")
"""The services' parts that hold connections (or a client that makes them)."""


def register(handler: Snapshotted) -> bool:
    """Register `handler`'s hooks with the runtime; False where the hooks are not available."""
    try:
        # on Lambda only: imported here, off the cold start
        from snapshot_restore_py import register_after_restore, register_before_snapshot
    except ImportError:
        return False
    register_before_snapshot(before_snapshot, handler)
    register_after_restore(after_restore, handler)
    return True


def before_snapshot(handler: Snapshotted) -> None:
    """Finish init's work, then close everything connected."""
    services = _services(handler)
    if services is None:
        return
    if handler.agent is not None:
        services.tokens.count("Parley")  # loads the tokenizer (~0.5 s): budgets need it

    tls_context()
    _disconnect(services)


def after_restore(handler: Snapshotted) -> None:
    """Make this copy its own: fresh randomness, no credentials or connection from before."""
    random.seed()
    services = _services(handler)
    if services is not None:
        _disconnect(services)  # nothing should be left; a hook must not assume it


def _services(handler: Snapshotted) -> Services | None:
    try:
        return handler.services()
    except ConfigurationError as exc:  # logged at init already; each request answers 503
        log.warning("SnapStart hook skipped: %s", exc)
        return None


def _disconnect(services: Services) -> None:
    found = [name for name in CONNECTED if name in services.__dict__]
    if not found:
        return
    services.__dict__.pop("verifier", None)  # no socket, but its JWKS client is rebuilt too
    loop = asyncio.get_event_loop()  # Mangum's, on the handler's thread: the clients' loop
    loop.run_until_complete(services.aclose())
    log.info("SnapStart: closed %s", ", ".join(found))
