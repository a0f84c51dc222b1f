"""The events' JSON Schema: served by the chat function, in every function's OpenAPI, and held
against every event the suite sends (`tests/support/event_check.py`, run as test databases and
stacks are torn down)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator

from functions.agent_executor.app import create_app as executor_app
from functions.agent_planner.app import create_app as planner_app
from functions.chat.app import create_app as chat_app
from local.serving import BackgroundServer
from shared.events import EVENT_TYPES
from shared.wire.event_schema import events_json_schema, openapi_components
from tests.support.event_check import done_data, problems


@pytest.fixture(scope="module")
def chat() -> Iterator[str]:
    """The chat function alone: the schema route needs no database and no token."""
    with BackgroundServer(chat_app(), name="chat") as server:
        yield server.url


async def test_the_chat_function_serves_the_events_json_schema(chat: str) -> None:
    async with httpx.AsyncClient() as http:
        served = await http.get(f"{chat}/schemas/events.json")
    assert served.status_code == 200
    assert served.headers["content-type"] == "application/schema+json"
    schema = served.json()
    assert schema == events_json_schema()
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert set(schema["discriminator"]["mapping"]) == set(EVENT_TYPES)
    assert len(schema["oneOf"]) == len(EVENT_TYPES) == 12


def test_an_event_that_breaks_its_schema_is_caught() -> None:
    """The check the suite's events pass can fail: a missing key, an undocumented one, a bad
    enum value, a cost that is no decimal string."""
    base = {
        "type": "done",
        "session_id": "6f0c4b1e-0f5e-4a53-9d0e-7a0c7c2b3d11",
        "plan_id": None,
        "agent_id": None,
        "seq": 4,
        "ts": "2026-11-27T10:00:00Z",
    }
    usage = {"prompt_tokens": 1, "completion_tokens": 2, "cache_hit_tokens": 0, "cost_usd": "0.1"}
    assert problems([{**base, "data": {**done_data(), "usage": usage}}]) == []
    missing = {k: v for k, v in done_data().items() if k != "answer"}
    bad: list[dict[str, Any]] = [
        {**base, "data": missing},
        {**base, "data": {**done_data(), "extra": 1}},
        {**base, "data": done_data("finished")},
        {**base, "data": {**done_data(), "usage": {**usage, "cost_usd": "1E-7"}}},
        {**base, "type": "tokens", "data": {"text": "x"}},
    ]
    assert [len(problems([event])) for event in bad] == [1, 1, 1, 1, 1]


@pytest.mark.parametrize("make", [chat_app, planner_app, executor_app])
def test_every_functions_openapi_holds_the_event_schemas(make: Any) -> None:
    document = make().openapi()
    schemas = document["components"]["schemas"]
    for name, schema in openapi_components().items():
        assert schemas[name] == schema, name
    event = schemas["ServerSentEvent"]["properties"]["data"]
    assert event["contentSchema"] == {"$ref": "#/components/schemas/Event"}


def test_streams_are_described_with_the_event_schema() -> None:
    streamed = {"$ref": "#/components/schemas/ServerSentEvent"}
    chat = chat_app().openapi()["paths"]["/chat"]["post"]["responses"]
    assert chat["200"]["content"]["text/event-stream"]["schema"] == streamed
    assert set(chat["200"]["headers"]) == {
        "X-Parley-Session-Id",
        "X-Parley-Plan-Id",
        "X-Parley-Message-Id",
    }
    assert set(chat["202"]["headers"]) == {"Location", "Preference-Applied"}
    conflict = chat["409"]["content"]["application/problem+json"]["schema"]
    assert conflict == {"$ref": "#/components/schemas/TurnStillRunningProblem"}
    reused = chat["422"]["content"]["application/problem+json"]["schema"]
    assert reused == {
        "anyOf": [
            {"$ref": "#/components/schemas/ClientMessageIdReusedProblem"},
            {"$ref": "#/components/schemas/Problem"},
        ]
    }
    run = planner_app().openapi()["paths"]["/plans/{plan_id}/run"]["post"]["responses"]
    assert run["200"]["content"]["text/event-stream"]["schema"] == streamed
