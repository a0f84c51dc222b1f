"""DeepSeek's request contract: what its chat-completions API refuses, and with which answer.

Each rule is a function from the request body to `None` (accepted) or the `ErrorReply` DeepSeek
sends: its status, its words, its error body (`{"error": {message, type, param: null,
code: "invalid_request_error"}}`). `check` applies them in the order DeepSeek appears to:
the body's shape (422, "Failed to deserialize…"), the model name, field ranges, then the
thinking-mode and history rules (400). `RULES` names every rule and the page it comes from;
`docs/deepseek.md` tables them with the test that holds each one.

Where DeepSeek's docs are silent and reports disagree, the twin takes the side that refuses
(a request that passes here should pass there), and `docs/deepseek.md` says so.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from local.deepseek.script import ErrorReply

REFERENCE = "https://api-docs.deepseek.com/api/create-chat-completion"
THINKING_GUIDE = "https://api-docs.deepseek.com/guides/thinking_mode"
THINKING_GUIDE_ZH = "https://api-docs.deepseek.com/zh-cn/guides/thinking_mode"
ERROR_CODES = "https://api-docs.deepseek.com/quick_start/error_codes"
PRICING = "https://api-docs.deepseek.com/quick_start/pricing"
TOOL_CALLS_GUIDE = "https://api-docs.deepseek.com/guides/tool_calls"

MAX_OUTPUT = 393_216
"""`max_tokens` may be 1 to 384K (pricing page: "MAX OUTPUT … MAXIMUM: 384K")."""
CONTEXT_LENGTH = 1_048_576
"""1M tokens of context, prompt and completion together."""
DEFAULT_OUTPUT = {"non-thinking": 8_192, "thinking": 65_536, "max": 131_072}
"""`max_tokens` when not set: "8K in non-thinking mode, 64K in thinking mode (128K with
reasoning_effort set to max)" (API reference)."""
MAX_TOOLS = 128
FUNCTION_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
ROLES = ("system", "user", "assistant", "tool", "latest_reminder")
THINKING_TYPES = ("adaptive", "enabled", "disabled")
EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")


@dataclass(frozen=True, slots=True)
class ModelProfile:
    """How a served model behaves: DeepSeek V4's defaults, unless a test says otherwise."""

    thinks_by_default: bool = True
    """V4 models think unless told not to ("Thinking mode is enabled by default")."""
    thinking_switch: bool = True
    """`thinking` / `reasoning_effort` switch the mode (off: the fields are ignored)."""


DEEPSEEK = ModelProfile()
PLAIN = ModelProfile(thinks_by_default=False, thinking_switch=False)
"""An OpenAI-compatible model with no thinking mode (the DeepSeek rules about thinking do not
apply to it)."""


def refusal(status: int, message: str, type_: str = "invalid_request_error") -> ErrorReply:
    """An error as DeepSeek sends it (`code` is "invalid_request_error" whatever the status)."""
    return ErrorReply(status, message, {}, type_, "invalid_request_error")


def deserialize_error(path: str, problem: str) -> ErrorReply:
    """422, as DeepSeek's body parser words a field of the wrong type or an unknown value."""
    where = f"{path}: " if path else ""
    return refusal(
        422,
        "Failed to deserialize the JSON body into the target type: "
        f"{where}{problem} at line 1 column 1",
    )


def unknown_model(model: str, served: Sequence[str]) -> ErrorReply:
    listed = ", ".join(served)
    return refusal(400, f"The supported API model names are {listed}, but you passed {model}.")


def thinking_on(body: Mapping[str, Any], profile: ModelProfile) -> bool:
    """Whether the request runs in thinking mode: on by default; `thinking: {type: disabled}`
    turns it off (and wins over `reasoning_effort`), as does `reasoning_effort: none`."""
    if not profile.thinking_switch:
        return profile.thinks_by_default
    thinking = body.get("thinking")
    kind = thinking.get("type") if isinstance(thinking, Mapping) else None
    if kind in ("enabled", "adaptive"):
        return True
    if kind == "disabled":
        return False
    if body.get("reasoning_effort") == "none":
        return False
    return profile.thinks_by_default


def reasoning_kept(body: Mapping[str, Any], profile: ModelProfile) -> list[bool]:
    """For each message, whether its `reasoning_content` is part of the prompt — and so must be
    passed back. DeepSeek states the rule in two wordings; the twin holds the union of both:

    - English guide: "If the request carries the `tools` parameter: the `reasoning_content` of
      all previous turns should be passed back … and will be concatenated into the context",
      even for turns without tool calls; without tools "it will be ignored";
    - Chinese guide: "在两个 user 消息之间,如果模型进行了工具调用,则中间 assistant 的
      reasoning_content 需参与上下文拼接,在后续所有 user 交互轮次中必须回传给 API" — between
      two user messages where the model called tools, the assistant messages' reasoning takes
      part in the context and must be passed back in all later requests, tools or not.

    So in thinking mode: with tools, every assistant message; without, every assistant message
    of a span between user messages that holds a tool call."""
    messages = body["messages"]
    if not thinking_on(body, profile):
        return [False] * len(messages)
    if body.get("tools"):
        return [_role(m) == "assistant" for m in messages]
    kept = [False] * len(messages)
    span: list[int] = []  # the assistant messages since the last user message
    called = False
    for index, message in enumerate(messages):
        if _role(message) == "user":
            span, called = [], False
        elif _role(message) == "assistant":
            span.append(index)
            called = called or bool(message.get("tool_calls"))
            if called:
                for earlier in span:
                    kept[earlier] = True
    return kept


def _role(message: Any) -> Any:
    return message.get("role") if isinstance(message, Mapping) else None


Rule = Callable[[Mapping[str, Any], ModelProfile], ErrorReply | None]


@dataclass(frozen=True, slots=True)
class RuleInfo:
    """One rule of the contract: its id (used in `docs/deepseek.md` and by `check-model`),
    what it refuses, where DeepSeek says so, and the check."""

    id: str
    summary: str
    source: str
    check: Rule


# --- the body's shape (422) -------------------------------------------------------------


def body_shape(body: Mapping[str, Any], profile: ModelProfile) -> ErrorReply | None:
    if "model" not in body:
        return deserialize_error("", "missing field `model`")
    if "messages" not in body:
        return deserialize_error("", "missing field `messages`")
    if not isinstance(body["messages"], list):
        return deserialize_error("messages", "invalid type: expected a sequence")
    for index, message in enumerate(body["messages"]):
        if problem := _message_shape(message):
            return deserialize_error(f"messages[{index}]", problem)
    return None


def _message_shape(message: Any) -> str | None:
    if not isinstance(message, Mapping):
        return "invalid type: expected struct Message"
    role = message.get("role")
    if role not in ROLES:
        expected = ", ".join(f"`{r}`" for r in ROLES)
        return f"role: unknown variant `{role}`, expected one of {expected}"
    if role == "tool" and "tool_call_id" not in message:
        return "missing field `tool_call_id`"
    if role in ("system", "user", "tool") and "content" not in message:
        return "missing field `content`"
    return None


def mode_fields(body: Mapping[str, Any], profile: ModelProfile) -> ErrorReply | None:
    """`thinking.type` and `reasoning_effort` take only their documented values."""
    thinking = body.get("thinking")
    if thinking is not None:
        kind = thinking.get("type") if isinstance(thinking, Mapping) else None
        if kind not in THINKING_TYPES:
            return _unknown_variant("thinking.type", kind, THINKING_TYPES)
    effort = body.get("reasoning_effort")
    if effort is not None and effort not in EFFORTS:
        return _unknown_variant("reasoning_effort", effort, EFFORTS)
    return None


def _unknown_variant(path: str, value: Any, variants: Sequence[str]) -> ErrorReply:
    expected = ", ".join(f"`{v}`" for v in variants)
    return deserialize_error(path, f"unknown variant `{value}`, expected one of {expected}")


# --- field ranges (400) -------------------------------------------------------------------


def max_tokens(body: Mapping[str, Any], profile: ModelProfile) -> ErrorReply | None:
    value = body.get("max_tokens")
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_OUTPUT:
        return refusal(
            400, f"Invalid max_tokens value, the valid range of max_tokens is [1, {MAX_OUTPUT}]"
        )
    return None


def sampling(body: Mapping[str, Any], profile: ModelProfile) -> ErrorReply | None:
    """Out-of-range sampling values are refused in every mode (in thinking mode valid ones
    are accepted and have no effect)."""
    temperature = body.get("temperature")
    if temperature is not None and not _number_in(temperature, 0, 2):
        return refusal(400, "Invalid temperature value, the valid range of temperature is [0, 2]")
    top_p = body.get("top_p")
    if top_p is not None and not (_number_in(top_p, 0, 1) and top_p > 0):
        return refusal(400, "Invalid top_p value, the valid range of top_p is (0, 1.0]")
    stop = body.get("stop")
    if isinstance(stop, list) and len(stop) > 16:
        return refusal(400, f"Stop string array too long: {len(stop)}")
    return None


def streaming(body: Mapping[str, Any], profile: ModelProfile) -> ErrorReply | None:
    if body.get("stream_options") is not None and body.get("stream") is not True:
        return refusal(400, "stream_options should be set along with stream = true")
    return None


def tools_offered(body: Mapping[str, Any], profile: ModelProfile) -> ErrorReply | None:
    """At most 128 functions, each named with a-z, A-Z, 0-9, `_` and `-`, up to 64 long.
    (DeepSeek's words for these refusals were not found: the twin's are its own.)"""
    tools = body.get("tools") or []
    if len(tools) > MAX_TOOLS:
        return refusal(400, f"A max of {MAX_TOOLS} functions are supported; got {len(tools)}.")
    for tool in tools:
        name = (tool.get("function") or {}).get("name") if isinstance(tool, Mapping) else None
        if not isinstance(name, str) or not FUNCTION_NAME.fullmatch(name):
            return refusal(
                400,
                f"Invalid function name {name!r}: use a-z, A-Z, 0-9, "
                "underscores and dashes, at most 64 characters.",
            )
    return None


# --- thinking mode and the history (400) ----------------------------------------------------


THINKING_TOOL_CHOICE = "Thinking mode does not support this tool_choice"


def tool_choice(body: Mapping[str, Any], profile: ModelProfile) -> ErrorReply | None:
    """ "`required` and named tool choices are not supported in thinking mode; the API returns
    a 400 error. Disable thinking mode first to use them." (`auto` and `none` are accepted.)"""
    choice = body.get("tool_choice")
    forced = choice == "required" or isinstance(choice, Mapping)
    if forced and thinking_on(body, profile):
        return refusal(400, THINKING_TOOL_CHOICE)
    return None


def assistant_content(body: Mapping[str, Any], profile: ModelProfile) -> ErrorReply | None:
    for message in body["messages"]:
        if (
            message.get("role") == "assistant"
            and message.get("content") is None
            and not (message.get("tool_calls"))
        ):
            return refusal(400, "Invalid assistant message: content or tool_calls must be set")
    return None


ORPHAN = "Messages with role 'tool' must be a response to a preceding message with 'tool_calls'"
UNMATCHED = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to "
    "each 'tool_call_id', The following tool_call_ids did not have response messages: {ids}"
)
UNANSWERED = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to "
    "each 'tool_call_id'. (insufficient tool messages following tool_calls message)"
)


def tool_messages(body: Mapping[str, Any], profile: ModelProfile) -> ErrorReply | None:
    """Each `tool` message answers a call of the assistant turn just before it (tool messages
    only in between), and every call is answered before the next other message."""
    pending: set[str] = set()
    for message in body["messages"]:
        if message.get("role") == "tool":
            if not pending:
                return refusal(400, ORPHAN)
            call_id = str(message.get("tool_call_id"))
            if call_id not in pending:
                return refusal(400, UNMATCHED.format(ids=call_id))
            pending.discard(call_id)
            continue
        if pending:
            return refusal(400, UNANSWERED)
        calls = message.get("tool_calls") or []
        pending = {str(c.get("id")) for c in calls if isinstance(c, Mapping)}
    return refusal(400, UNANSWERED) if pending else None


PASSED_BACK = "The `reasoning_content` in the thinking mode must be passed back to the API."


def reasoning_passed_back(body: Mapping[str, Any], profile: ModelProfile) -> ErrorReply | None:
    """Every assistant message whose reasoning is part of the prompt (`reasoning_kept`: in
    thinking mode, all of them when the request carries tools, and those of a user turn that
    called tools whether it does or not) carries its `reasoning_content`. An empty string
    counts as passed back; a missing or null one does not."""
    kept = reasoning_kept(body, profile)
    for message, needed in zip(body["messages"], kept, strict=True):
        if needed and message.get("reasoning_content") is None:
            return refusal(400, PASSED_BACK)
    return None


def context_length(
    body: Mapping[str, Any], profile: ModelProfile, prompt_tokens: int
) -> ErrorReply | None:
    """The prompt and the completion it may write fit the 1M context (checked with the
    prompt's token count, which only the server knows)."""
    requested = body.get("max_tokens")
    if not isinstance(requested, int):
        mode = "non-thinking"
        if thinking_on(body, profile):
            mode = "max" if body.get("reasoning_effort") in ("max", "ultra") else "thinking"
        requested = DEFAULT_OUTPUT[mode]
    if prompt_tokens + requested <= CONTEXT_LENGTH:
        return None
    return refusal(
        400,
        f"This model's maximum context length is {CONTEXT_LENGTH} tokens. However,"
        f" you requested {prompt_tokens + requested} tokens ({prompt_tokens} in the "
        f"messages, {requested} in the completion). Please reduce the length of the "
        "messages or completion.",
    )


RULES: tuple[RuleInfo, ...] = (
    RuleInfo(
        "body-shape",
        "missing `model`/`messages`, an unknown role, a tool message without `tool_call_id`: 422",
        REFERENCE,
        body_shape,
    ),
    RuleInfo(
        "mode-values",
        "`thinking.type` not adaptive/enabled/disabled, `reasoning_effort` "
        "not none/minimal/low/medium/high/xhigh/max: 422",
        THINKING_GUIDE,
        mode_fields,
    ),
    RuleInfo("max-tokens", "`max_tokens` outside [1, 393216]: 400", REFERENCE, max_tokens),
    RuleInfo(
        "sampling",
        "`temperature` outside [0, 2], `top_p` outside (0, 1], more than 16 `stop` strings: 400",
        REFERENCE,
        sampling,
    ),
    RuleInfo(
        "stream-options", "`stream_options` without `stream: true`: 400", REFERENCE, streaming
    ),
    RuleInfo(
        "tools",
        "more than 128 tools, or a function name outside [A-Za-z0-9_-]{1,64}: 400",
        REFERENCE,
        tools_offered,
    ),
    RuleInfo(
        "tool-choice-thinking",
        "`tool_choice` `required` or a named function while thinking: 400",
        REFERENCE,
        tool_choice,
    ),
    RuleInfo(
        "assistant-content",
        "an assistant message with neither content nor tool calls: 400",
        REFERENCE,
        assistant_content,
    ),
    RuleInfo(
        "tool-messages",
        "a `tool` message that answers no pending call, or calls left unanswered: 400",
        TOOL_CALLS_GUIDE,
        tool_messages,
    ),
    RuleInfo(
        "reasoning-passback",
        "in thinking mode, an assistant turn without `reasoning_content` in a request with "
        "`tools`, or in a user turn that called tools (with or without `tools`): 400",
        f"{THINKING_GUIDE} {THINKING_GUIDE_ZH}",
        reasoning_passed_back,
    ),
)
"""The rules checked before the model name (`body-shape`, `mode-values`) come first, as a
parser does; `unknown-model` and `context-length` are checked by the server around them."""


def check(
    body: Mapping[str, Any], profile: ModelProfile | None, served: Sequence[str]
) -> ErrorReply | None:
    """DeepSeek's answer to a request it refuses (None: accepted, but for `context_length`)."""
    for rule in RULES[:2]:
        if (refused := rule.check(body, profile or DEEPSEEK)) is not None:
            return _tagged(refused, rule.id)
    if profile is None:
        return _tagged(unknown_model(str(body.get("model")), served), "unknown-model")
    for rule in RULES[2:]:
        if (refused := rule.check(body, profile)) is not None:
            return _tagged(refused, rule.id)
    return None


def _tagged(reply: ErrorReply, rule: str) -> ErrorReply:
    return replace(reply, rule=rule)


def _number_in(value: Any, low: float, high: float) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and low <= value <= high


WORDS = {
    THINKING_TOOL_CHOICE: "tool-choice-thinking",
    PASSED_BACK: "reasoning-passback",
    ORPHAN: "tool-messages",
    UNANSWERED.split(".")[0]: "tool-messages",
    "The supported API model names are": "unknown-model",
    "Invalid max_tokens value": "max-tokens",
    "maximum context length": "context-length",
}
"""The words of the refusals a caller can meet with a valid body, and their rules."""


def rule_named(message: str) -> str | None:
    """The rule whose refusal `message` quotes (a real DeepSeek's, or the twin's), if any."""
    return next((rule for said, rule in WORDS.items() if said in message), None)


def json_error(error: ValueError) -> ErrorReply:
    """A body that is not JSON."""
    return refusal(400, f"Failed to parse the request body as JSON: {error}")
