"""Text the user sends that Parley stores: Postgres cannot store U+0000, so it is refused.

Used on every string field of a request body that reaches the database; a NUL in one is a 422
problem naming the field, not a database error.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator


def _storable(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain the NUL character (U+0000): Postgres cannot store it")
    return value


StoredText = Annotated[str, AfterValidator(_storable)]
"""A string Postgres can store (no U+0000)."""
