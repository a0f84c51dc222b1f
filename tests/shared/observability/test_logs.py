"""Structured logs: the work's ids on every record, named once where the work begins."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from uuid import uuid4

import pytest

from shared.kernel.settings import Settings
from shared.observability import logs


@pytest.fixture
def records() -> Iterator[list[logging.LogRecord]]:
    """Records of the `tests.logs` logger, made with Parley's record factory."""
    logs.install()
    kept: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            kept.append(record)

    logger = logging.getLogger("tests.logs")
    handler, level, propagate = Keep(), logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield kept
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate


log = logging.getLogger("tests.logs")


def test_ids_named_where_work_begins_reach_every_record_inside(
    records: list[logging.LogRecord],
) -> None:
    plan, step, session = uuid4(), uuid4(), uuid4()
    log.info("before")
    with logs.bound(plan_id=plan, aws_request_id="req-1"):
        log.info("plan")
        with logs.bound(step_id=step, attempt=2):
            logs.annotate(session_id=session)
            log.info("step")
        log.info("plan again")
    log.info("after")
    assert [logs.ids_of(r) for r in records] == [
        {},
        {"plan_id": str(plan), "aws_request_id": "req-1"},
        {
            "session_id": str(session),
            "plan_id": str(plan),
            "step_id": str(step),
            "attempt": 2,
            "aws_request_id": "req-1",
        },
        {"plan_id": str(plan), "aws_request_id": "req-1"},
        {},
    ]


async def test_tasks_and_threads_started_inside_keep_them_and_siblings_do_not_mix(
    records: list[logging.LogRecord],
) -> None:
    async def step(number: int) -> None:
        with logs.bound(step_id=f"step-{number}"):
            await asyncio.sleep(0)  # the other step runs meanwhile
            await asyncio.to_thread(log.info, "in a thread")

    with logs.bound(plan_id="plan-1"):
        await asyncio.gather(step(1), step(2))
    found = sorted((r.__dict__["plan_id"], r.__dict__["step_id"]) for r in records)
    assert found == [("plan-1", "step-1"), ("plan-1", "step-2")]


def test_text_shows_the_ids_after_the_message_and_json_as_lambda_writes_it(
    records: list[logging.LogRecord],
) -> None:
    with logs.bound(plan_id="p", attempt=1, aws_request_id="r"):
        log.info("queued %s", "x")
        try:
            raise ValueError("broken")
        except ValueError:
            log.exception("failed")
    queued, failed = records
    assert (
        logs.TextFormatter()
        .format(queued)
        .endswith("INFO tests.logs: queued x [plan_id=p attempt=1 aws_request_id=r]")
    )
    first_line = logs.TextFormatter().format(failed).splitlines()[0]
    assert first_line.endswith("failed [plan_id=p attempt=1 aws_request_id=r]")
    line = json.loads(logs.JsonFormatter().format(failed))
    assert {
        k: line[k]
        for k in (
            "level",
            "message",
            "logger",
            "requestId",
            "plan_id",
            "attempt",
            "errorType",
            "errorMessage",
        )
    } == {
        "level": "ERROR",
        "message": "failed",
        "logger": "tests.logs",
        "requestId": "r",
        "plan_id": "p",
        "attempt": 1,
        "errorType": "ValueError",
        "errorMessage": "broken",
    }
    assert line["timestamp"].endswith("Z") and line["stackTrace"]


def test_configure_sets_the_level_and_adds_a_handler_only_where_none_is() -> None:
    root = logging.getLogger()
    saved = root.level, root.handlers[:], logging.getLogger("httpx2").level
    try:
        root.handlers = []
        logs.configure(Settings(log_level="DEBUG", log_format="json"))
        (handler,) = root.handlers
        assert isinstance(handler.formatter, logs.JsonFormatter)
        assert root.level == logging.DEBUG
        assert logging.getLogger("httpx2").level == logging.WARNING  # no line per request
        logs.configure(Settings(log_level="WARNING"))
        assert root.handlers == [handler] and root.level == logging.WARNING
    finally:
        root.setLevel(saved[0])
        root.handlers = saved[1]
        logging.getLogger("httpx2").setLevel(saved[2])


def test_the_record_factory_is_installed_once() -> None:
    logs.install()
    factory = logging.getLogRecordFactory()
    logs.install()
    assert logging.getLogRecordFactory() is factory
