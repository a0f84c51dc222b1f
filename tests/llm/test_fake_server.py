"""The fake server's wire format, checked with a plain HTTP client (no openai parsing)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest

from shared.llm.fake_server import FakeModelServer, RecordedRequest, reply, tool_call, usage

BODY = {"model": "deepseek-reasoner", "messages": [{"role": "user", "content": "hi"}],
        "stream": True, "stream_options": {"include_usage": True}}  # fmt: skip


@pytest.fixture(scope="module")
async def http(fake: FakeModelServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=fake.base_url) as client:
        yield client


def sse_payloads(text: str) -> list[str]:
    lines = [line for line in text.split("\n\n") if line]
    assert all(line.startswith("data: ") for line in lines)
    return [line.removeprefix("data: ") for line in lines]


async def test_stream_matches_the_openai_chunk_sequence(
    fake: FakeModelServer, http: httpx.AsyncClient
) -> None:
    fake.script(reply("Hel", "lo", tool_call("f", a=1).with_id("c1").in_pieces(2),
                      reasoning="why", usage=usage(20, 9, cache_hit=16)))  # fmt: skip

    response = await http.post("/chat/completions", json=BODY)

    assert response.headers["content-type"].startswith("text/event-stream")
    *payloads, done = sse_payloads(response.text)
    assert done == "[DONE]"
    chunks = [json.loads(p) for p in payloads]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert len({c["id"] for c in chunks}) == 1
    deltas = [c["choices"][0]["delta"] for c in chunks[:-1]]
    assert deltas == [
        {"role": "assistant", "content": ""},
        {"content": None, "reasoning_content": "why"},
        {"content": "Hel"},
        {"content": "lo"},
        {"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                         "function": {"name": "f", "arguments": ""}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"a"'}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": ': 1}'}}]},
        {},
    ]  # fmt: skip
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"] == {
        "prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29,
        "prompt_tokens_details": {"cached_tokens": 16},
        "completion_tokens_details": {"reasoning_tokens": 0},
        "prompt_cache_hit_tokens": 16, "prompt_cache_miss_tokens": 4,
    }  # fmt: skip
    assert all(c["usage"] is None for c in chunks[:-1])


async def test_deepseek_style_path_models_list_and_redacted_secrets(
    fake: FakeModelServer, http: httpx.AsyncClient
) -> None:
    base = fake.base_url.removesuffix("/v1")
    fake.respond_with(lambda request: reply(f"{len(request.messages)} message(s)"))

    plain = await http.post(base + "/chat/completions", json={**BODY, "stream": False},
                            headers={"authorization": "Bearer sk-secret"})  # fmt: skip
    models = (await http.get("/models")).json()

    assert plain.json()["object"] == "chat.completion"
    assert plain.json()["choices"][0]["message"]["content"] == "1 message(s)"
    assert [m["id"] for m in models["data"]] == ["parley-demo"]
    (recorded,) = fake.requests
    assert isinstance(recorded, RecordedRequest) and recorded.path == "/chat/completions"
    assert recorded.headers["authorization"] == "[redacted]"
    assert "sk-secret" not in json.dumps(recorded.headers)


async def test_bad_requests_get_openai_error_bodies(
    fake: FakeModelServer, http: httpx.AsyncClient
) -> None:
    not_json = await http.post("/chat/completions", content=b"{nope")
    no_messages = await http.post("/chat/completions", json={"model": "x"})

    assert not_json.status_code == no_messages.status_code == 400
    assert no_messages.json()["error"]["type"] == "invalid_request_error"
    assert fake.requests == []


async def test_truncated_stream_has_no_finish_and_no_done(
    fake: FakeModelServer, http: httpx.AsyncClient
) -> None:
    fake.script(reply("a", "b", "c").truncated(after=3))

    response = await http.post("/chat/completions", json=BODY)

    payloads = sse_payloads(response.text)
    assert len(payloads) == 3 and "[DONE]" not in payloads
    assert all(json.loads(p)["choices"][0]["finish_reason"] is None for p in payloads)


async def test_broken_tool_pairing_gets_the_providers_400(
    fake: FakeModelServer, http: httpx.AsyncClient
) -> None:
    fake.script(reply("kept for the next request"))
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    orphan = [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "c1",
                                                  "content": "x"}]  # fmt: skip
    unanswered = [{"role": "user", "content": "hi"},
                  {"role": "assistant", "content": None, "tool_calls": [call]},
                  {"role": "user", "content": "well?"}]  # fmt: skip

    first = await http.post("/chat/completions", json={**BODY, "messages": orphan})
    second = await http.post("/chat/completions", json={**BODY, "messages": unanswered})

    assert first.status_code == second.status_code == 400
    assert "must be a response to a preceding message" in first.json()["error"]["message"]
    assert "did not have response messages: c1" in second.json()["error"]["message"]
    assert len(fake.requests) == 2 and fake.pending == 1
