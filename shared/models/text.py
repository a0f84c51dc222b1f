"""Text the user sends that Parley stores: text Postgres cannot store is refused.

Used on every string field of a request body that reaches the database; a value Postgres cannot
store — one with U+0000, or with a lone surrogate (e.g. "\\udfff", which has no UTF-8 encoding)
— is a 422 problem naming the field, not a database error.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator


def _storable(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain the NUL character (U+0000): Postgres cannot store it")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(
            "must be valid Unicode (no lone surrogate such as U+DFFF): Postgres cannot store it"
        ) from None
    return value


StoredText = Annotated[str, AfterValidator(_storable)]
"""A string Postgres can store (no U+0000, no lone surrogate)."""
