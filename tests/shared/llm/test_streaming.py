"""Replies assembled from the fake server's stream (and plain replies) over real HTTP."""

from __future__ import annotations

from decimal import Decimal

import pytest
from pydantic import BaseModel

from local.deepseek import FakeModelServer, raw_tool_call, reply, tool_call, usage
from shared.kernel.usage import Usage
from shared.llm import (
    AssistantMessage,
    CallTool,
    ChatRequest,
    Completed,
    Completion,
    Message,
    ReasoningDelta,
    StreamEvent,
    SystemMessage,
    TextDelta,
    ToolCall,
    ToolCallReady,
    ToolMessage,
    ToolSchema,
    UnexpectedReply,
    UserMessage,
    call_tool,
)
from tests.shared.llm.conftest import MakeClient

SEARCH = ToolSchema(
    "search_notes",
    "Search the user's notes",
    {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
)
TASKS = ToolSchema(
    "list_tasks",
    "List the user's tasks",
    {"type": "object", "properties": {"status": {"type": "string"}, "limit": {"type": "integer"}}},
)


def two_calls_reply(*, interleave: bool = False):
    return reply(
        "Let me ",
        "look that up.",
        tool_call("search_notes", query="quarterly report ünïcode").with_id("call_a").in_pieces(4),
        tool_call("list_tasks", status="open", limit=5).with_id("call_b").in_pieces(3),
        usage=usage(1000, 500, cache_hit=600),
        interleave_calls=interleave,
    )


def request(stream: bool = True, **fields) -> ChatRequest:
    messages: list[Message] = [SystemMessage("You are a planner."), UserMessage("Find my report")]
    return ChatRequest("test-model", messages, tools=[SEARCH, TASKS], stream=stream, **fields)


async def events_of(client, req: ChatRequest) -> list[StreamEvent]:
    return [event async for event in client.stream(req)]


EXPECTED_CALLS = (
    ToolCall(
        "call_a",
        "search_notes",
        '{"query": "quarterly report \\u00fcn\\u00efcode"}',
        {"query": "quarterly report ünïcode"},
    ),
    ToolCall(
        "call_b", "list_tasks", '{"status": "open", "limit": 5}', {"status": "open", "limit": 5}
    ),
)
# test-model: cache hit 0.1, miss 1, output 2 USD per 1M → (600*0.1 + 400*1 + 500*2) / 1e6
EXPECTED_USAGE = Usage(1000, 500, 600, Decimal("0.00146"))


@pytest.mark.parametrize("interleave", [False, True], ids=["sequential", "interleaved"])
async def test_streamed_text_and_parallel_tool_calls_are_assembled(
    fake: FakeModelServer, make_client: MakeClient, interleave: bool
) -> None:
    fake.script(two_calls_reply(interleave=interleave))

    events = await events_of(make_client(), request())

    assert events[:2] == [TextDelta("Let me "), TextDelta("look that up.")]
    assert events[2:4] == [ToolCallReady(EXPECTED_CALLS[0]), ToolCallReady(EXPECTED_CALLS[1])]
    assert isinstance(events[4], Completed) and len(events) == 5
    done = events[4].completion
    assert done.message == AssistantMessage("Let me look that up.", EXPECTED_CALLS)
    assert done.finish_reason == "tool_calls"
    assert done.usage == EXPECTED_USAGE
    assert (done.cost_known, done.usage_reported, done.attempts) == (True, True, 1)
    assert done.tokens.cache_misses == 400


async def test_plain_request_gives_the_same_completion(
    fake: FakeModelServer, make_client: MakeClient
) -> None:
    fake.script(two_calls_reply(), two_calls_reply())
    client = make_client()

    streamed = await client.complete(request())
    plain_events = await events_of(client, request(stream=False))

    plain = plain_events[-1]
    assert isinstance(plain, Completed)
    assert _comparable(plain.completion) == _comparable(streamed)
    assert plain_events[0] == TextDelta("Let me look that up.")
    assert [r.streaming for r in fake.requests] == [True, False]
    assert "stream_options" not in fake.requests[1].body


def _comparable(completion: Completion) -> tuple[object, ...]:
    return (completion.message, completion.finish_reason, completion.usage, completion.model)


async def test_request_body_is_what_openai_and_deepseek_expect(
    fake: FakeModelServer, make_client: MakeClient
) -> None:
    fake.script(reply("ok"))

    await make_client().complete(request(tool_choice=CallTool("list_tasks"), max_tokens=50))

    body = fake.requests[0].body
    assert body["model"] == "test-model"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["tool_choice"] == {"type": "function", "function": {"name": "list_tasks"}}
    assert [t["function"]["name"] for t in body["tools"]] == ["search_notes", "list_tasks"]
    assert body["tools"][0]["function"]["parameters"] == SEARCH.parameters
    assert body["max_tokens"] == 50
    assert body["messages"][0] == {"role": "system", "content": "You are a planner."}
    assert fake.requests[0].headers["authorization"] == "[redacted]"


async def test_broken_tool_arguments_are_reported_not_dropped(
    fake: FakeModelServer, make_client: MakeClient
) -> None:
    fake.script(reply(raw_tool_call("search_notes", '{"query": "unterminated').with_id("c1")))

    done = await make_client().complete(request())

    (call,) = done.tool_calls
    assert (call.id, call.name, call.valid, call.arguments) == ("c1", "search_notes", False, {})
    assert call.arguments_json == '{"query": "unterminated'
    assert call.invalid_reason is not None and "not valid JSON" in call.invalid_reason


async def test_thinking_model_streams_reasoning_and_gets_it_back(
    fake: FakeModelServer, make_client: MakeClient
) -> None:
    fake.script(
        reply(tool_call("search_notes", query="q").with_id("c1"), reasoning=["Need ", "notes."]),
        reply("Found it."),
    )
    client = make_client()
    history: list[Message] = [UserMessage("Find notes")]

    first = await events_of(client, ChatRequest("test-thinker", history, tools=[SEARCH]))
    assert first[:2] == [ReasoningDelta("Need "), ReasoningDelta("notes.")]
    turn = first[-1].completion.message  # type: ignore[union-attr]
    assert turn.reasoning_content == "Need notes."
    history += [turn, ToolMessage.answering(turn.tool_calls[0], "3 notes")]
    await client.complete(ChatRequest("test-thinker", history, tools=[SEARCH]))

    sent = fake.requests[1].body["messages"][1]
    assert sent["reasoning_content"] == "Need notes."
    assert sent["tool_calls"][0]["id"] == "c1"
    assert fake.requests[1].body["messages"][2] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "3 notes",
    }


async def test_reasoning_content_is_not_sent_to_non_thinking_models(
    fake: FakeModelServer, make_client: MakeClient
) -> None:
    fake.script(reply("ok"))
    turn = AssistantMessage("Hi", reasoning_content="private thoughts")

    history: list[Message] = [UserMessage("a"), turn, UserMessage("b")]

    await make_client().complete(ChatRequest("test-model", history))

    assert fake.requests[0].body["messages"][1] == {"role": "assistant", "content": "Hi"}


async def test_call_tool_returns_the_forced_tools_arguments(
    fake: FakeModelServer, make_client: MakeClient
) -> None:
    fake.script(reply(tool_call("list_tasks", status="done", limit=2)), reply("I won't."))
    client = make_client()

    result = await call_tool(client, model="test-model", messages=[UserMessage("x")], tool=TASKS)

    assert result.arguments == {"status": "done", "limit": 2}
    assert result.completion.usage.prompt_tokens > 0
    assert fake.requests[0].body["tool_choice"]["function"]["name"] == "list_tasks"
    with pytest.raises(UnexpectedReply, match="did not call 'list_tasks'"):
        await call_tool(client, model="test-model", messages=[UserMessage("x")], tool=TASKS)


async def test_demo_model_labels_itself_and_calls_offered_tools(make_client: MakeClient) -> None:
    client = make_client()
    plan = ToolSchema(
        "create_plan",
        "Write a plan",
        {
            "type": "object",
            "required": ["goal", "steps"],
            "properties": {
                "goal": {"type": "string"},
                "steps": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["description"],
                        "properties": {"description": {"type": "string"}},
                    },
                },
            },
        },
    )

    text = await client.complete(ChatRequest("parley-demo", [UserMessage("Hello")]))
    searched = await client.complete(
        ChatRequest("parley-demo", [UserMessage("search my notes")], tools=[TASKS, SEARCH])
    )
    planned = await call_tool(
        client, model="parley-demo", messages=[UserMessage("Plan a trip")], tool=plan
    )

    assert "Parley's offline demo model" in text.text and "DEEPSEEK_API_KEY" in text.text
    assert text.usage.cost_usd == 0 and text.cost_known
    assert [c.name for c in searched.tool_calls] == ["search_notes"]
    assert searched.tool_calls[0].arguments == {"query": "search my notes"}
    assert planned.arguments == {"goal": "Plan a trip", "steps": [{"description": "Plan a trip"}]}


async def test_demo_model_summarises_tool_results(make_client: MakeClient) -> None:
    call = ToolCall.of("c9", "search_notes", query="x")
    history: list[Message] = [
        UserMessage("search"),
        AssistantMessage(tool_calls=(call,)),
        ToolMessage.answering(call, "Note: buy milk"),
    ]

    done = await make_client().complete(ChatRequest("parley-demo", history, tools=[SEARCH]))

    assert done.tool_calls == () and "Note: buy milk" in done.text


async def test_explicit_thinking_mode_is_sent_only_to_models_with_a_switch(
    fake: FakeModelServer, make_client: MakeClient
) -> None:
    fake.script(reply("a"), reply("b"), reply("c"))
    client = make_client()
    hi: list[Message] = [UserMessage("hi")]

    await client.complete(ChatRequest("deepseek-flash", hi, thinking=False))
    await client.complete(ChatRequest("deepseek-flash", hi))
    await client.complete(ChatRequest("test-model", hi, thinking=True))

    bodies = [r.body for r in fake.requests]
    assert bodies[0]["thinking"] == {"type": "disabled"}
    assert "thinking" not in bodies[1] and "thinking" not in bodies[2]


def test_tool_schema_from_a_pydantic_model() -> None:
    class Step(BaseModel):
        description: str
        depends_on: list[int] = []

    schema = ToolSchema.for_model("add_step", "Add a plan step", Step)

    assert schema.parameters["required"] == ["description"]
    assert schema.to_wire()["function"]["parameters"]["properties"]["depends_on"]["type"] == "array"
