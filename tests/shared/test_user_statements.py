"""The statement reader's character classes: written as negated ASCII sets (cheap to compile at
import), they must be exactly Postgres's letters, digits and `$` as the plain ranges say."""

from __future__ import annotations

import re

import pytest

from shared.db import user_statements

PLAIN_LETTER = "A-Za-z_\x80-\U0010ffff"
SAMPLES = [*range(0x100), 0x2FF, 0xFFFF, 0x10000, 0x1F600, 0x10FFFF]  # ASCII, Latin-1, edges


@pytest.mark.parametrize(
    ("fast", "plain"),
    [
        (user_statements._LETTER, f"[{PLAIN_LETTER}]"),
        (user_statements._LETTER_OR_DIGIT, f"[{PLAIN_LETTER}0-9]"),
        (user_statements._LETTER_DIGIT_OR_DOLLAR, f"[{PLAIN_LETTER}0-9$]"),
    ],
)
def test_negated_classes_match_the_plain_ranges(fast: str, plain: str) -> None:
    for code in SAMPLES:
        char = chr(code)
        assert bool(re.fullmatch(fast, char)) == bool(re.fullmatch(plain, char)), hex(code)


def test_non_ascii_names_and_dollar_tags_are_read_as_postgres_reads_them() -> None:
    user_statements.check_user_statement("select $é$ ; set role x $é$, ünïcode$1")  # a string
    with pytest.raises(user_statements.StatementRefused):  # `é$$` is a name, not a quote
        user_statements.check_user_statement("select é$$; set role postgres")
