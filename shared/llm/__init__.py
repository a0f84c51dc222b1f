"""Talking to models: one client for any OpenAI-compatible endpoint (DeepSeek by default).

Build a client once per cold start and pass typed messages:

    client = OpenAIClient.from_settings(settings)  # LLM_BASE_URL, DEEPSEEK_API_KEY / LLM_API_KEY
    request = ChatRequest("deepseek-v4-pro", [SystemMessage("..."), UserMessage("Hi")], tools=[
        ToolSchema("search_notes", "Search the user's notes", {"type": "object", ...}),
    ])
    async for event in client.stream(request):     # streaming is the default
        match event:
            case TextDelta(text=text): ...         # answer text as it arrives
            case ReasoningDelta(text=text): ...    # thinking models' reasoning_content
            case ToolCallReady(call=call): ...     # whole call; `call.valid` False = broken JSON
            case Completed(completion=done): ...   # done.message, done.finish_reason, done.usage

    completion = await client.complete(request)   # the same, all at once
    plan = await call_tool(client, model=..., messages=..., tool=create_plan_schema)
    plan.arguments                                 # the forced tool's parsed arguments
                                                   # (sent with thinking off: DeepSeek's rule)

- `Completion.usage` is a `shared.db.records.Usage` (prompt, completion and cache-hit tokens,
  `cost_usd` as an exact Decimal priced by the model registry), ready to store.
- Histories: `AssistantMessage(tool_calls=..., reasoning_content=...)` then one `ToolMessage`
  per call (`ToolMessage.answering(call, result)`). Before each request the pairing of calls
  and results is checked (`ChatRequest.history="strict"` raises `InvalidHistory`, sending
  nothing) or repaired (`"repair"`); see `shared.llm.history_checks`. In thinking mode, a request
  with tools passes every assistant turn's `reasoning_content` back (an empty string where the
  model sent none), and one without tools passes it for the user turns that made tool calls
  (`messages.passes_reasoning`, docs/deepseek.md).
- Errors: 402 is `LLMOutOfBalance`, 401/403 `LLMAuthenticationFailed` (a configuration error):
  both logged for the operator, never retried.
- Models: `models.toml` matches names by regex, general to specific (`load_registry().lookup`);
  `LLM_MODELS_FILE` adds entries. A call is priced by the hour it finished (peak / off-peak
  rates and schedules are registry data). Unknown models work, priced at 0 with
  `cost_known=False`. Token counts: `shared.llm.tokens` (DeepSeek's tokenizer).
- Failures are `LLMError`s (`shared.llm.errors`). 429, 5xx, connection errors and timeouts are
  retried with exponential backoff and full jitter (Retry-After honoured, capped), but only
  before anything was yielded; `LLM_MAX_RETRIES` retries in all.
- Keyless servers: with no key and an `LLM_BASE_URL` on this machine or a private network
  (Ollama, vLLM, the demo model), a placeholder key is sent; public endpoints need a key.
- `openai` is imported on the first request, not by importing this package (~1 s saved).
- Offline: `local.deepseek` is DeepSeek's local twin, held to DeepSeek's request contract
  (tests, the demo model; never deployed).
"""

from typing import TYPE_CHECKING

from shared.kernel.lazy import lazy_exports

if TYPE_CHECKING:
    from shared.llm.client import (
        CallTool as CallTool,
    )
    from shared.llm.client import (
        ChatRequest as ChatRequest,
    )
    from shared.llm.client import (
        Completed as Completed,
    )
    from shared.llm.client import (
        Completion as Completion,
    )
    from shared.llm.client import (
        FinishReason as FinishReason,
    )
    from shared.llm.client import (
        HistoryMode as HistoryMode,
    )
    from shared.llm.client import (
        LLMClient as LLMClient,
    )
    from shared.llm.client import (
        ReasoningDelta as ReasoningDelta,
    )
    from shared.llm.client import (
        StreamEvent as StreamEvent,
    )
    from shared.llm.client import (
        TextDelta as TextDelta,
    )
    from shared.llm.client import (
        ToolCallReady as ToolCallReady,
    )
    from shared.llm.client import (
        ToolCallResult as ToolCallResult,
    )
    from shared.llm.client import (
        ToolChoice as ToolChoice,
    )
    from shared.llm.client import (
        ToolSchema as ToolSchema,
    )
    from shared.llm.client import (
        call_tool as call_tool,
    )
    from shared.llm.client import (
        collect as collect,
    )
    from shared.llm.errors import (
        InvalidHistory as InvalidHistory,
    )
    from shared.llm.errors import (
        LLMAuthenticationFailed as LLMAuthenticationFailed,
    )
    from shared.llm.errors import (
        LLMBadRequest as LLMBadRequest,
    )
    from shared.llm.errors import (
        LLMError as LLMError,
    )
    from shared.llm.errors import (
        LLMNotConfigured as LLMNotConfigured,
    )
    from shared.llm.errors import (
        LLMOutOfBalance as LLMOutOfBalance,
    )
    from shared.llm.errors import (
        LLMProviderError as LLMProviderError,
    )
    from shared.llm.errors import (
        LLMRateLimited as LLMRateLimited,
    )
    from shared.llm.errors import (
        LLMTimeout as LLMTimeout,
    )
    from shared.llm.errors import (
        UnexpectedReply as UnexpectedReply,
    )
    from shared.llm.history_checks import (
        HistoryProblem as HistoryProblem,
    )
    from shared.llm.history_checks import (
        check_history as check_history,
    )
    from shared.llm.history_checks import (
        find_problems as find_problems,
    )
    from shared.llm.history_checks import (
        repair_history as repair_history,
    )
    from shared.llm.messages import (
        AssistantMessage as AssistantMessage,
    )
    from shared.llm.messages import (
        Message as Message,
    )
    from shared.llm.messages import (
        SystemMessage as SystemMessage,
    )
    from shared.llm.messages import (
        ToolCall as ToolCall,
    )
    from shared.llm.messages import (
        ToolMessage as ToolMessage,
    )
    from shared.llm.messages import (
        UserMessage as UserMessage,
    )
    from shared.llm.model_registry import (
        ModelInfo as ModelInfo,
    )
    from shared.llm.model_registry import (
        ModelRegistry as ModelRegistry,
    )
    from shared.llm.model_registry import (
        load_registry as load_registry,
    )
    from shared.llm.openai_client import (
        OpenAIClient as OpenAIClient,
    )
    from shared.llm.pricing import (
        Price as Price,
    )
    from shared.llm.pricing import (
        TokenCounts as TokenCounts,
    )
    from shared.llm.retry import (
        RetryPolicy as RetryPolicy,
    )

__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "shared.llm.client": (
            "CallTool",
            "ChatRequest",
            "Completed",
            "Completion",
            "FinishReason",
            "HistoryMode",
            "LLMClient",
            "ReasoningDelta",
            "StreamEvent",
            "TextDelta",
            "ToolCallReady",
            "ToolCallResult",
            "ToolChoice",
            "ToolSchema",
            "call_tool",
            "collect",
        ),
        "shared.llm.errors": (
            "InvalidHistory",
            "LLMAuthenticationFailed",
            "LLMBadRequest",
            "LLMError",
            "LLMNotConfigured",
            "LLMOutOfBalance",
            "LLMProviderError",
            "LLMRateLimited",
            "LLMTimeout",
            "UnexpectedReply",
        ),
        "shared.llm.history_checks": (
            "HistoryProblem",
            "check_history",
            "find_problems",
            "repair_history",
        ),
        "shared.llm.messages": (
            "AssistantMessage",
            "Message",
            "SystemMessage",
            "ToolCall",
            "ToolMessage",
            "UserMessage",
        ),
        "shared.llm.openai_client": ("OpenAIClient",),
        "shared.llm.model_registry": ("ModelInfo", "ModelRegistry", "load_registry"),
        "shared.llm.retry": ("RetryPolicy",),
        "shared.llm.pricing": ("Price", "TokenCounts"),
    },
)
