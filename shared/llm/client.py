"""The LLM seam: the `LLMClient` Protocol and the values that cross it.

`OpenAIClient` (shared.llm.openai_client) implements it over any OpenAI-compatible endpoint;
tests and the offline demo run it against the fake server (local.deepseek).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from shared.kernel.usage import Usage
from shared.llm.errors import LLMBadRequest, UnexpectedReply
from shared.llm.messages import AssistantMessage, Message, ToolCall
from shared.llm.pricing import TokenCounts

if TYPE_CHECKING:
    from pydantic import BaseModel


@dataclass(frozen=True, slots=True)
class ToolSchema:
    """A function the model may call: name, description, JSON Schema of its arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )

    @classmethod
    def for_model(cls, name: str, description: str, arguments: type[BaseModel]) -> ToolSchema:
        """A tool whose parameters are the JSON Schema of a Pydantic model."""
        return cls(name, description, arguments.model_json_schema())

    def to_wire(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.parameters),
            },
        }


@dataclass(frozen=True, slots=True)
class CallTool:
    """`tool_choice` that forces one named function."""

    name: str


ToolChoice = Literal["auto", "none", "required"] | CallTool
HistoryMode = Literal["strict", "repair"]
FinishReason = Literal["stop", "length", "tool_calls", "content_filter", "other"]


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One chat-completions call."""

    model: str
    messages: Sequence[Message]
    tools: Sequence[ToolSchema] = ()
    tool_choice: ToolChoice = "auto"
    stream: bool = True
    """Stream over SSE (the default) or make one plain request; the events are the same."""
    max_tokens: int | None = None
    temperature: float | None = None
    parallel_tool_calls: bool | None = None
    history: HistoryMode = "strict"
    """Before sending: "strict" raises `InvalidHistory`; "repair" fixes the history."""
    thinking: bool | None = None
    """Thinking mode on or off; None = the model's default (registry). When set, models with a
    switch (DeepSeek) are told so, and `reasoning_content` is checked and sent accordingly."""
    extra_body: Mapping[str, Any] | None = None
    """Provider-specific fields merged into the request body (e.g. DeepSeek's `thinking`)."""

    def __post_init__(self) -> None:
        names = {tool.name for tool in self.tools}
        if len(names) != len(self.tools):
            raise LLMBadRequest("tool names must be unique", model=self.model)
        if self.tool_choice == "required" and not self.tools:
            raise LLMBadRequest('tool_choice "required" needs at least one tool', model=self.model)
        if isinstance(self.tool_choice, CallTool) and self.tool_choice.name not in names:
            raise LLMBadRequest(
                f"tool_choice names {self.tool_choice.name!r}, which is not among the tools "
                f"offered ({', '.join(sorted(names)) or 'none'})",
                model=self.model,
            )


@dataclass(frozen=True, slots=True)
class Completion:
    """The outcome of one call: the assembled assistant message, why it stopped, what it cost."""

    message: AssistantMessage
    finish_reason: FinishReason
    usage: Usage
    """Ready for the data layer: tokens and `cost_usd` from the model registry."""
    tokens: TokenCounts
    """The provider's counts in full (cache misses, reasoning tokens)."""
    model: str
    """The model that answered, as the provider names it."""
    cost_known: bool
    """False when the registry has no price for the model (cost recorded as 0)."""
    usage_reported: bool
    """False when the provider sent no usage (some local servers ignore `include_usage`)."""
    attempts: int = 1

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return self.message.tool_calls

    @property
    def text(self) -> str:
        return self.message.content or ""


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the answer's text."""

    text: str
    type: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A piece of a thinking model's reasoning (`reasoning_content`)."""

    text: str
    type: Literal["reasoning"] = "reasoning"


@dataclass(frozen=True, slots=True)
class ToolCallReady:
    """A tool call with all its arguments (check `call.valid`: the JSON may be broken)."""

    call: ToolCall
    type: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True, slots=True)
class Completed:
    """Always the last event."""

    completion: Completion
    type: Literal["completed"] = "completed"


StreamEvent = TextDelta | ReasoningDelta | ToolCallReady | Completed


class LLMClient(Protocol):
    """A chat-completions model."""

    def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """Text and reasoning deltas as they arrive, then each tool call, then `Completed`."""
        ...

    async def complete(self, request: ChatRequest) -> Completion:
        """The whole reply at once."""
        ...


async def collect(events: AsyncIterator[StreamEvent]) -> Completion:
    """Drain a stream and return its completion."""
    async for event in events:
        if isinstance(event, Completed):
            return event.completion
    raise UnexpectedReply("the stream ended without a completion")


@dataclass(frozen=True, slots=True)
class ToolCallResult:
    """A forced tool call: its arguments and the completion (for usage)."""

    call: ToolCall
    completion: Completion

    @property
    def arguments(self) -> Mapping[str, Any]:
        return self.call.arguments


async def call_tool(
    client: LLMClient,
    *,
    model: str,
    messages: Sequence[Message],
    tool: ToolSchema,
    **options: Any,
) -> ToolCallResult:
    """Make the model call `tool` (e.g. `create_plan`) and return its parsed arguments.

    The call is made with thinking off unless `options` say otherwise: DeepSeek refuses a named
    `tool_choice` in thinking mode. Raises `UnexpectedReply` when the model answers without
    calling it or with arguments that are not a JSON object. `options` are further
    `ChatRequest` fields (`max_tokens`, ...).
    """
    options.setdefault("thinking", False)
    request = ChatRequest(
        model, messages, tools=(tool,), tool_choice=CallTool(tool.name), **options
    )
    completion = await client.complete(request)
    call = next((c for c in completion.tool_calls if c.name == tool.name), None)
    if call is None:
        raise UnexpectedReply(
            f"the model did not call {tool.name!r} (finish reason: {completion.finish_reason})",
            model=completion.model,
        )
    if not call.valid:
        raise UnexpectedReply(f"{tool.name!r} call unusable: {call.invalid_reason}", model=model)
    return ToolCallResult(call, completion)
