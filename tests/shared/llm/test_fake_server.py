"""The fake server's wire format, checked with a plain HTTP client (no openai parsing)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence

import httpx
import pytest

from local.deepseek import (
    DEEPSEEK_MODELS,
    FakeModelServer,
    RecordedRequest,
    reply,
    tool_call,
    usage,
)
from local.deepseek.cache import STORAGE_UNIT
from shared.llm.tokens import DeepSeekTokenizer, count_prompt

BODY = {
    "model": "deepseek-v4-pro",
    "messages": [{"role": "user", "content": "hi"}],
    "stream": True,
    "stream_options": {"include_usage": True},
}


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
    fake.script(
        reply(
            "Hel",
            "lo",
            tool_call("f", a=1).with_id("c1").in_pieces(2),
            reasoning="why",
            usage=usage(20, 9, cache_hit=16),
        )
    )

    response = await http.post("/chat/completions", json=BODY)

    assert response.headers["content-type"].startswith("text/event-stream")
    *payloads, done = sse_payloads(response.text)
    assert done == "[DONE]"
    chunks = [json.loads(p) for p in payloads]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert len({c["id"] for c in chunks}) == 1
    deltas = [c["choices"][0]["delta"] for c in chunks[:-1]]
    assert deltas == [
        {"role": "assistant", "content": None, "reasoning_content": ""},  # thinking: DeepSeek's
        {"content": None, "reasoning_content": "why"},
        {"content": "Hel"},
        {"content": "lo"},
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "f", "arguments": ""},
                }
            ]
        },
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"a"'}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]},
        {},
    ]
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"] == {
        "prompt_tokens": 20,
        "completion_tokens": 9,
        "total_tokens": 29,
        "prompt_tokens_details": {"cached_tokens": 16},
        "completion_tokens_details": {"reasoning_tokens": 0},
        "prompt_cache_hit_tokens": 16,
        "prompt_cache_miss_tokens": 4,
    }
    assert all(c["usage"] is None for c in chunks[:-1])


async def test_deepseek_style_path_models_list_and_redacted_secrets(
    fake: FakeModelServer, http: httpx.AsyncClient
) -> None:
    base = fake.base_url.removesuffix("/v1")
    fake.respond_with(lambda request: reply(f"{len(request.messages)} message(s)"))

    body = {k: v for k, v in BODY.items() if k != "stream_options"}
    plain = await http.post(
        base + "/chat/completions",
        json={**body, "stream": False},
        headers={"authorization": "Bearer sk-secret"},
    )
    models = (await http.get("/models")).json()

    assert plain.json()["object"] == "chat.completion"
    assert plain.json()["choices"][0]["message"]["content"] == "1 message(s)"
    listed = [m["id"] for m in models["data"]]
    assert listed[:2] == ["deepseek-flash", "deepseek-v4-pro"] and "parley-demo" in listed
    assert "deepseek-chat" not in listed and "deepseek-v4-flash" in DEEPSEEK_MODELS
    (recorded,) = fake.requests
    assert isinstance(recorded, RecordedRequest) and recorded.path == "/chat/completions"
    assert recorded.headers["authorization"] == "[redacted]"
    assert "sk-secret" not in json.dumps(recorded.headers)


async def test_bad_requests_get_deepseeks_error_bodies(
    fake: FakeModelServer, http: httpx.AsyncClient
) -> None:
    not_json = await http.post("/chat/completions", content=b"{nope")
    no_messages = await http.post("/chat/completions", json={"model": "x"})

    assert not_json.status_code == 400
    assert not_json.json()["error"]["message"].startswith("Failed to parse the request body")
    assert no_messages.status_code == 422  # DeepSeek's body parser
    assert no_messages.json() == {
        "error": {
            "message": "Failed to deserialize the JSON body into the target type: missing field "
            "`messages` at line 1 column 1",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_request_error",
        }
    }
    assert [e.refused and e.refused.rule for e in fake.exchanges] == ["body-shape"]


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
    orphan = [
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "c1", "content": "x"},
    ]
    unanswered = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "user", "content": "well?"},
    ]

    first = await http.post("/chat/completions", json={**BODY, "messages": orphan})
    second = await http.post("/chat/completions", json={**BODY, "messages": unanswered})

    assert first.status_code == second.status_code == 400
    assert first.json()["error"]["message"] == (
        "Messages with role 'tool' must be a response to a preceding message with 'tool_calls'"
    )
    assert second.json()["error"]["message"].endswith(
        "(insufficient tool messages following tool_calls message)"
    )
    assert len(fake.requests) == 2 and fake.pending == 1


@pytest.mark.parametrize("model", ["deepseek-chat", "deepseek-reasoner", "deepseek-coder", "gpt-x"])
async def test_a_retired_or_unknown_model_gets_deepseeks_400(
    fake: FakeModelServer, http: httpx.AsyncClient, model: str
) -> None:
    fake.script(reply("kept for the next request"))

    response = await http.post("/chat/completions", json={**BODY, "model": model})

    assert response.status_code == 400
    served = ", ".join(fake.listed_models())
    assert response.json() == {
        "error": {
            "message": f"The supported API model names are {served}, but you passed {model}.",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_request_error",
        }
    }
    assert served.startswith("deepseek-flash, deepseek-v4-pro, ")
    assert fake.pending == 1 and fake.exchanges[0].usage is None


SYSTEM: dict[str, object] = {"role": "system", "content": "You are a careful assistant. " * 40}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "list_tasks",
            "description": "List tasks.",
            "parameters": {"type": "object", "properties": {}},
        },
    }
]


async def plain(http: httpx.AsyncClient, messages: Sequence[object]) -> dict[str, int]:
    """Usage of a non-thinking call (the cache's arithmetic, without reasoning in the way)."""
    body = {
        **BODY,
        "stream": False,
        "messages": messages,
        "tools": TOOLS,
        "thinking": {"type": "disabled"},
    }
    body.pop("stream_options")
    response = await http.post("/chat/completions", json=body)
    assert response.status_code == 200
    return dict(response.json()["usage"])


async def test_usage_counts_prompt_tokens_as_parley_does(
    fake: FakeModelServer, http: httpx.AsyncClient, tokenizer: DeepSeekTokenizer
) -> None:
    fake.script(reply("Done."))
    messages: list[dict[str, object]] = [SYSTEM, {"role": "user", "content": "What is due?"}]

    reported = await plain(http, messages)

    assert reported["prompt_tokens"] == count_prompt(tokenizer, messages, TOOLS)
    assert reported["completion_tokens"] == tokenizer.count("Done.")
    assert reported["prompt_cache_hit_tokens"] == 0  # a cold cache


async def test_a_conversation_hits_the_prefix_its_last_request_persisted(
    fake: FakeModelServer, http: httpx.AsyncClient
) -> None:
    call = tool_call("list_tasks").with_id("c1")
    fake.script(reply(call), reply("Two tasks."), reply("Hi."))
    first = [SYSTEM, {"role": "user", "content": "What is due?"}]
    answered = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "list_tasks", "arguments": "{}"}}
        ],
    }
    second = [*first, answered, {"role": "tool", "tool_call_id": "c1", "content": "[a, b]"}]
    changed = [{"role": "system", "content": "Now: 12:01. " + str(SYSTEM["content"])}, *second[1:]]

    cold, warm, broken = [await plain(http, m) for m in (first, second, changed)]

    assert cold["prompt_cache_hit_tokens"] == 0
    hit = warm["prompt_cache_hit_tokens"]
    assert hit % STORAGE_UNIT == 0 and cold["prompt_tokens"] - STORAGE_UNIT < hit
    assert hit < warm["prompt_tokens"]
    assert broken["prompt_cache_hit_tokens"] == 0  # a per-call value before the history


async def test_a_prefix_shared_by_two_requests_is_hit_by_the_third(
    fake: FakeModelServer, http: httpx.AsyncClient
) -> None:
    fake.respond_with(lambda request: reply("ok"))
    asks = [[SYSTEM, {"role": "user", "content": f"Question {n}?"}] for n in range(3)]

    first, second, third = [await plain(http, m) for m in asks]

    assert first["prompt_cache_hit_tokens"] == second["prompt_cache_hit_tokens"] == 0
    assert 0 < third["prompt_cache_hit_tokens"] < third["prompt_tokens"]
