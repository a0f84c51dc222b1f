"""The Realtime REST publisher, checked against a local HTTP endpoint that records requests."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from local.serving import BackgroundServer
from shared.events import Event
from shared.events.realtime import SupabaseRealtimePublisher, session_topic
from shared.events.sse import SSEPublisher

SESSION = uuid4()


class Recorder:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], Any]] = []
        self.status = 202

    async def broadcast(self, request: Request) -> Response:
        self.requests.append((request.url.path, dict(request.headers), await request.json()))
        return Response(status_code=self.status)


@pytest.fixture(scope="module")
def endpoint() -> Iterator[tuple[str, Recorder]]:
    recorder = Recorder()
    app = Starlette(
        routes=[Route("/realtime/v1/api/broadcast", recorder.broadcast, methods=["POST"])]
    )
    with BackgroundServer(app, name="fake-realtime-rest") as server:
        yield server.url, recorder


@pytest.fixture
def recorder(endpoint: tuple[str, Recorder]) -> Recorder:
    endpoint[1].requests.clear()
    endpoint[1].status = 202
    return endpoint[1]


def event(seq: int, type: str = "token") -> Event:
    return Event(type=type, session_id=SESSION, seq=seq, ts=datetime.now(UTC), data={"n": seq})  # type: ignore[arg-type]


def publisher(url: str, **options: Any) -> SupabaseRealtimePublisher:
    return SupabaseRealtimePublisher(
        supabase_url=url + "/", service_key="service-key", retry_delay_seconds=0, **options
    )


async def test_token_events_leave_in_one_batch_in_the_broadcast_format(
    endpoint, recorder: Recorder
) -> None:
    realtime = publisher(endpoint[0])
    await realtime.publish([event(1), event(2)])
    await realtime.publish([event(3, "done")])  # sent from the database, with its rows
    await realtime.publish([event(4)])
    await realtime.aclose()

    ((path, headers, body),) = recorder.requests
    assert path == "/realtime/v1/api/broadcast"
    assert headers["apikey"] == "service-key"
    assert headers["authorization"] == "Bearer service-key"
    assert [(m["event"], m["payload"]["seq"]) for m in body["messages"]] == [
        ("token", 1),
        ("token", 2),
        ("token", 4),
    ]
    first = body["messages"][0]
    assert first["topic"] == session_topic(SESSION) == f"session:{SESSION}"
    assert first["private"] is False
    assert first["payload"] == json.loads(event(1).model_dump_json()) | {
        "ts": first["payload"]["ts"]
    }


async def test_large_bursts_are_split_into_batches(endpoint, recorder: Recorder) -> None:
    realtime = publisher(endpoint[0], max_batch=2)
    await realtime.publish([event(n) for n in range(1, 6)])
    await realtime.aclose()
    sizes = [len(body["messages"]) for _, _, body in recorder.requests]
    assert sorted(sizes) == [1, 2, 2]
    seqs = sorted(m["payload"]["seq"] for _, _, body in recorder.requests for m in body["messages"])
    assert seqs == [1, 2, 3, 4, 5]


async def test_a_failing_endpoint_never_raises(endpoint, recorder: Recorder) -> None:
    recorder.status = 500
    realtime = publisher(endpoint[0])
    await realtime.publish([event(1)])
    await realtime.aclose()
    assert len(recorder.requests) == 2  # one retry, then dropped


async def test_an_unreachable_endpoint_never_raises() -> None:
    realtime = publisher("http://127.0.0.1:9")  # discard port: connection refused
    await realtime.publish([event(1)])
    await realtime.aclose()


async def test_sse_messages_carry_seq_type_and_event() -> None:
    sse = SSEPublisher()
    await sse.publish([event(7, "done")])
    await sse.aclose()
    chunks = [chunk async for chunk in sse.stream()]
    assert len(chunks) == 1 and chunks[0].startswith("id: 7\nevent: done\ndata: {")
    assert chunks[0].endswith("}\n\n")
    data = json.loads(chunks[0].split("data: ", 1)[1])
    assert (data["type"], data["seq"], data["session_id"]) == ("done", 7, str(SESSION))
