"""Talking to models: one client for any OpenAI-compatible endpoint (DeepSeek by default).

Build a client once per cold start and pass typed messages:

    client = OpenAIClient.from_settings()          # LLM_BASE_URL, DEEPSEEK_API_KEY / LLM_API_KEY
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

- `Completion.usage` is a `shared.db.records.Usage` (prompt, completion and cache-hit tokens,
  `cost_usd` as an exact Decimal priced by the model registry), ready to store.
- Histories: `AssistantMessage(tool_calls=..., reasoning_content=...)` then one `ToolMessage`
  per call (`ToolMessage.answering(call, result)`). Before each request the history is checked
  (`ChatRequest.history="strict"` raises `InvalidHistory`, sending nothing) or repaired
  (`"repair"`); see `shared.llm.history`. `reasoning_content` is sent only to thinking models.
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
- Offline: `shared.llm.fake_server` is an OpenAI-compatible fake (tests, the demo model).
"""

from shared.llm.client import (
    CallTool,
    ChatRequest,
    Completed,
    Completion,
    FinishReason,
    HistoryMode,
    LLMClient,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallReady,
    ToolCallResult,
    ToolChoice,
    ToolSchema,
    call_tool,
    collect,
)
from shared.llm.errors import (
    InvalidHistory,
    LLMAuthenticationFailed,
    LLMBadRequest,
    LLMError,
    LLMNotConfigured,
    LLMProviderError,
    LLMRateLimited,
    LLMTimeout,
    UnexpectedReply,
)
from shared.llm.history import HistoryProblem, check_history, find_problems, repair_history
from shared.llm.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from shared.llm.openai_client import OpenAIClient
from shared.llm.registry import ModelInfo, ModelRegistry, load_registry
from shared.llm.retry import RetryPolicy
from shared.llm.usage import Price, TokenCounts

__all__ = [
    "AssistantMessage",
    "CallTool",
    "ChatRequest",
    "Completed",
    "Completion",
    "FinishReason",
    "HistoryMode",
    "HistoryProblem",
    "InvalidHistory",
    "LLMAuthenticationFailed",
    "LLMBadRequest",
    "LLMClient",
    "LLMError",
    "LLMNotConfigured",
    "LLMProviderError",
    "LLMRateLimited",
    "LLMTimeout",
    "Message",
    "ModelInfo",
    "ModelRegistry",
    "OpenAIClient",
    "Price",
    "ReasoningDelta",
    "RetryPolicy",
    "StreamEvent",
    "SystemMessage",
    "TextDelta",
    "TokenCounts",
    "ToolCall",
    "ToolCallReady",
    "ToolCallResult",
    "ToolChoice",
    "ToolMessage",
    "ToolSchema",
    "UnexpectedReply",
    "UserMessage",
    "call_tool",
    "check_history",
    "collect",
    "find_problems",
    "load_registry",
    "repair_history",
]
