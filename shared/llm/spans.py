"""A model call's span attributes, after OpenTelemetry's GenAI semantic conventions.

The span of one chat-completions call is named `chat <model>` (kind CLIENT) and carries what
GenAI-aware backends (Langfuse, Logfire, Phoenix, Datadog, Honeycomb) read:
`gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`, `server.address`,
`gen_ai.conversation.id` (the chat session), `gen_ai.agent.name` / `gen_ai.agent.id` (the
planner or executor row); then `gen_ai.response.model`, `gen_ai.response.finish_reasons`,
`gen_ai.usage.input_tokens` / `output_tokens`, `gen_ai.usage.cache_read.input_tokens`
(DeepSeek's cache hits), `gen_ai.usage.reasoning.output_tokens`, and Parley's cost
(`parley.cost_usd`, from the model registry).

No prompt and no answer unless the operator opts in
(`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`): then `gen_ai.system_instructions`,
`gen_ai.input.messages` and `gen_ai.output.messages` hold them as JSON, in the conventions'
parts form (`{"role": ..., "parts": [{"type": "text", "content": ...}]}`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from shared.llm.messages import AssistantMessage, SystemMessage, ToolMessage

if TYPE_CHECKING:
    from uuid import UUID

    from shared.llm import ChatRequest, Completion
    from shared.llm.messages import Message
    from shared.observability.tracing import Attributes

PROVIDERS = {"api.deepseek.com": "deepseek", "api.openai.com": "openai"}
"""`gen_ai.provider.name` by the endpoint's host; another OpenAI-compatible endpoint is named
by its host (the conventions: "the instrumentation's best knowledge")."""


def span_name(request: ChatRequest) -> str:
    return f"chat {request.model}"


def request_attributes(
    request: ChatRequest,
    *,
    base_url: str,
    session_id: UUID,
    plan_id: UUID,
    agent_name: str,
    agent_id: UUID,
) -> dict[str, Any]:
    """What is known before the call is sent."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    found: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": PROVIDERS.get(host, host),
        "gen_ai.request.model": request.model,
        "gen_ai.conversation.id": str(session_id),
        "gen_ai.agent.name": agent_name,
        "gen_ai.agent.id": str(agent_id),
        "server.address": host,
        "server.port": parts.port or (443 if parts.scheme == "https" else 80),
        "parley.plan.id": str(plan_id),
    }
    if request.max_tokens is not None:
        found["gen_ai.request.max_tokens"] = request.max_tokens
    if request.temperature is not None:
        found["gen_ai.request.temperature"] = request.temperature
    if request.thinking is not None:
        found["parley.request.thinking"] = request.thinking
    return found


def completion_attributes(completion: Completion) -> Attributes:
    """What the reply says: its model, why it stopped, its tokens and cost."""
    tokens = completion.tokens
    return {
        "gen_ai.response.model": completion.model,
        "gen_ai.response.finish_reasons": [str(completion.finish_reason)],
        "gen_ai.usage.input_tokens": tokens.prompt_tokens,
        "gen_ai.usage.output_tokens": tokens.completion_tokens,
        "gen_ai.usage.cache_read.input_tokens": tokens.cache_hit_tokens,
        "gen_ai.usage.reasoning.output_tokens": tokens.reasoning_tokens,
        "parley.cost_usd": float(completion.usage.cost_usd),
        "parley.llm.attempts": completion.attempts,
    }


def content_attributes(request: ChatRequest, completion: Completion) -> Attributes:
    """The prompt and the answer, for an operator who opted in (never by default)."""

    system = [m.content for m in request.messages if isinstance(m, SystemMessage)]
    found: dict[str, Any] = {
        "gen_ai.input.messages": _json(
            [_parts(m) for m in request.messages if not isinstance(m, SystemMessage)]
        ),
    }
    if system:
        found["gen_ai.system_instructions"] = _json(
            [{"type": "text", "content": text} for text in system]
        )
    answer = _parts(completion.message) | {"finish_reason": completion.finish_reason}
    found["gen_ai.output.messages"] = _json([answer])
    return found


def _parts(message: Message) -> dict[str, Any]:

    parts: list[dict[str, Any]] = []
    if isinstance(message, ToolMessage):
        parts.append(
            {"type": "tool_call_response", "id": message.tool_call_id, "result": message.content}
        )
        return {"role": "tool", "parts": parts}
    if isinstance(message, AssistantMessage):
        if message.reasoning_content:
            parts.append({"type": "reasoning", "content": message.reasoning_content})
        if message.content:
            parts.append({"type": "text", "content": message.content})
        parts += [
            {
                "type": "tool_call",
                "id": call.id,
                "name": call.name,
                "arguments": dict(call.arguments) if call.valid else call.arguments_json,
            }
            for call in message.tool_calls
        ]
        return {"role": "assistant", "parts": parts}
    return {"role": message.role, "parts": [{"type": "text", "content": message.content}]}


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
