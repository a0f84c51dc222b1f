"""The parts that touch the `openai` package. Imported lazily: `import openai` costs ~1 s.

Only `shared.llm.openai_client` imports this module, and only inside the functions that talk to
the network, so importing `shared.llm` stays cheap for code that never calls a model.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

import openai
from openai import AsyncOpenAI, AsyncStream
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from shared.kernel.tls import http_client_tls_context
from shared.llm.assembly import ReplyAssembler
from shared.llm.errors import (
    LLMAuthenticationFailed,
    LLMBadRequest,
    LLMError,
    LLMOutOfBalance,
    LLMProviderError,
    LLMRateLimited,
    LLMTimeout,
)
from shared.llm.pricing import TokenCounts, parse_usage
from shared.llm.retry import parse_retry_after

COMPLETIONS = "/chat/completions"
"""Requested through the client's `post`: the body is Parley's own JSON already, and the
`chat.completions.create` wrapper would walk all of it (tool schemas included) to transform
values it does not hold — 2–3 ms of CPU on every call. Replies are parsed into openai's
types as `create` would."""


def build_client(*, base_url: str, api_key: str, timeout: float) -> AsyncOpenAI:
    """An AsyncOpenAI with its own retries off: `OpenAIClient` runs the one retry policy.
    Its TLS settings are the HTTP client's own defaults (`SSL_CERT_FILE` / `SSL_CERT_DIR`, the
    platform's trust store on macOS and Windows), not the standard library's: the context every
    httpx2 client of the process shares (`shared.kernel.tls.http_client_tls_context`), which the
    planner and executor functions build at init (`load_agent_core`)."""

    http = openai.DefaultAsyncHttpxClient(verify=http_client_tls_context(), timeout=timeout)
    return AsyncOpenAI(
        base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0, http_client=http
    )


@dataclass(slots=True)
class Outcome:
    """What a finished attempt reports besides the deltas it yielded."""

    model: str
    tokens: TokenCounts | None = None


Delta = tuple[str, str]
"""("text" | "reasoning", piece)."""


async def stream_reply(
    client: AsyncOpenAI, body: Mapping[str, Any], assembler: ReplyAssembler, outcome: Outcome
) -> AsyncGenerator[Delta, None]:
    """Send a streamed request; yield deltas, feed `assembler`, fill `outcome`."""
    stream = await client.post(
        COMPLETIONS,
        body={**_json(body), "stream": True, "stream_options": {"include_usage": True}},
        cast_to=ChatCompletion,
        stream=True,
        stream_cls=AsyncStream[ChatCompletionChunk],
    )
    try:
        async for chunk in stream:
            for delta in _read_chunk(chunk, assembler, outcome):
                yield delta
    except ValueError as exc:  # a `data:` line that is not JSON
        raise LLMProviderError(f"malformed stream from the model server: {exc}") from exc
    finally:
        await stream.close()
    if assembler.finish_reason is None:
        raise LLMProviderError(
            "the model's stream ended before it finished (no finish_reason): "
            "the connection was closed early"
        )


def _read_chunk(
    chunk: ChatCompletionChunk, assembler: ReplyAssembler, outcome: Outcome
) -> list[Delta]:
    deltas: list[Delta] = []
    outcome.model = chunk.model or outcome.model
    if chunk.usage is not None:
        outcome.tokens = parse_usage(chunk.usage)
    for choice in chunk.choices or ():
        if choice.index != 0:
            continue
        delta = choice.delta
        if reasoning := _reasoning_of(delta):
            assembler.add_reasoning(reasoning)
            deltas.append(("reasoning", reasoning))
        if delta.content:
            assembler.add_text(delta.content)
            deltas.append(("text", delta.content))
        for call in delta.tool_calls or ():
            function = call.function
            assembler.add_tool_call(
                call.index,
                id=call.id,
                name=function.name if function else None,
                arguments=function.arguments if function else None,
            )
        if choice.finish_reason:
            assembler.finish_reason = choice.finish_reason
    return deltas


async def plain_reply(
    client: AsyncOpenAI, body: Mapping[str, Any], assembler: ReplyAssembler, outcome: Outcome
) -> None:
    """Send a non-streamed request and feed the whole reply to `assembler`."""
    try:
        reply = await client.post(
            COMPLETIONS, body={**_json(body), "stream": False}, cast_to=ChatCompletion
        )
    except ValueError as exc:
        raise LLMProviderError(f"malformed reply from the model server: {exc}") from exc
    if not reply.choices:
        raise LLMProviderError("the model server replied with no choices")
    outcome.model = reply.model or outcome.model
    if reply.usage is not None:
        outcome.tokens = parse_usage(reply.usage)
    choice = reply.choices[0]
    message = choice.message
    if reasoning := _reasoning_of(message):
        assembler.add_reasoning(reasoning)
    if message.content:
        assembler.add_text(message.content)
    for index, call in enumerate(message.tool_calls or ()):
        function = getattr(call, "function", None)
        assembler.add_tool_call(
            index,
            id=call.id,
            name=getattr(function, "name", None),
            arguments=getattr(function, "arguments", None),
        )
    assembler.finish_reason = getattr(choice, "finish_reason", None) or "stop"


def _reasoning_of(delta: object) -> str | None:
    # DeepSeek and vLLM say `reasoning_content`; OpenRouter and newer vLLM say `reasoning`.
    for key in ("reasoning_content", "reasoning"):
        value = getattr(delta, key, None)
        if isinstance(value, str) and value:
            return value
    return None


def _json(body: Mapping[str, Any]) -> dict[str, Any]:
    """The request's JSON: `extra_body` (provider fields such as DeepSeek's `thinking`)
    merged in, as `create` would."""
    sent = {key: value for key, value in body.items() if key != "extra_body"}
    return {**sent, **body.get("extra_body", {})}


def map_error(exc: Exception, *, model: str, now: Callable[[], float]) -> LLMError | None:
    """Parley's error for an openai exception (None when it is not one of openai's)."""
    if isinstance(exc, openai.APITimeoutError):
        return LLMTimeout(f"{model}: no reply within the timeout ({exc})", model=model)
    if isinstance(exc, openai.APIConnectionError):
        return LLMProviderError(f"{model}: cannot reach the model server ({exc})", model=model)
    if isinstance(exc, openai.APIStatusError):
        return _status_error(exc, model=model, now=now)
    if isinstance(exc, openai.APIError):  # an error event inside a stream
        return LLMProviderError(f"{model}: the model server reported: {exc.message}", model=model)
    if isinstance(exc, openai.OpenAIError):
        return LLMProviderError(f"{model}: {exc}", model=model)
    return None


def _status_error(exc: openai.APIStatusError, *, model: str, now: Callable[[], float]) -> LLMError:
    status = exc.status_code
    detail = f"{model}: HTTP {status} from the model server: {_message(exc)}"
    if status in (401, 403):
        return LLMAuthenticationFailed(
            f"{detail}. Check DEEPSEEK_API_KEY / LLM_API_KEY for LLM_BASE_URL.",
            model=model,
            status_code=status,
        )
    if status == 402:
        return LLMOutOfBalance(
            f"{detail}. The account of the key in DEEPSEEK_API_KEY / LLM_API_KEY has no "
            "balance left: top it up with the provider.",
            model=model,
            status_code=status,
        )
    if status == 429:
        retry_after = parse_retry_after(exc.response.headers, now=now)
        return LLMRateLimited(detail, retry_after=retry_after, model=model)
    if status in (408, 409) or status >= 500:
        return LLMProviderError(detail, model=model, status_code=status)
    return LLMBadRequest(detail, model=model, status_code=status)


def _message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping) and isinstance(error.get("message"), str):
            return cast(str, error["message"])
    if isinstance(body, str) and body:
        return body[:500]
    return json.dumps(body)[:500] if body is not None else exc.message
