"""The local demo's narrator (`local.demo.play`) after a dropped connection: it joins the
session's channel again with replay, and prints every event of the turn once."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from local import demo
from local.seed import DEMO_EMAIL, DEMO_PASSWORD, seed_demo
from local.stack import RunningStack, password_session, running_stack
from shared.db import Database
from shared.events.realtime import session_topic
from shared.services import load_settings


class Cuttable:
    """A TCP proxy in front of the Realtime server: `cut()` drops every connection at once (no
    close frame, as a lost network does) and refuses new ones until `restore()`."""

    def __init__(self, port: int) -> None:
        self.port, self.down = port, False
        self._open: set[asyncio.StreamWriter] = set()
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> Cuttable:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.cut()
        assert self._server is not None
        self._server.close()

    def cut(self) -> None:
        self.down = True
        for writer in list(self._open):
            writer.transport.abort()

    def restore(self) -> None:
        self.down = False

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.down:
            writer.transport.abort()
            return
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.port)
        self._open |= {writer, up_writer}

        async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError, OSError):
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            sink.transport.abort()

        await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer))
        self._open -= {writer, up_writer}


@pytest.fixture(scope="module")
async def stack(database_url: str, db: Database) -> AsyncIterator[RunningStack]:
    """The local stack with the demo user's data, the offline demo model taking 0.4 s a reply
    (a turn of a few seconds: time to drop the connection in the middle, and few enough events
    a second that replay's 25 cover the gap)."""
    await seed_demo(db)
    with pytest.MonkeyPatch.context() as env:
        for name in ("DEEPSEEK_API_KEY", "LLM_API_KEY", "LLM_BASE_URL", "APPROVALS"):
            env.delenv(name, raising=False)
        settings = load_settings(database_url=database_url)
    async with running_stack(
        settings, database_url, port=0, realtime_port=0, model_latency=0.4
    ) as running:
        yield running


# realtime 2.34 reads websockets' deprecated ConnectionClosed.code/.reason on an abnormal close.
@pytest.mark.filterwarnings(
    r"ignore:ConnectionClosed\.(code|reason) is deprecated:DeprecationWarning"
)
async def test_a_dropped_narrator_rejoins_with_replay_and_misses_nothing(
    stack: RunningStack, db: Database
) -> None:
    lines: list[str] = []
    loop = asyncio.get_running_loop()
    session = await password_session(stack.supabase_url, stack.anon_key, DEMO_EMAIL, DEMO_PASSWORD)
    async with Cuttable(stack.realtime.port) as network:

        def say(line: str) -> None:
            lines.append(line)
            if "step_started" in line and not any("connection lost" in s for s in lines):
                network.cut()  # mid-turn: the executors are about to work
                loop.call_later(0.5, network.restore)

        turn = await demo.play(
            functions_url=stack.url,
            realtime_url=f"{network.url}/realtime/v1",
            anon_key=stack.anon_key,
            user_token=str(session["access_token"]),
            say=say,
        )

    assert turn.reply["status"] == "completed"
    assert turn.rejoins == 1 and any("connection lost" in line for line in lines)
    assert 0 < turn.replayed < demo.REPLAY_LIMIT  # all since `since`: nothing older cut off
    assert any(line.endswith("(replayed)") for line in lines)
    printed = [e["seq"] for e in turn.events if e["type"] != "token"]
    assert len(printed) == len(set(printed)), "an event was printed twice"
    async with db.service() as conn:
        cur = await conn.execute(
            "SELECT (payload ->> 'seq')::bigint AS seq FROM realtime.messages WHERE topic = %s",
            (session_topic(turn.reply["session_id"]),),
        )
        stored = {row["seq"] for row in await cur.fetchall()}
    assert set(printed) == stored  # every event sent, none missed while the socket was down
    assert turn.events[-1]["type"] == "done"
