"""DeepSeek's twin refuses what DeepSeek refuses, with DeepSeek's status and words (one case per
rule of `local.deepseek.contract`, each tabled in docs/deepseek.md), and accepts what it accepts."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from local.deepseek import RULES, FakeModelServer, insufficient_balance, invalid_key, reply
from tests.support import ROOT

CALL = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
TOOL = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}
ASKED = {"role": "user", "content": "Look it up."}
CALLED = {"role": "assistant", "content": None, "tool_calls": [CALL], "reasoning_content": "r"}
ANSWERED = {"role": "tool", "tool_call_id": "c1", "content": "found"}
OFF = {"thinking": {"type": "disabled"}}


def body(**fields: Any) -> dict[str, Any]:
    return {"model": "deepseek-v4-pro", "messages": [ASKED], **fields}


PASSBACK = "The `reasoning_content` in the thinking mode must be passed back to the API."
REFUSED: dict[str, tuple[dict[str, Any], int, str]] = {
    "body-shape": (
        {"model": "deepseek-flash", "messages": [{"role": "developer", "content": "x"}]},
        422,
        "Failed to deserialize the JSON body into the target "
        "type: messages[0]: role: unknown variant `developer`",
    ),
    "mode-values": (
        body(reasoning_effort="bogus"),
        422,
        "Failed to deserialize the JSON body "
        "into the target type: reasoning_effort: unknown variant `bogus`, expected "
        "one of `none`, `minimal`, `low`, `medium`, `high`, `xhigh`, `max`",
    ),
    "unknown-model": (
        body(model="deepseek-chat"),
        400,
        "The supported API model names are deepseek-flash, deepseek-v4-pro",
    ),
    "max-tokens": (
        body(max_tokens=393_217),
        400,
        "Invalid max_tokens value, the valid range of max_tokens is [1, 393216]",
    ),
    "sampling": (
        body(temperature=2.5),
        400,
        "Invalid temperature value, the valid range of temperature is [0, 2]",
    ),
    "stream-options": (
        body(stream_options={"include_usage": True}),
        400,
        "stream_options should be set along with stream = true",
    ),
    "tools": (body(tools=[TOOL] * 129), 400, "A max of 128 functions are supported"),
    "tool-choice-thinking": (
        body(tools=[TOOL], tool_choice="required"),
        400,
        "Thinking mode does not support this tool_choice",
    ),
    "assistant-content": (
        body(messages=[ASKED, {"role": "assistant", "content": None}, ASKED]),
        400,
        "Invalid assistant message: content or tool_calls must be set",
    ),
    "tool-messages": (
        body(messages=[ASKED, CALLED, ASKED]),
        400,
        "An assistant message with "
        "'tool_calls' must be followed by tool messages responding to each "
        "'tool_call_id'. (insufficient tool messages following tool_calls message)",
    ),
    "reasoning-passback": (
        body(tools=[TOOL], messages=[ASKED, {"role": "assistant", "content": "Found it."}, ASKED]),
        400,
        PASSBACK,
    ),
    "context-length": (
        body(messages=[{"role": "user", "content": "word " * 660_000}], max_tokens=393_216),
        400,
        "This model's maximum context length is 1048576 tokens. However, you requested",
    ),
}


@pytest.fixture(scope="module")
async def http(fake: FakeModelServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=fake.base_url, timeout=60) as client:
        yield client


def test_every_rule_has_a_case_here_and_a_row_in_the_docs() -> None:
    ids = {rule.id for rule in RULES} | {"unknown-model", "context-length"}
    table = (ROOT / "docs" / "deepseek.md").read_text()
    documented = set(re.findall(r"^\| `([a-z-]+)` \|", table, re.MULTILINE))

    assert ids == set(REFUSED)
    assert ids <= documented
    assert all(f"test_deepseek_refuses[{rule}]" in table for rule in ids)


@pytest.mark.parametrize("rule", sorted(REFUSED))
async def test_deepseek_refuses(fake: FakeModelServer, http: httpx.AsyncClient, rule: str) -> None:
    sent, status, words = REFUSED[rule]
    fake.script(reply("kept for a request DeepSeek accepts"))

    response = await http.post("/chat/completions", json=sent)

    assert response.status_code == status
    error = response.json()["error"]
    assert error["message"].startswith(words)
    assert (error["type"], error["param"], error["code"]) == (
        "invalid_request_error",
        None,
        "invalid_request_error",
    )
    assert fake.pending == 1  # nothing scripted was spent on it
    refused = fake.exchanges[-1].refused
    assert refused is not None and refused.rule == rule


ACCEPTED = {
    "thinking, tool_choice auto": body(tools=[TOOL], tool_choice="auto"),
    "thinking, tool_choice none": body(tools=[TOOL], tool_choice="none"),
    "thinking off, tool_choice required": body(tools=[TOOL], tool_choice="required", **OFF),
    "reasoning_effort none, a named tool": body(
        tools=[TOOL],
        reasoning_effort="none",
        tool_choice={"type": "function", "function": {"name": "lookup"}},
    ),
    "an empty reasoning passed back": body(
        tools=[TOOL], messages=[ASKED, {**CALLED, "reasoning_content": ""}, ANSWERED]
    ),
    "no tools: reasoning not needed": body(
        messages=[ASKED, {"role": "assistant", "content": "Found."}, ASKED]
    ),
    "thinking off: reasoning not needed": body(
        tools=[TOOL],
        messages=[ASKED, {"role": "assistant", "content": None, "tool_calls": [CALL]}, ANSWERED],
        **OFF,
    ),
    "sampling ignored while thinking": body(
        temperature=0.2, presence_penalty=1, frequency_penalty=1
    ),
}


@pytest.mark.parametrize("case", sorted(ACCEPTED))
async def test_deepseek_accepts(fake: FakeModelServer, http: httpx.AsyncClient, case: str) -> None:
    response = await http.post("/chat/completions", json=ACCEPTED[case])

    assert response.status_code == 200, response.text
    assert fake.exchanges[-1].refused is None


ANSWER = {"role": "assistant", "content": "Found."}
PASSBACK_CASES = {
    # English guide: with tools, every earlier assistant turn, calls or not.
    "tools, a turn without calls": (body(tools=[TOOL], messages=[ASKED, ANSWER, ASKED]), 400),
    # Chinese guide: a user turn that called tools, in every later request, tools or not.
    "no tools, the calling turn": (
        body(messages=[ASKED, {**CALLED, "reasoning_content": None}, ANSWERED, ANSWER, ASKED]),
        400,
    ),
    "no tools, the calling turn's answer": (
        body(messages=[ASKED, CALLED, ANSWERED, ANSWER, ASKED]),
        400,
    ),
    "no tools, right after the calls": (
        body(
            messages=[
                ASKED,
                {k: v for k, v in CALLED.items() if k != "reasoning_content"},
                ANSWERED,
            ]
        ),
        400,
    ),
    "no tools, all passed back": (
        body(messages=[ASKED, CALLED, ANSWERED, {**ANSWER, "reasoning_content": ""}, ASKED]),
        200,
    ),
    "no tools, a turn without calls": (body(messages=[ASKED, ANSWER, ASKED]), 200),
    "thinking off, no tools": (
        body(
            messages=[
                ASKED,
                {k: v for k, v in CALLED.items() if k != "reasoning_content"},
                ANSWERED,
                ANSWER,
                ASKED,
            ],
            **OFF,
        ),
        200,
    ),
}


@pytest.mark.parametrize("case", sorted(PASSBACK_CASES))
async def test_the_pass_back_rule_holds_both_of_deepseeks_wordings(
    fake: FakeModelServer, http: httpx.AsyncClient, case: str
) -> None:
    sent, status = PASSBACK_CASES[case]
    fake.respond_with(lambda request: reply("ok"))

    response = await http.post("/chat/completions", json=sent)

    assert response.status_code == status, response.text
    if status == 400:
        assert response.json()["error"]["message"] == PASSBACK


async def test_a_thinking_reply_carries_reasoning_and_a_script_can_leave_it_out(
    fake: FakeModelServer, http: httpx.AsyncClient
) -> None:
    fake.script(
        reply("a", reasoning="mine"),
        reply("b"),
        reply("c").without_reasoning(),
        reply("d").with_empty_reasoning(),
        reply("e").reasoning_named("reasoning"),
        reply("f", reasoning="never sent"),
    )
    replies = [
        (await http.post("/chat/completions", json=sent)).json()["choices"][0]["message"]
        for sent in [body()] * 5 + [body(**OFF)]
    ]

    assert [m.get("reasoning_content") for m in replies] == [
        "mine",
        "Thinking it through.",
        None,
        "",
        None,
        None,
    ]
    assert replies[4]["reasoning"] == "Thinking it through."
    assert "reasoning_content" not in replies[5]  # thinking off: none, whatever was scripted


async def test_deepseeks_402_and_401_word_for_word(tmp_path: Path) -> None:
    with FakeModelServer(api_key="sk-right") as fake:
        async with httpx.AsyncClient(base_url=fake.base_url) as http:
            wrong = await http.post(
                "/chat/completions", json=body(), headers={"authorization": "Bearer sk-wrong-abcd"}
            )
            missing = await http.post("/chat/completions", json=body())
            fake.script(insufficient_balance())
            broke = await http.post(
                "/chat/completions", json=body(), headers={"authorization": "Bearer sk-right"}
            )

    assert (wrong.status_code, missing.status_code, broke.status_code) == (401, 401, 402)
    assert wrong.json()["error"] == {
        "message": "Authentication Fails, Your api key: ****abcd is invalid",
        "type": "authentication_error",
        "param": None,
        "code": "invalid_request_error",
    }
    assert missing.json()["error"]["message"] == invalid_key(None).message
    assert broke.json()["error"] == {
        "message": "Insufficient Balance",
        "type": "unknown_error",
        "param": None,
        "code": "invalid_request_error",
    }


async def test_reasoning_counts_in_the_prompt_only_where_deepseek_keeps_it(
    fake: FakeModelServer, http: httpx.AsyncClient
) -> None:
    history = [
        ASKED,
        {"role": "assistant", "content": "Found.", "reasoning_content": "x " * 400},
        ASKED,
    ]
    fake.respond_with(lambda request: reply("ok"))

    kept = await http.post("/chat/completions", json=body(tools=[TOOL], messages=history))
    ignored = await http.post("/chat/completions", json=body(messages=history))

    with_tools = kept.json()["usage"]["prompt_tokens"]
    without = ignored.json()["usage"]["prompt_tokens"]
    assert with_tools - without > 390  # the reasoning's tokens (and the tool's few)


async def test_a_tool_calling_turns_reasoning_counts_in_a_request_without_tools(
    fake: FakeModelServer, http: httpx.AsyncClient
) -> None:
    thought = {**CALLED, "reasoning_content": "x " * 400}
    fake.respond_with(lambda request: reply("ok"))

    kept = await http.post("/chat/completions", json=body(messages=[ASKED, thought, ANSWERED]))
    short = await http.post("/chat/completions", json=body(messages=[ASKED, CALLED, ANSWERED]))

    extra = kept.json()["usage"]["prompt_tokens"] - short.json()["usage"]["prompt_tokens"]
    assert extra > 390  # "需参与上下文拼接": it is part of the prompt, and billed
