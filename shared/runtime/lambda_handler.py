"""One Lambda handler per function, for every kind of event the function is wired to.

* a function URL request (payload v2) → the FastAPI app, through Mangum;
* an SQS batch (`Records` from `aws:sqs`) → the queue consumer (`shared.runtime.queue_consumer`),
  answering `batchItemFailures` for the event source mapping's `ReportBatchItemFailures`;
* an EventBridge scheduled event → the sweeper (`shared.usecases.sweeper`).

Anything else is refused with an error naming what arrived. Async work runs on the event loop
Mangum set up for this thread, so warm invocations of either kind reuse the same connection
pool. The services are the app's (`services_of`: `get_services`, or a test's override of it).

Each invocation's log records carry its request id (`shared.observability.logs`), and its spans the
invocation's `faas.*` attributes; spans are exported before the invocation returns.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Coroutine, Mapping
from typing import Any, Literal

from fastapi import FastAPI
from mangum import Mangum

from shared.kernel.errors import ConfigurationError
from shared.kernel.tls import http_client_tls_context, tls_context
from shared.observability import logs, tracing
from shared.services import Services, services_of

log = logging.getLogger(__name__)
EventKind = Literal["http", "sqs", "schedule"]
TRIGGERS: dict[EventKind, str] = {"http": "http", "sqs": "pubsub", "schedule": "timer"}
"""`faas.trigger` of each kind of event (OpenTelemetry's FaaS conventions)."""


def event_kind(event: Mapping[str, Any]) -> EventKind | None:
    """What kind of event Lambda delivered (None: none this code knows)."""
    records = event.get("Records")
    if isinstance(records, list) and records:
        sources = {record.get("eventSource") for record in records if isinstance(record, dict)}
        return "sqs" if sources == {"aws:sqs"} else None
    if event.get("source") == "aws.events" and event.get("detail-type") == "Scheduled Event":
        return "schedule"
    context = event.get("requestContext")
    if event.get("version") == "2.0" and isinstance(context, dict) and "http" in context:
        return "http"  # a function URL's request (payload format 2.0, the only one wired)
    return None


class LambdaHandler:
    """`handler = LambdaHandler(app, queue=True)`: the function's Lambda entry point."""

    def __init__(
        self,
        app: FastAPI,
        *,
        queue: bool = False,
        schedule: bool = False,
        agent: Literal["planner", "executor"] | None = None,
    ) -> None:
        self.app = app
        self.agent = agent
        """The agent every invocation of this function runs (None: the chat function)."""
        self.accepts: frozenset[EventKind] = frozenset(
            ("http", *(("sqs",) if queue else ()), *(("schedule",) if schedule else ()))
        )
        self._http = Mangum(app, lifespan="off")
        self._cold = True

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        kind = event_kind(event)
        if kind is None or kind not in self.accepts:
            raise ValueError(
                f"{self.app.title} cannot handle this event ({_describe(event)}); it takes "
                f"{', '.join(sorted(self.accepts))} events"
            )
        request_id = getattr(context, "aws_request_id", None)
        invocation: dict[str, str | bool] = {
            "faas.trigger": TRIGGERS[kind],
            "faas.coldstart": self._cold,
        }
        if request_id:
            invocation["faas.invocation_id"] = request_id
        self._cold = False
        try:
            with logs.bound(aws_request_id=request_id), tracing.invoked(invocation):
                return self._handle(kind, event, context)
        finally:
            tracing.flush()  # before Lambda freezes the environment with spans unsent

    def _handle(self, kind: EventKind, event: dict[str, Any], context: Any) -> dict[str, Any]:
        if kind == "http":
            response: dict[str, Any] = self._http(event, context)
            return response
        if kind == "sqs":
            from shared.runtime.queue_consumer import consume  # queue events only

            return self._run(consume(self.services(), event["Records"]))
        return self._run(self._sweep())

    def services(self) -> Services:
        return services_of(self.app)

    def prepare(self) -> None:
        """Do now, in Lambda's init phase, what every request would do first: read and check
        the settings, and load the model registry (every turn's budgets and prices need it:
        ~10 ms the chat's first `202` would pay); for the planner and executor, load the
        agent core (`load_agent_core`) and build the tool registry; with
        `INVOKER_TRANSPORT=sqs`, load what sends work on to a queue (`SqsInvoker` and
        `shared.queues.sqs_http`, which needs only the standard library — never boto3); and
        for that, or when tokens are checked against signing keys only (a JWKS, no JWT
        secret), the TLS settings (`shared.kernel.tls`: the system's CA certificates). The AWS
        credentials are read on the first send. Logging gets the work's ids and `LOG_LEVEL`
        (`shared.observability.logs.configure`), and tracing starts when the settings turn it on
        (`shared.observability.tracing.start`: only then is the OpenTelemetry SDK imported).

        Init is billed like the rest, so this costs nothing more; it takes the work off the
        first request (the deployed chat's first `202`: ~45 ms → ~27 ms here, plus the CA
        certificates' 20–40 ms on AWS, `bench.cold_start`), and a SnapStart snapshot keeps it
        (`shared.runtime.snapstart`, whose hooks are registered here: they finish init's work and
        close whatever connected before the snapshot, and make each restored copy its own). Nothing
        connects here — but the settings read the stage's secret (`SETTINGS_SECRET_ID`) over one
        request, closed at once. Invalid settings are logged and left to the first request, which
        answers them as a 503 problem, as it would have anyway."""
        from shared.runtime import snapstart  # SnapStart only

        logs.install()  # the work's ids on every record, whatever the settings
        snapstart.register(self)
        if self.agent is not None:
            load_agent_core(self.agent)
        try:
            services = self.services()
            services.models  # noqa: B018 — loaded now, not on the first request
        except ConfigurationError as exc:
            log.error("%s (each request will answer it as a 503)", exc)
            return
        logs.configure(services.settings)
        tracing.start(services.settings, service=f"parley-{self.app.title}")
        if self.agent is not None:
            services.tools.definitions()  # the JSON schemas the first model call offers
        settings = services.settings
        if settings.invoker_transport == "sqs":
            importlib.import_module("shared.dispatch.sqs_invoker")
            importlib.import_module("shared.queues.sqs_http")
            importlib.import_module("encodings.idna")  # a host name's encoding, on connecting
        signing_keys_only = settings.jwks_url and not settings.supabase_jwt_secret
        if settings.invoker_transport == "sqs" or signing_keys_only:
            tls_context()  # the CA certificates, which the first send or JWKS fetch would load

    async def _sweep(self) -> dict[str, Any]:
        from shared.usecases.sweeper import sweep  # the planner's schedule only

        with tracing.span("sweep", attributes=tracing.invocation()):
            return (await sweep(self.services())).json()

    @staticmethod
    def _run(work: Coroutine[Any, Any, dict[str, Any]]) -> dict[str, Any]:
        return asyncio.get_event_loop().run_until_complete(work)


FIRST_RUN_MODULES = (
    "shared.runtime.queue_consumer",
    "shared.llm.openai_client",
    "shared.llm.history_checks",
    "shared.events.realtime",
    "anyio._backends._asyncio",
)
"""What an agent's first run would import (~40 ms here): the queue consumer, the model client
and the history rules, the Realtime publisher (token batches), and the asyncio backend the
httpx2 clients (the model's, Realtime's) load on their first connection."""


AGENT_MODULES = {
    "planner": "shared.agents.planner.runs",
    "executor": "shared.agents.executor.steps",
}
"""Each agent function's entry module (the planner's imports the executor's: planner steps)."""


def load_agent_core(agent: Literal["planner", "executor"]) -> None:
    """Import what every invocation of the planner or executor function runs: the model
    client's libraries (the `openai` package, a few hundred ms) and its TLS settings, the
    agent's module and `FIRST_RUN_MODULES` (~150 ms more, which the first event would pay).

    For these functions Lambda's init phase is the place: the work costs the same wherever it
    happens, the first event does not wait for it, and a SnapStart snapshot (Python 3.12+)
    would keep it. The chat function does not: it stores messages and hands turns on, and
    loads the agent core only if it runs a turn itself (`INVOKER_TRANSPORT=in_process`)."""

    importlib.import_module("shared.llm._openai_wire")
    importlib.import_module(AGENT_MODULES[agent])
    for module in FIRST_RUN_MODULES:
        importlib.import_module(module)
    try:
        http_client_tls_context()  # the model client's (`_openai_wire.build_client`)
    except OSError as exc:  # e.g. SSL_CERT_FILE naming no file: init goes on, as for settings
        log.error("the model client's TLS settings: %s (each model call will fail on it)", exc)


def _describe(event: Mapping[str, Any]) -> str:
    keys = ", ".join(sorted(str(k) for k in event)[:8])
    return f"keys: {keys}" if keys else "empty"
