"""SnapStart's runtime hooks, called in-process as the Lambda runtime calls them.

Each function is warmed as a deployed one would be — the chat stores a message and queues it
(through a keep-alive front for moto's SQS, as SQS keeps connections), the planner answers it
(the model's client, the database) — then its before-snapshot hooks run, as the runtime runs
them before taking the snapshot: nothing may stay connected, as Postgres sees it
(`pg_stat_activity`) and as this process's sockets show (`/proc`). Then the after-restore
hooks, and the copy must work again.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from snapshot_restore_py import get_after_restore, get_before_snapshot

from local.deepseek import FakeModelServer, reply
from shared.db import Database
from shared.kernel.settings import Settings
from shared.llm.tokens import DeepSeekTokenizer
from shared.runtime.snapstart import CONNECTED
from shared.services import Services
from tests.functions.test_handlers import load_event
from tests.support.cloud import Cloud, Function, body_of
from tests.support.factories import make_user
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.proxy import Proxy
from tests.support.scripting import Script
from tests.support.turn_kinds import with_application_name

pytestmark = pytest.mark.skipif(not Path("/proc/self/net/tcp").exists(), reason="needs /proc")


def run_hooks(
    registry: list[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]],
    handler: object,
    *,
    reverse: bool,
) -> int:
    """Run `handler`'s hooks of the runtime's registry, in the runtime's order (before the
    snapshot: last registered first; after the restore: as registered); how many ran."""
    hooks = [(f, a, k) for f, a, k in registry if a and a[0] is handler]
    for function, args, kwargs in reversed(hooks) if reverse else hooks:
        function(*args, **kwargs)
    return len(hooks)


def established(port: int) -> int:
    """This process's open TCP connections to 127.0.0.1:`port`."""
    fds = Path("/proc/self/fd")
    inodes = set()
    for fd in fds.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for line in Path("/proc/self/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        remote, state, inode = fields[2], fields[3], fields[9]
        if state == "01" and inode in inodes and int(remote.split(":")[1], 16) == port:
            count += 1
    return count


async def gone(db: Database, application: str) -> bool:
    """Whether Postgres has no session of `application` left: waits (bounded) for them to end,
    as a backend leaves `pg_stat_activity` only once it has seen its client go."""
    for _ in range(200):
        if await sessions_of(db, application) == 0:
            return True
        await asyncio.sleep(0.05)
    return False


async def sessions_of(db: Database, application: str) -> int:
    async with db.autocommit() as conn:
        cursor = await conn.execute(
            "SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = %s",
            (application,),
        )
        row = await cursor.fetchone()
    assert row is not None
    return int(row["n"])


@pytest.fixture
def proxy(aws: str) -> Iterator[Proxy]:
    with Proxy(aws) as front:
        yield front


@pytest.fixture
def warm(
    settings: dict[str, Any],
    cloud: Cloud,
    proxy: Proxy,
    tokenizer: DeepSeekTokenizer,
    events: InMemoryPublisher,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[dict[str, Function]]:
    """The chat and the planner, each on a database URL of its own name (`snapstart-<name>`),
    sending to the queue at its URL on the keep-alive front (not at `AWS_ENDPOINT_URL_SQS`,
    which the test's own boto3 client keeps using)."""
    monkeypatch.delenv("AWS_ENDPOINT_URL_SQS")
    queue = proxy.url + urlsplit(cloud.urls["planner"]).path
    started: dict[str, Function] = {}
    try:
        for name in ("chat", "agent_planner"):
            url = with_application_name(settings["database_url"], f"snapstart-{name}")
            values = {**settings, "database_url": url, "planner_queue_url": queue}
            services = Services(Settings(**values), tokens=tokenizer, event_sinks=[events])
            started[name] = Function(name, services)
        yield started
    finally:
        for function in started.values():
            function.close()


async def send(chat: Function, user: Any) -> dict[str, Any]:
    event = load_event("chat_send_message.json", user)
    event["body"] = json.dumps({"message": "hi"})
    response = await chat.invoke(event)
    assert response["statusCode"] == 202, response
    accepted: dict[str, Any] = body_of(response)
    return accepted


async def test_nothing_connected_survives_a_snapshot_and_a_restored_copy_reconnects(
    db: Database,
    cloud: Cloud,
    warm: dict[str, Function],
    proxy: Proxy,
    script: Script,
    fake: FakeModelServer,
) -> None:
    user = await make_user(db)
    script.planner(reply("Hello."), reply("Hello again."))
    chat, planner = warm["chat"], warm["agent_planner"]
    model = urlsplit(fake.base_url).port or 80
    sqs = urlsplit(proxy.url).port or 80
    await send(chat, user)
    await cloud.deliver("planner", planner)

    assert await sessions_of(db, "snapstart-chat") > 0
    assert await sessions_of(db, "snapstart-agent_planner") > 0
    assert established(sqs) == 1  # the chat's kept connection to SQS
    assert established(model) >= 1  # the planner's to the model

    for function in (chat, planner):
        before = partial(run_hooks, get_before_snapshot(), reverse=True)
        ran = function.on_its_thread(before, function.handler)
        assert ran == 1
        assert not set(CONNECTED) & set(function.services.__dict__)

    assert (established(sqs), established(model)) == (0, 0)
    assert await gone(db, "snapstart-chat")
    assert await gone(db, "snapstart-agent_planner")

    snapshot = random.getstate()
    for function in (chat, planner):
        after = partial(run_hooks, get_after_restore(), reverse=False)
        assert function.on_its_thread(after, function.handler) == 1
    assert random.getstate() != snapshot  # each restored copy jitters on its own

    accepted = await send(chat, user)  # the restored copies connect again, on first use
    delivery = await cloud.deliver("planner", planner)
    assert delivery is not None and not delivery.failed
    async with db.autocommit() as conn:
        cursor = await conn.execute(
            "SELECT status FROM agent_plans WHERE id = %s", (accepted["plan_id"],)
        )
        assert await cursor.fetchone() == {"status": "completed"}
