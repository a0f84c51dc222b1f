"""Text Postgres cannot store: U+0000 (text and `jsonb` cannot hold it) and lone surrogates
(e.g. "\\udfff", which has no UTF-8 encoding).

* From the user it is refused: `StoredText` is used on every string field of a request body
  that reaches the database; such a value is a 422 problem naming the field, not a database
  error.
* From elsewhere — a provider's error message, an external (MCP) tool's result — it is made
  storable: `storable` replaces each such character by U+FFFD, which shows that something was
  there.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

REPLACEMENT = "\ufffd"
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable(text: str) -> str:
    """`text` with each U+0000 and each lone surrogate replaced by U+FFFD."""
    return _UNSTORABLE.sub(REPLACEMENT, text)


def _storable(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain the NUL character (U+0000): Postgres cannot store it")
    if _UNSTORABLE.search(value):
        raise ValueError(
            "must be valid Unicode (no lone surrogate such as U+DFFF): Postgres cannot store it"
        )
    return value


StoredText = Annotated[str, AfterValidator(_storable)]
"""A string Postgres can store (no U+0000, no lone surrogate)."""
