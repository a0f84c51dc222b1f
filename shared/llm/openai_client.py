"""`OpenAIClient`: the `LLMClient` for any OpenAI-compatible chat-completions endpoint.

DeepSeek by default; OpenAI, Ollama, vLLM, OpenRouter and Parley's fake server work the same.
The `openai` package is imported on the first call, not when this module is imported.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from contextlib import aclosing
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from shared.llm.assembly import ReplyAssembler
from shared.llm.client import (
    CallTool,
    ChatRequest,
    Completed,
    Completion,
    FinishReason,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallReady,
    collect,
)
from shared.llm.errors import (
    LLMAuthenticationFailed,
    LLMBadRequest,
    LLMError,
    LLMNotConfigured,
    LLMOutOfBalance,
)
from shared.llm.history_checks import check_history, repair_history
from shared.llm.messages import Message, to_wire
from shared.llm.model_registry import ModelInfo, ModelRegistry, load_registry
from shared.llm.pricing import TokenCounts
from shared.llm.retry import RetryPolicy

if TYPE_CHECKING:
    from openai import AsyncOpenAI

    from shared.kernel.settings import Settings
    from shared.llm._openai_wire import Outcome

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.deepseek.com"
KEYLESS_PLACEHOLDER = "no-key-needed"
"""Sent as the bearer token to keyless local servers (the openai package insists on one)."""

Sleep = Callable[[float], Awaitable[None]]


class OpenAIClient:
    """Streams chat completions with tool calls, usage, cost, retries and history checks."""

    def __init__(
        self,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        registry: ModelRegistry | None = None,
        sleep: Sleep = asyncio.sleep,
        now: Callable[[], float] = time.time,
    ) -> None:
        """`timeout` bounds each wait on the network (connecting, the first byte, every gap
        between streamed chunks), not a whole reply: an answer that keeps streaming is not cut.
        `sleep` and `now` are seams for tests: they see every backoff without waiting, and
        `now` is also the clock a reply is priced by (peak or off-peak, per the registry)."""
        self.base_url = base_url.rstrip("/")
        self._api_key = resolve_api_key(self.base_url, api_key)
        self._timeout = timeout
        self.retry = retry or RetryPolicy()
        self.registry = registry or load_registry()
        self._sleep = sleep
        self._now = now
        self._openai: AsyncOpenAI | None = None

    @classmethod
    def from_settings(cls, settings: Settings, **seams: Any) -> OpenAIClient:
        """The client the settings describe."""
        key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
        retry = RetryPolicy(
            max_retries=settings.llm_max_retries,
            base_delay=settings.llm_retry_base_delay_seconds,
            max_delay=settings.llm_retry_max_delay_seconds,
        )
        return cls(
            base_url=settings.llm_base_url or DEFAULT_BASE_URL,
            api_key=key,
            timeout=settings.llm_timeout_seconds,
            retry=retry,
            registry=load_registry(settings.llm_models_file),
            **seams,
        )

    async def aclose(self) -> None:
        if self._openai is not None:
            await self._openai.close()
            self._openai = None

    async def __aenter__(self) -> OpenAIClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def complete(self, request: ChatRequest) -> Completion:
        """The whole reply (streamed underneath unless `request.stream` is False)."""
        return await collect(self.stream(request))

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """Deltas as they arrive, then each assembled tool call, then `Completed`.

        The history is checked (or repaired, per `request.history`) before anything is sent.
        Failed attempts are retried with backoff only while nothing has been yielded yet: once a
        delta reached the caller, a failure is raised rather than replayed, so the caller never
        sees text twice. A failure therefore surfaces as an `LLMError` with `attempts` set.
        """
        info = self.registry.lookup(request.model)
        body = self._body(request, info)
        for attempt in range(1, self.retry.attempts + 1):
            yielded = False
            try:
                async with aclosing(self._attempt(request, body, attempt)) as events:
                    async for event in events:
                        yielded = True
                        yield event
                return
            except LLMError as exc:
                exc.attempts = attempt
                if isinstance(exc, LLMAuthenticationFailed | LLMOutOfBalance):
                    log.error("LLM call to %s refused: %s", request.model, exc)  # the operator's
                if yielded or not exc.retryable or attempt == self.retry.attempts:
                    raise
                delay = self.retry.delay(attempt, retry_after=getattr(exc, "retry_after", None))
                log.warning(
                    "LLM call to %s failed (%s, attempt %d of %d); retrying in %.2f s",
                    *(request.model, type(exc).__name__, attempt, self.retry.attempts, delay),
                )
                await self._sleep(delay)

    def _body(self, request: ChatRequest, info: ModelInfo) -> dict[str, Any]:
        thinking = info.thinking if request.thinking is None else request.thinking
        messages = self._checked_history(request)
        if request.tools and not info.supports_tools:
            raise LLMBadRequest(
                f"{request.model} does not support tool calls (model registry)", model=request.model
            )
        body: dict[str, Any] = {
            "model": request.model,
            "messages": to_wire(messages, thinking=thinking, tools=bool(request.tools)),
        }
        if request.tools:
            body["tools"] = [tool.to_wire() for tool in request.tools]
            choice = request.tool_choice
            body["tool_choice"] = (
                {"type": "function", "function": {"name": choice.name}}
                if isinstance(choice, CallTool)
                else choice
            )
            if request.parallel_tool_calls is not None:
                body["parallel_tool_calls"] = request.parallel_tool_calls
        if request.max_tokens is not None:
            body["max_tokens"] = request.max_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        extra = dict(request.extra_body or {})
        if request.thinking is not None and info.thinking_toggle:
            extra.setdefault("thinking", {"type": "enabled" if request.thinking else "disabled"})
        if extra:
            body["extra_body"] = extra
        return body

    def _checked_history(self, request: ChatRequest) -> Sequence[Message]:
        if request.history == "repair":
            return repair_history(request.messages)
        check_history(request.messages, model=request.model)
        return request.messages

    async def _attempt(
        self, request: ChatRequest, body: dict[str, Any], attempt: int
    ) -> AsyncGenerator[StreamEvent, None]:
        from shared.llm import _openai_wire as wire  # openai: ~1 s

        assembler = ReplyAssembler()
        outcome = wire.Outcome(model=request.model)
        try:
            if request.stream:
                async with aclosing(
                    wire.stream_reply(self._client(), body, assembler, outcome)
                ) as deltas:
                    async for kind, piece in deltas:
                        yield TextDelta(piece) if kind == "text" else ReasoningDelta(piece)
            else:
                await wire.plain_reply(self._client(), body, assembler, outcome)
        except Exception as exc:
            mapped = wire.map_error(exc, model=request.model, now=self._now)
            if mapped is None:
                raise
            raise mapped from exc
        if not request.stream:
            if assembler.reasoning:
                yield ReasoningDelta(assembler.reasoning)
            if assembler.text:
                yield TextDelta(assembler.text)
        async for event in self._finish(request, assembler, outcome, attempt):
            yield event

    async def _finish(
        self, request: ChatRequest, assembler: ReplyAssembler, outcome: Outcome, attempt: int
    ) -> AsyncIterator[StreamEvent]:
        calls = assembler.tool_calls()
        for call in calls:
            yield ToolCallReady(call)
        info = self.registry.lookup(request.model)
        tokens = outcome.tokens or TokenCounts()
        finished = datetime.fromtimestamp(self._now(), UTC)  # priced at the hour it finished
        yield Completed(
            Completion(
                message=assembler.message(calls),
                finish_reason=_finish_reason(assembler.finish_reason),
                usage=info.usage(tokens, at=finished),
                tokens=tokens,
                model=outcome.model,
                cost_known=info.price is not None,
                usage_reported=outcome.tokens is not None,
                attempts=attempt,
            )
        )

    def _client(self) -> AsyncOpenAI:
        if self._openai is None:
            from shared.llm._openai_wire import build_client  # openai: ~1 s

            self._openai = build_client(
                base_url=self.base_url, api_key=self._api_key, timeout=self._timeout
            )
        return self._openai


def _finish_reason(raw: str | None) -> FinishReason:
    if raw in ("stop", "length", "tool_calls", "content_filter"):
        return raw  # type: ignore[return-value]
    return "other"


def resolve_api_key(base_url: str, api_key: str | None) -> str:
    """The key to send, or `LLMNotConfigured` saying exactly what to set.

    Keyless servers: when no key is set and `base_url` is on this machine or a private network
    (Ollama, vLLM, llama.cpp, Parley's demo model), a placeholder key is sent. A keyless server
    elsewhere accepts any `LLM_API_KEY` value. Public endpoints without a key are refused here,
    before any request.
    """
    if api_key:
        return api_key
    if _is_local(base_url):
        return KEYLESS_PLACEHOLDER
    raise LLMNotConfigured(
        f"No API key for the model endpoint {base_url}. Set DEEPSEEK_API_KEY (or LLM_API_KEY) to "
        "your key, or set LLM_BASE_URL to an OpenAI-compatible server that needs none, such as "
        "Ollama at http://localhost:11434/v1 (a keyless server on a public address takes any "
        "LLM_API_KEY value)."
    )


def _is_local(base_url: str) -> bool:
    host = (urlsplit(base_url).hostname or "").lower()
    if host == "localhost" or host.endswith((".localhost", ".local", ".internal")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_unspecified
