"""Work that outlives the request that started it (a streaming client going away, a 202)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger(__name__)
_background: set[asyncio.Task[Any]] = set()


def run_in_background(work: Coroutine[Any, Any, Any], *, name: str) -> asyncio.Task[Any]:
    """Run `work` to its end even if the request that started it goes away; a failure is
    logged (a plan resumes on its next invocation). The task is kept referenced until done."""
    task = asyncio.create_task(work, name=name)
    _background.add(task)
    task.add_done_callback(_finished)
    return task


def _finished(task: asyncio.Task[Any]) -> None:
    _background.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.error("%s stopped unexpectedly", task.get_name(), exc_info=task.exception())
