"""Structured logs: every record carries the ids of the work it is about.

Where a turn, a plan run, a step run or a queue message's handling begins, the code names its
ids once (`bound(plan_id=..., step_id=...)`); they live in a context variable, so every record
made meanwhile — in that task, the tasks it starts, the threads `asyncio.to_thread` runs —
carries them as attributes, whoever logs it (Parley's modules, psycopg, httpx2), without
passing them through every call. `install` puts the record factory that adds them in place;
with tracing on, records made inside a span carry its `trace_id` and `span_id` too.

The fields (`FIELDS`): `session_id`, `plan_id`, `step_id`, `message_id` (the user's message
of the turn), `attempt` (a step's attempt), `aws_request_id` (the Lambda invocation; Lambda's
JSON calls it `requestId`), `trace_id`, `span_id`. Ids are UUIDs, attempts numbers: nothing a
user wrote and no secret ever goes in (docs/observability.md).

How records are written:

* on Lambda (`infra/serverless.yml` sets the functions' log format to JSON), by the runtime's
  own handler: one JSON object per line, `timestamp`, `level`, `message`, `logger`,
  `requestId`, and every extra attribute of the record — these ids — as a top-level field;
* elsewhere `configure` gives the root logger a handler unless it has one: readable text with
  the ids after the message (`LOG_FORMAT=text`, the default), or the same JSON lines as on
  Lambda (`LOG_FORMAT=json`, `JsonFormatter`).
"""

from __future__ import annotations

import json
import logging
import sys
import traceback
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from shared.observability import tracing

if TYPE_CHECKING:
    from uuid import UUID

    from shared.kernel.settings import Settings

FIELDS = (
    "session_id",
    "plan_id",
    "step_id",
    "message_id",
    "attempt",
    "aws_request_id",
    "trace_id",
    "span_id",
)
"""What a record may carry about the work it is about, in the order text logs show them."""
Value = str | int
QUIET = ("httpx2", "httpx")
"""Loggers that write a line per HTTP request at INFO (every model call, every Realtime batch):
at WARNING unless `LOG_LEVEL` is above it."""

_ids: ContextVar[Mapping[str, Value]] = ContextVar("parley_log_ids", default=MappingProxyType({}))


@contextmanager
def bound(
    *,
    session_id: UUID | str | None = None,
    plan_id: UUID | str | None = None,
    step_id: UUID | str | None = None,
    message_id: UUID | str | None = None,
    attempt: int | None = None,
    aws_request_id: str | None = None,
) -> Iterator[None]:
    """Name the ids of the work that begins here: records made inside carry them (beside any
    named further out; None leaves one as it was)."""
    given = {
        "session_id": session_id,
        "plan_id": plan_id,
        "step_id": step_id,
        "message_id": message_id,
        "attempt": attempt,
        "aws_request_id": aws_request_id,
    }
    added = {k: v if isinstance(v, int) else str(v) for k, v in given.items() if v is not None}
    token = _ids.set({**_ids.get(), **added})
    try:
        yield
    finally:
        _ids.reset(token)


def annotate(
    *,
    session_id: UUID | str | None = None,
    plan_id: UUID | str | None = None,
    message_id: UUID | str | None = None,
) -> None:
    """Add ids learnt along the way (a plan run's session, once its row is read) for the rest
    of the current task — or of the enclosing `bound` block, which takes them back."""
    given = {"session_id": session_id, "plan_id": plan_id, "message_id": message_id}
    _ids.set({**_ids.get(), **{k: str(v) for k, v in given.items() if v is not None}})


def current() -> Mapping[str, Value]:
    """The ids named for the work running now (with the current span's, when tracing)."""
    ids = _ids.get()
    traced = tracing.log_ids()
    return {**ids, **traced} if traced else ids


def install() -> None:
    """Make every log record carry `current()` ids (once per process; idempotent)."""
    factory = logging.getLogRecordFactory()
    if getattr(factory, "parley", False):
        return

    def make(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = factory(*args, **kwargs)
        ids = current()
        if ids:
            record.__dict__.update(ids)
        return record

    make.parley = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(make)


def configure(settings: Settings) -> None:
    """Logging for a function or the local stack: ids on every record, the root logger at
    `LOG_LEVEL` (HTTP clients' line per request only from WARNING: `QUIET`), and — unless
    something (the Lambda runtime, pytest, an embedding host) already handles the root logger's
    records — a handler writing `LOG_FORMAT` to stderr."""
    install()
    root = logging.getLogger()
    root.setLevel(settings.log_level)
    for name in QUIET:
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))
    if root.handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if settings.log_format == "json" else TextFormatter())
    root.addHandler(handler)


def ids_of(record: logging.LogRecord) -> dict[str, Value]:
    """The ids a record carries, in `FIELDS` order."""
    found = record.__dict__
    return {name: found[name] for name in FIELDS if found.get(name) not in (None, "")}


class TextFormatter(logging.Formatter):
    """`2026-11-27 09:00:00,123 INFO shared.runtime.queue_consumer: queued … [plan_id=…
    step_id=…]`"""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        ids = ids_of(record)
        if not ids:
            return text
        first, newline, rest = text.partition("\n")  # the ids on the message's line
        shown = " ".join(f"{name}={value}" for name, value in ids.items())
        return f"{first} [{shown}]{newline}{rest}"


class JsonFormatter(logging.Formatter):
    """One JSON object per record, shaped as the Lambda runtime's JSON log format writes it
    (`timestamp`, `level`, `message`, `logger`, `requestId`; `errorType`, `errorMessage`,
    `stackTrace` with an exception), the ids as top-level fields — so the same queries read the
    logs of the local stack and of AWS."""

    def format(self, record: logging.LogRecord) -> str:
        ids = ids_of(record)
        line: dict[str, Any] = {
            "timestamp": datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "message": record.getMessage(),
            "logger": record.name,
        }
        if "aws_request_id" in ids:
            line["requestId"] = ids.pop("aws_request_id")
        line.update(ids)
        if record.exc_info and record.exc_info[0] is not None:
            kind, error, trace = record.exc_info
            line |= {
                "errorType": kind.__name__,
                "errorMessage": str(error),
                "stackTrace": traceback.format_tb(trace),
            }
        return json.dumps(line, ensure_ascii=False, default=str)
