"""`shared.db.user_statements` read side by side with Postgres's own lexer.

`pglast` (a dev-only dependency) runs libpg_query, Postgres's parser and lexer compiled as a
library. Random inputs are built from fragments chosen for where lexers go wrong — quoted
names with `""`, strings with `''` and backslashes, `E'...'` continued across a newline
(or a `--` comment), dollar quotes with and without tags (non-ASCII ones among them), nested
block comments, `U&` escapes, non-ASCII letters and spaces, semicolons everywhere — and each
is read by both. They must agree on every statement's words: where statements end (`;`
outside literals and comments), and which words are keywords and names rather than text in a
string, a body or a comment. Inputs Postgres refuses (an unterminated string, junk after a
number) are skipped: no statement of them would run.

Postgres's tokens are mapped to this reader's documented form: keywords and names lower-cased,
quoted names as written; a string literal's prefix (`E`, `B`, `X`, `N`) as a one-letter word
and `U&` as the escape marker before it; the letters inside a number (`1e10`, `0x1F`,
`1_000`) as words — this reader keeps them, harmlessly: no forbidden word hides in a number.

Bounded: `INPUTS` inputs from a fixed seed, well under a second. A one-off run of 500,000
inputs (seed 7) found no difference either.
"""

from __future__ import annotations

import random

import pytest

from shared.db.user_statements import _WORD, UNICODE_ESCAPE, statements

pglast = pytest.importorskip("pglast.parser", reason="pglast (dev) runs Postgres's lexer")

INPUTS = 20_000
SEED = 20261127
FRAGMENTS = (
    "select",
    "SELECT",
    "set",
    "SeT",
    "local",
    "LOCAL",
    "role",
    "session",
    "authorization",
    "begin",
    "commit",
    "do",
    "copy",
    "create",
    "function",
    "procedure",
    "from",
    "where",
    "set_config",
    "query_to_xml",
    "request.jwt.claims",
    "statement_timeout",
    "to",
    "abc",
    "_x",
    "a1$b",
    "é",
    "É",
    "ünïcode",
    "中文",
    "x\u00a0y",
    "ß",
    '"a"',
    '"A b"',
    '"x""y"',
    '"set_config"',
    '"é"',
    '"a;b"',
    "''",
    "'a'",
    "'it''s'",
    "'a;b'",
    "'a\\'",
    "E'a\\'b'",
    "e'\\\\'",
    "E'a'\n'b'",
    "'a' -- c\n'b'",
    "E'x' \t\n 'y\\'z'",
    "'a'  'b'",
    "N'x'",
    "B'01'",
    "X'ff'",
    "U&'d\\0061t'",
    'U&"x"',
    "u&'y'",
    "UESCAPE",
    "'!'",
    "$$a;b$$",
    "$t$ x; $t$",
    "$é$y$é$",
    "$1",
    "$a",
    "$",
    "$$",
    "$_$z$_$",
    "-- x\n",
    "--;\n",
    "/* a /* b */ c */",
    "/* ; */",
    "/*",
    "*/",
    "--",
    ";",
    ";",
    ";",
    ",",
    "(",
    ")",
    "::",
    "+",
    "-",
    "*",
    "/",
    "=",
    "<>",
    "!",
    "@",
    "#",
    "%",
    "^",
    "&",
    "|",
    "`",
    "?",
    "[",
    "]",
    "{",
    "}",
    ".",
    ":",
    "\\",
    "1",
    "1.5",
    "1e10",
    ".5",
    "0x1F",
    "1_000",
    "42abc",
    "1set_config",
    "\r",
    "\f",
    "\v",
    "\n",
    "\t",
    " ",
)
SEPARATORS = ("", " ", " ", "\n", "\t", "  ")
STRINGS = frozenset({"SCONST", "BCONST", "XCONST", "USCONST"})
NUMBERS = frozenset({"ICONST", "FCONST"})


def postgres_words(sql: str) -> list[list[str]]:
    """Each statement's words as Postgres's lexer sees them, in this reader's form."""
    found: list[list[str]] = [[]]
    for token in pglast.scan(sql):
        text = sql[token.start : token.end + 1]
        if token.name == "ASCII_59":  # ;
            found.append([])
        elif token.name in NUMBERS:
            found[-1] += [word.lower() for word in _WORD.findall(text)]
        elif token.name in STRINGS:
            if text[:2].lower() == "u&":
                found[-1] += [UNICODE_ESCAPE, "u"]
            elif text[0].isalpha():
                found[-1].append(text[0].lower())
        elif token.name in ("IDENT", "UIDENT") or token.kind != "NO_KEYWORD":
            if text[:2].lower() == "u&":
                found[-1] += [UNICODE_ESCAPE, "u", text[3:-1].replace('""', '"')]
            elif text.startswith('"'):
                found[-1].append(text[1:-1].replace('""', '"'))
            else:
                found[-1].append(text.lower())
    return [words for words in found if words]


def test_statements_are_read_as_postgres_lexes_them() -> None:
    rng = random.Random(SEED)
    compared, differences = 0, []
    for _ in range(INPUTS):
        count = rng.randint(1, 10)
        sql = "".join(rng.choice(FRAGMENTS) + rng.choice(SEPARATORS) for _ in range(count))
        try:
            expected = postgres_words(sql)
        except pglast.ParseError:
            continue  # Postgres refuses it: nothing of it would run
        compared += 1
        if statements(sql) != expected:
            differences.append((sql, statements(sql), expected))
    assert differences[:5] == []
    assert compared > INPUTS * 3 // 4  # most inputs were read by both, not skipped


@pytest.mark.parametrize(
    "sql",
    [
        "select 1 /* ; /* ; */ ; */; set role x",
        "select E'\\'; set role x' ; select 1",
        "select $é$ ; $é$; set_config",
        "select 'a'\n-- ;\n'; set role x'",
        'select "a;""b"; do',
    ],
)
def test_the_hard_cases_agree(sql: str) -> None:
    assert statements(sql) == postgres_words(sql)
