"""The statement reader's character classes: written as negated ASCII sets (cheap to compile at
import), they must be exactly Postgres's letters, digits and `$` as the plain ranges say."""

from __future__ import annotations

import re

import pytest

from shared.db import user_statements

PLAIN_LETTER = "A-Za-z_\x80-\U0010ffff"
EVERY_CHARACTER = "".join(map(chr, range(0x110000)))


@pytest.mark.parametrize(
    ("fast", "plain"),
    [
        (user_statements._LETTER, f"[{PLAIN_LETTER}]"),
        (user_statements._LETTER_OR_DIGIT, f"[{PLAIN_LETTER}0-9]"),
        (user_statements._LETTER_DIGIT_OR_DOLLAR, f"[{PLAIN_LETTER}0-9$]"),
    ],
)
def test_negated_classes_match_the_plain_ranges_over_every_code_point(
    fast: str, plain: str
) -> None:
    left = re.sub(fast, "", EVERY_CHARACTER)
    assert left == re.sub(plain, "", EVERY_CHARACTER)
    assert len(left) < 128  # only ASCII punctuation, controls (and digits) stay


def test_non_ascii_names_and_dollar_tags_are_read_as_postgres_reads_them() -> None:
    user_statements.check_user_statement("select $é$ ; set role x $é$, ünïcode$1")  # a string
    with pytest.raises(user_statements.StatementRefused):  # `é$$` is a name, not a quote
        user_statements.check_user_statement("select é$$; set role postgres")
