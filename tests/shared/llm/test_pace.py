"""The twin's streaming pace: one token a chunk at the model's speed, counted on a fake clock.

Nothing here is timed: the pace's clock and sleep are a fake that records every wait and moves
its own time on, so a stream's duration is arithmetic on the tokens it sent.
"""

from __future__ import annotations

import argparse
import json

import httpx

from local.deepseek import DEEPSEEK_TOKENS_PER_SECOND, FakeModel, Pace, reply, tool_call
from local.stack import _model_pace
from shared.llm.tokens import DeepSeekTokenizer

ANSWER = "Hello there, friend! How are you today? The weather is fine."
BODY = {
    "model": "deepseek-v4-pro",
    "messages": [{"role": "user", "content": "hi"}],
    "stream": True,
    "thinking": {"type": "disabled"},
}


class FakeClock:
    """A clock that only moves when the pace sleeps on it."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


async def stream(model: FakeModel, body: dict[str, object]) -> list[dict[str, str | None]]:
    """The deltas of one streamed reply, through the twin's ASGI app."""
    transport = httpx.ASGITransport(app=model.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://twin") as http:
        response = await http.post("/v1/chat/completions", json=body)
    payloads = [p.removeprefix("data: ") for p in response.text.split("\n\n") if p]
    assert payloads[-1] == "[DONE]"
    return [json.loads(p)["choices"][0]["delta"] for p in payloads[:-1] if json.loads(p)["choices"]]


async def test_a_paced_reply_streams_one_token_a_chunk_at_the_models_speed(
    tokenizer: DeepSeekTokenizer,
) -> None:
    time = FakeClock()
    model = FakeModel(tokenizer=tokenizer, pace=Pace(60.0, clock=time.clock, sleep=time.sleep))
    model.script(reply(ANSWER))

    deltas = await stream(model, BODY)

    texts = [d["content"] for d in deltas if d.get("content")]
    tokens = tokenizer.count(ANSWER)
    assert texts == tokenizer.pieces(ANSWER) and len(texts) == tokens > 10
    assert len(time.sleeps) == tokens  # one wait a token: each chunk leaves when it is written
    assert abs(time.now - tokens / 60.0) < 1e-9  # n tokens take n / 60 seconds


async def test_reasoning_and_tool_arguments_take_the_models_time_too(
    tokenizer: DeepSeekTokenizer,
) -> None:
    time = FakeClock()
    model = FakeModel(tokenizer=tokenizer, pace=Pace(50.0, clock=time.clock, sleep=time.sleep))
    thought = "First I list the tasks, then I answer."
    call = tool_call("list_tasks", status=["backlog", "doing"]).in_pieces(3)
    model.script(reply("Checking.", call, reasoning=thought))

    deltas = await stream(model, {**BODY, "thinking": {"type": "enabled"}})

    arguments = sum(tokenizer.count(fragment) for fragment in call.fragments())  # as streamed
    written = tokenizer.count(thought) + tokenizer.count("Checking.") + arguments
    reasoning = [str(d["reasoning_content"]) for d in deltas if d.get("reasoning_content")]
    assert "".join(reasoning) == thought and len(reasoning) == tokenizer.count(thought)
    assert abs(time.now - written / 50.0) < 1e-9


async def test_unpaced_the_twin_streams_each_scripted_piece_at_once(
    tokenizer: DeepSeekTokenizer,
) -> None:
    time = FakeClock()
    model = FakeModel(tokenizer=tokenizer, pace=Pace(0.0, clock=time.clock, sleep=time.sleep))
    model.script(reply("Hello there, ", "friend!"))

    deltas = await stream(model, BODY)

    assert [d["content"] for d in deltas if d.get("content")] == ["Hello there, ", "friend!"]
    assert time.sleeps == [] and time.now == 0.0


def test_the_local_stack_streams_at_deepseeks_speed_unless_told_otherwise() -> None:
    def pace(**given: object) -> float:
        values: dict[str, object] = {"once": False, "model_tokens_per_second": None, **given}
        return _model_pace(argparse.Namespace(**values))

    assert pace() == DEEPSEEK_TOKENS_PER_SECOND == 60.0
    assert pace(once=True) == 0.0  # a scripted demo turn runs at once
    assert pace(model_tokens_per_second=25.0) == 25.0
