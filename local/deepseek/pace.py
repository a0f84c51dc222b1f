"""How fast the twin streams: a model's output speed, in tokens a second.

DeepSeek generates its replies token by token and streams them as it goes, about one token a
chunk; it published its own speed when it introduced DeepSeek-V3: "60 tokens/second (3x faster
than V2!)" (DeepSeek, "Introducing DeepSeek-V3", 2024-12-26, api-docs.deepseek.com/news/news1226;
docs/deepseek.md, *How fast it streams*). Paced, the twin cuts every text it streams (reasoning
and answer) at its token boundaries, one token a chunk, and sends chunk k no earlier than k
tokens' time after the stream began, so a stream of n tokens lasts n / `tokens_per_second`
seconds. Unpaced (the tests' default), it streams everything at once.

The clock and the sleep are the pace's own, so a test can drive them (`tests/llm/test_pace.py`
counts chunks and reads a fake clock; it never times anything).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

DEEPSEEK_TOKENS_PER_SECOND = 60.0
"""DeepSeek's published output speed (DeepSeek-V3's introduction; see the module docstring)."""


@dataclass(frozen=True, slots=True)
class Pace:
    """A model's output speed: `tokens_per_second` (0: everything at once)."""

    tokens_per_second: float
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep

    @property
    def paced(self) -> bool:
        return self.tokens_per_second > 0

    def start(self) -> float:
        """The moment a stream begins (what `wait` counts from)."""
        return self.clock()

    async def wait(self, started: float, tokens: int) -> None:
        """Until `tokens` tokens' time has passed since `started` (at once when unpaced)."""
        if not self.paced or tokens <= 0:
            return
        delay = started + tokens / self.tokens_per_second - self.clock()
        if delay > 0:
            await self.sleep(delay)


AT_ONCE = Pace(0.0)
"""No pace: a reply streams as fast as it can be written."""
