"""Retries, timeouts and broken streams, against the fake server's fault injection."""

from __future__ import annotations

import socket
from email.utils import formatdate

import openai
import pytest

from local.deepseek import FakeModelServer, error, rate_limited, reply
from shared.llm import (
    ChatRequest,
    LLMAuthenticationFailed,
    LLMBadRequest,
    LLMProviderError,
    LLMRateLimited,
    LLMTimeout,
    OpenAIClient,
    RetryPolicy,
    TextDelta,
    UserMessage,
)
from tests.shared.llm.conftest import MakeClient, RecordedSleeps

HELLO = ChatRequest("test-model", [UserMessage("Hello")])
NOW = 1_800_000_000.0


async def test_429_then_success_waits_as_retry_after_says(
    fake: FakeModelServer, make_client: MakeClient, sleeps: RecordedSleeps
) -> None:
    fake.script(rate_limited(retry_after=7), reply("Hi"))

    done = await make_client().complete(HELLO)

    assert done.text == "Hi" and done.attempts == 2
    assert sleeps.delays == [7.0]
    assert len(fake.requests) == 2


async def test_retry_after_as_http_date_and_capped(
    fake: FakeModelServer, make_client: MakeClient, sleeps: RecordedSleeps
) -> None:
    in_12_s = formatdate(NOW + 12, usegmt=True)
    fake.script(rate_limited(retry_after=in_12_s), rate_limited(retry_after=3600), reply("Hi"))

    await make_client(now=lambda: NOW).complete(HELLO)

    assert sleeps.delays == [12.0, 30.0]  # the second is capped at max_delay


async def test_rate_limit_that_persists_raises_with_retry_after(
    fake: FakeModelServer, make_client: MakeClient, sleeps: RecordedSleeps
) -> None:
    fake.script(*[rate_limited(retry_after=1)] * 3)

    with pytest.raises(LLMRateLimited) as caught:
        await make_client(max_retries=2).complete(HELLO)

    assert (caught.value.retry_after, caught.value.attempts, caught.value.status_code) == (
        1,
        3,
        429,
    )
    assert isinstance(caught.value.__cause__, openai.RateLimitError)


async def test_persistent_500_raises_after_the_configured_attempts(
    fake: FakeModelServer, make_client: MakeClient, sleeps: RecordedSleeps
) -> None:
    fake.script(*[error(500, "boom")] * 5)

    with pytest.raises(LLMProviderError, match=r"HTTP 500.*boom") as caught:
        await make_client(max_retries=2).complete(HELLO)

    assert len(fake.requests) == 3 and caught.value.attempts == 3
    assert fake.pending == 2
    # full jitter: uniform below 0.5 s, then below 1 s
    assert len(sleeps.delays) == 2
    assert 0 <= sleeps.delays[0] <= 0.5 and 0 <= sleeps.delays[1] <= 1.0
    assert isinstance(caught.value.__cause__, openai.InternalServerError)


@pytest.mark.parametrize(
    ("status", "raised"),
    [
        (401, LLMAuthenticationFailed),
        (403, LLMAuthenticationFailed),
        (400, LLMBadRequest),
        (404, LLMBadRequest),
        (422, LLMBadRequest),
    ],
)
async def test_client_errors_are_not_retried(
    fake: FakeModelServer,
    make_client: MakeClient,
    sleeps: RecordedSleeps,
    status: int,
    raised: type[Exception],
) -> None:
    fake.script(error(status, "nope"), reply("never reached"))

    with pytest.raises(raised, match=f"HTTP {status}") as caught:
        await make_client().complete(HELLO)

    assert len(fake.requests) == 1 and sleeps.delays == []
    assert getattr(caught.value, "status_code", None) == status


async def test_authentication_error_says_what_to_check(
    fake: FakeModelServer, make_client: MakeClient
) -> None:
    fake.script(error(401, "Authentication Fails, Your api key is invalid"))

    with pytest.raises(LLMAuthenticationFailed, match="DEEPSEEK_API_KEY / LLM_API_KEY"):
        await make_client().complete(HELLO)


async def test_a_silent_server_times_out_after_each_attempt(
    fake: FakeModelServer, make_client: MakeClient, sleeps: RecordedSleeps
) -> None:
    fake.script(reply("late").stalled(), reply("late").stalled())

    with pytest.raises(LLMTimeout) as caught:
        await make_client(max_retries=1, timeout=0.2).complete(HELLO)

    assert len(fake.requests) == 2 and caught.value.attempts == 2
    assert len(sleeps.delays) == 1
    assert isinstance(caught.value.__cause__, openai.APITimeoutError)


async def test_failure_after_text_was_yielded_is_not_retried(
    fake: FakeModelServer, make_client: MakeClient, sleeps: RecordedSleeps
) -> None:
    fake.script(reply("one ", "two ", "three").stalled(after=3), reply("retried"))
    received: list[object] = []

    with pytest.raises(LLMTimeout) as caught:
        # 0.5 s: generous enough that a busy CI box still delivers the first chunks in time
        async for event in make_client(max_retries=3, timeout=0.5).stream(HELLO):
            received.append(event)

    assert received == [TextDelta("one "), TextDelta("two ")]
    assert len(fake.requests) == 1 and caught.value.attempts == 1 and sleeps.delays == []


async def test_truncated_stream_is_a_provider_error(
    fake: FakeModelServer, make_client: MakeClient
) -> None:
    fake.script(reply("partial ", "answer").truncated(after=2))
    received: list[object] = []

    with pytest.raises(LLMProviderError, match="ended before it finished"):
        async for event in make_client(max_retries=0).stream(HELLO):
            received.append(event)

    assert received == [TextDelta("partial ")]


async def test_stream_cut_before_any_content_is_retried(
    fake: FakeModelServer, make_client: MakeClient, sleeps: RecordedSleeps
) -> None:
    fake.script(reply("lost").truncated(after=1), reply("second try"))

    done = await make_client().complete(HELLO)

    assert done.text == "second try" and done.attempts == 2 and len(sleeps.delays) == 1


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "plain"])
async def test_malformed_reply_is_a_provider_error(
    fake: FakeModelServer, make_client: MakeClient, stream: bool
) -> None:
    fake.script(reply("a", "b").malformed(after=2))

    with pytest.raises(LLMProviderError, match="malformed"):
        await make_client(max_retries=0).complete(
            ChatRequest("test-model", [UserMessage("Hello")], stream=stream)
        )


async def test_unreachable_server_is_retried_then_a_provider_error(
    sleeps: RecordedSleeps,
) -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = OpenAIClient(
        base_url=f"http://127.0.0.1:{port}/v1", api_key=None, sleep=sleeps, retry=RetryPolicy()
    )

    with pytest.raises(LLMProviderError, match="cannot reach") as caught:
        await client.complete(HELLO)
    await client.aclose()

    assert caught.value.attempts == 4 and len(sleeps.delays) == 3
