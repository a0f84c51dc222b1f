"""Histories DeepSeek accepts: calls and results paired (checked, or repaired, before any request
is sent), and reasoning passed back as DeepSeek's thinking mode asks."""

from __future__ import annotations

from typing import Any

import pytest

from local.deepseek import FakeModelServer, reply, tool_call
from shared.llm import (
    AssistantMessage,
    ChatRequest,
    InvalidHistory,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolSchema,
    UserMessage,
    find_problems,
    repair_history,
)
from shared.llm.history_checks import UNANSWERED_RESULT
from tests.shared.llm.conftest import MakeClient

LOOKUP = ToolSchema("lookup", "Look something up")
A = ToolCall.of("call_a", "lookup", q="a")
B = ToolCall.of("call_b", "lookup", q="b")


def valid_history() -> list[Message]:
    return [
        SystemMessage("sys"),
        UserMessage("Look up a and b"),
        AssistantMessage(tool_calls=(A, B), reasoning_content="I need both."),
        ToolMessage.answering(A, "result a"),
        ToolMessage.answering(B, "result b"),
        AssistantMessage("Both found."),
        UserMessage("thanks"),
    ]


def test_a_valid_history_has_no_problems_and_repair_keeps_it() -> None:
    history = valid_history()

    assert find_problems(history) == []
    assert repair_history(history) == history


def test_orphan_and_duplicate_tool_results_are_found_and_dropped() -> None:
    history = valid_history()
    history.insert(5, ToolMessage.answering(A, "again"))  # duplicate answer
    history.insert(2, ToolMessage("call_zzz", "orphan"))  # before any tool call

    problems = find_problems(history)
    repaired = repair_history(history)

    assert [(p.index, p.kind) for p in problems] == [
        (2, "orphan_tool_result"),
        (6, "duplicate_tool_result"),
    ]
    assert repaired == valid_history()


def test_tool_result_after_a_user_message_is_an_orphan() -> None:
    history = [*valid_history()[:4], UserMessage("wait"), ToolMessage.answering(B, "late")]

    kinds = [p.kind for p in find_problems(history)]
    repaired = repair_history(history)

    assert kinds == ["unanswered_tool_call", "orphan_tool_result"]
    assert repaired[4] == ToolMessage("call_b", UNANSWERED_RESULT, "lookup")
    assert repaired[5:] == [UserMessage("wait")]


def test_unanswered_calls_get_a_synthetic_result_before_the_next_message() -> None:
    history = valid_history()
    del history[4]  # B's result
    trailing: list[Message] = [
        UserMessage("go"),
        AssistantMessage(tool_calls=(ToolCall.of("c", "lookup"),)),
    ]

    repaired = repair_history(history + trailing)

    assert repaired[3:6] == [
        ToolMessage.answering(A, "result a"),
        ToolMessage("call_b", UNANSWERED_RESULT, "lookup"),
        AssistantMessage("Both found."),
    ]
    assert repaired[-1] == ToolMessage("c", UNANSWERED_RESULT, "lookup")
    assert find_problems(repaired) == []


def test_reasoning_is_never_a_local_problem() -> None:
    history = valid_history()
    history[2] = AssistantMessage(tool_calls=(A, B))  # the model sent no reasoning

    assert find_problems(history) == []
    assert repair_history(history) == history


async def test_strict_mode_rejects_an_orphan_tool_message_without_sending(
    fake: FakeModelServer, make_client: MakeClient
) -> None:
    fake.script(reply("should not be used"))
    history: list[Message] = [UserMessage("hi"), ToolMessage("call_x", "orphan")]

    with pytest.raises(InvalidHistory, match=r"call_x.*answers no preceding") as caught:
        await make_client().complete(ChatRequest("test-model", history, tools=[LOOKUP]))

    assert caught.value.problems == (
        "message 1: tool result for 'call_x' answers no preceding assistant tool call",
    )
    assert fake.requests == [] and fake.pending == 1


async def test_in_thinking_mode_reasoning_goes_back_as_both_of_deepseeks_wordings_ask(
    fake: FakeModelServer, make_client: MakeClient
) -> None:
    fake.script(reply("ok"), reply("ok"), reply("ok"))
    history = [
        UserMessage("hello"),
        AssistantMessage("Hi!", reasoning_content="A greeting."),  # a user turn with no calls
        *valid_history()[1:],  # a user turn with tool calls, then "thanks"
    ]
    history[3] = AssistantMessage(tool_calls=(A, B))  # no reasoning came with it

    await make_client().complete(ChatRequest("test-thinker", history, tools=[LOOKUP]))
    await make_client().complete(ChatRequest("test-thinker", history))  # no tools
    await make_client().complete(ChatRequest("test-model", history, tools=[LOOKUP]))

    def passed_back(messages: list[dict[str, Any]]) -> list[str | None]:
        return [m.get("reasoning_content") for m in messages if m["role"] == "assistant"]

    with_tools, without, plain = (r.body["messages"] for r in fake.requests)
    # With tools (English guide): every assistant turn, "" where the model sent nothing.
    assert passed_back(with_tools) == ["A greeting.", "", ""]
    # Without (Chinese guide): the user turn that called tools, its answer included; not the
    # greeting, whose reasoning DeepSeek ignores.
    assert passed_back(without) == [None, "", ""]
    assert "reasoning_content" not in without[1]
    assert passed_back(plain) == [None, None, None]  # a model that does not think: never
    assert [e.refused for e in fake.exchanges] == [None, None, None]


async def test_repair_mode_sends_a_history_deepseek_accepts(
    fake: FakeModelServer, make_client: MakeClient
) -> None:
    fake.script(reply("ok"))
    history = valid_history()
    history[2] = AssistantMessage(tool_calls=(A, B))
    del history[4]
    history.insert(1, ToolMessage("ghost", "orphan"))

    await make_client().complete(
        ChatRequest("test-thinker", history, tools=[LOOKUP], history="repair")
    )

    sent = fake.requests[0].body["messages"]
    assert [m["role"] for m in sent] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "user",
    ]
    assert sent[2]["reasoning_content"] == ""  # passed back as the model sent it: none
    assert [(m["tool_call_id"], m["content"]) for m in sent[3:5]] == [
        ("call_a", "result a"),
        ("call_b", UNANSWERED_RESULT),
    ]


async def test_reasoning_sent_as_reasoning_is_read_and_passed_back_as_reasoning_content(
    fake: FakeModelServer, make_client: MakeClient
) -> None:
    """OpenRouter and newer vLLM name the field `reasoning`: read as DeepSeek's, sent back as
    DeepSeek's, in a stream and in a plain reply."""
    call = ToolCall.of("c1", "lookup", q="a")
    looked = reply(tool_call("lookup", q="a").with_id("c1"), reasoning="Look.")
    said = reply("plain", reasoning="Said.")
    fake.script(looked.reasoning_named("reasoning"), said.reasoning_named("reasoning"), reply("ok"))
    client = make_client()
    asked: list[Message] = [UserMessage("a?")]

    streamed = await client.complete(ChatRequest("test-thinker", asked, tools=[LOOKUP]))
    plain = await client.complete(ChatRequest("test-thinker", asked, stream=False))
    history = [*asked, streamed.message, ToolMessage.answering(call, "found")]
    await client.complete(ChatRequest("test-thinker", history, tools=[LOOKUP]))

    assert streamed.message.reasoning_content == "Look."
    assert plain.message.reasoning_content == "Said."
    assert fake.requests[-1].messages[1]["reasoning_content"] == "Look."
