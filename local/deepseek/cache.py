"""The fake's `usage`: prompt tokens as Parley counts them, cache hits as DeepSeek's disk cache
would report them.

Counts use DeepSeek's tokenizer through `shared.llm.tokens` (the same formula Parley's budgets
use), so a test or benchmark sees the numbers a DeepSeek bill would show.

Cache hits follow DeepSeek's "Context Caching" guide. A request hits only by matching a whole
persisted *cache prefix unit*, and units are persisted:

1. at the end of each request's input and at the end of its output (what the next turn of the
   same conversation re-sends);
2. for a prefix two requests share (common-prefix detection), usable by later requests only.

Hits are counted in whole storage units of 64 tokens (shorter content is never cached), so a
prefix that changes in its first tokens — a per-call value before the history — hits nothing.
The prompt is laid out as DeepSeek's chat template does: system prompt, tool definitions, then
the other messages. Each fake is one account: its cache is per model and forgotten on `reset()`.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from shared.llm.tokens import DeepSeekTokenizer

STORAGE_UNIT = 64
"""Tokens per cache storage unit (DeepSeek's guide)."""
REMEMBERED_PROMPTS = 64
"""Recent prompts compared for common prefixes, per model."""

_MARKERS = {"system": -1, "user": -2, "assistant": -3, "tool": -4}
_TOOL, _REASONING, _CALL = -5, -6, -7


class PrefixCache:
    """Persisted prefix units per model, and the hit a prompt gets from them."""

    def __init__(self, tokenizer: DeepSeekTokenizer) -> None:
        self.tokenizer = tokenizer
        self._lock = threading.Lock()
        self._units: dict[str, dict[int, set[int]]] = {}
        self._recent: dict[str, deque[tuple[int, ...]]] = {}

    def reset(self) -> None:
        with self._lock:
            self._units.clear()
            self._recent.clear()

    def prompt_ids(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> tuple[int, ...]:
        """The prompt as the template lays it out: system messages, tools, the rest."""
        lead = 0
        while lead < len(messages) and messages[lead].get("role") == "system":
            lead += 1
        ids: list[int] = []
        for message in messages[:lead]:
            ids += self.message_ids(message)
        for tool in tools:
            ids += (_TOOL, *self.tokenizer.ids(_json(tool)))
        for message in messages[lead:]:
            ids += self.message_ids(message)
        return tuple(ids)

    def message_ids(self, message: Mapping[str, Any]) -> list[int]:
        """One message's tokens (call ids are not part of the template: they never count)."""
        role = str(message.get("role", ""))
        ids = [_MARKERS.get(role, -9), *self.tokenizer.ids(_text(message.get("content")))]
        if reasoning := message.get("reasoning_content"):
            ids += (_REASONING, *self.tokenizer.ids(str(reasoning)))
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            ids += (_CALL, *self.tokenizer.ids(str(function.get("name", ""))))
            ids += self.tokenizer.ids(str(function.get("arguments", "")))
        return ids

    def serve(self, model: str, prompt: tuple[int, ...], output: Sequence[int]) -> int:
        """The cache hit of `prompt` (tokens); then persist this request's units."""
        with self._lock:
            units = self._units.setdefault(model, {})
            recent = self._recent.setdefault(model, deque(maxlen=REMEMBERED_PROMPTS))
            hit = _longest_unit(units, prompt)
            shared = [_common_prefix(prompt, earlier) for earlier in recent]
            for length in (*shared, len(prompt)):
                _persist(units, prompt[:length])
            _persist(units, (*prompt, *output))
            recent.append(prompt)
        return hit - hit % STORAGE_UNIT


def _longest_unit(units: dict[int, set[int]], prompt: tuple[int, ...]) -> int:
    for length in sorted(units, reverse=True):
        if length <= len(prompt) and hash(prompt[:length]) in units[length]:
            return length
    return 0


def _persist(units: dict[int, set[int]], prefix: tuple[int, ...]) -> None:
    if len(prefix) >= STORAGE_UNIT:
        units.setdefault(len(prefix), set()).add(hash(prefix))


def _common_prefix(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    """Length of the longest common prefix (binary search over C-speed slice comparisons)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else _json(value)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
