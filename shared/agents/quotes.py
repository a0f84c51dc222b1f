"""`{{step N}}` in a plan's final answer: a step's result given to the user as it stands.

Writing out what an executor already wrote is the dearest way to show it: every token of it is
output, paid again at the answering model's output price. So the call that writes the final
answer may put `{{step N}}` where step N's result should stand, and Parley puts the result
there — in the text streamed to the user as it arrives (`Quotes.feed`, holding back only what
may still become a placeholder) and in the answer stored and sent with `done`
(`Quotes.expand`). The user never sees a placeholder, only the result it stands for.

A step without a result stands as what happened to it (`(step 2 failed: …)`); a number that
is not a step of the plan is left as written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from shared.db.records import PlanStep

PLACEHOLDER = re.compile(r"\{\{\s*step\s*(\d+)\s*\}\}")
_PARTIAL = re.compile(r"\{(?:\{\s*(?:s(?:t(?:e(?:p\s*(?:\d+\s*\}?)?)?)?)?)?)?")
"""What the end of the streamed text may be while a placeholder is still arriving."""
LONGEST_PARTIAL = 40
"""A held-back tail longer than this cannot become a placeholder (it is sent as it is)."""


@dataclass(slots=True)
class Quotes:
    """The results `{{step N}}` stands for in one plan's final answer, and the text held back
    while streaming."""

    results: dict[int, str]
    held: str = field(default="")

    @classmethod
    def of(cls, steps: Iterable[PlanStep]) -> Quotes:
        return cls({step.step_number: _standing(step) for step in steps})

    def expand(self, text: str) -> str:
        """`text` with every placeholder of a known step replaced by that step's result."""
        return PLACEHOLDER.sub(self._result, text)

    def feed(self, delta: str) -> str:
        """The streamed text to show now, given the model's next `delta`: placeholders that
        are complete are expanded; a tail that may still become one is held back."""
        text = self.held + delta
        start = text.rfind("{")
        while start > 0 and text[start - 1] == "{":
            start -= 1  # the whole run of braces that may open a placeholder
        tail = text[start:] if start >= 0 else ""
        if tail and len(tail) <= LONGEST_PARTIAL and _may_become_one(tail):
            self.held, text = tail, text[:start]
        else:
            self.held = ""
        return self.expand(text)

    def end(self) -> str:
        """What is still held back when the stream ends (it never became a placeholder)."""
        held, self.held = self.held, ""
        return self.expand(held)

    def _result(self, match: re.Match[str]) -> str:
        return self.results.get(int(match.group(1)), match.group(0))


def _may_become_one(tail: str) -> bool:
    """Whether `tail` (from an opening brace on) is a placeholder still arriving."""
    if PLACEHOLDER.fullmatch(tail):
        return False  # complete: expanded now
    return _PARTIAL.fullmatch(tail) is not None or (
        tail.startswith("{") and _PARTIAL.fullmatch(tail[1:]) is not None
    )


def _standing(step: PlanStep) -> str:
    if step.result:
        return step.result
    problem = f": {step.error}" if step.error else ""
    return f"(step {step.step_number} {step.status}{problem})"
