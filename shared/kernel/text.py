"""Text Postgres cannot store: U+0000 (text and `jsonb` cannot hold it) and lone surrogates
(e.g. "\\udfff", which has no UTF-8 encoding).

* From the user it is refused: `StoredText` is used on every string field of a request body
  that reaches the database; such a value is a 422 problem naming the field, not a database
  error.
* From elsewhere — a provider's error message, an external (MCP) tool's result — it is made
  storable: `storable` replaces each such character by U+FFFD, which shows that something was
  there.
"""

import re
from typing import Annotated

from pydantic import AfterValidator, Field, JsonValue

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


StoredText = Annotated[
    str, AfterValidator(_storable), Field(json_schema_extra={"pattern": "^[^\\x00]*$"})
]
"""A string Postgres can store (no U+0000, no lone surrogate). Its schema says the first:
lone surrogates cannot be written in UTF-8, so no well-formed JSON text has them."""


WHITESPACE = (
    "\t\n\v\f\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
"""The characters every reading of JSON Schema's `\\s` takes for whitespace (ECMA-262's, Python's
`str.isspace`, Unicode's White_Space): a text of these alone is blank, and a text with any
other character matches the pattern `\\S` whichever validator reads it."""


def _not_blank(value: str) -> str:
    if not value.strip(WHITESPACE):
        raise ValueError("must hold something other than whitespace")
    return value


NotBlank = Annotated[str, AfterValidator(_not_blank)]
"""A string with a character that is not whitespace. Its field says so to clients with
`json_schema_extra=NOT_BLANK` (a pattern, not a pydantic one: pydantic's regex engine has its
own idea of whitespace)."""
NOT_BLANK: dict[str, JsonValue] = {"pattern": "^[^\\x00]*[^\\s\\x00][^\\x00]*$"}
"""`StoredText`'s pattern and a character that is not whitespace, in one (two patterns over a
32,000-character limit slow Schemathesis's boundary cases from seconds to minutes)."""
