"""What SQL a user's unit of work may send: nothing that leaves its transaction, role or claims.

`Database.as_user` runs as `authenticated` with the user's claims, `SET LOCAL` inside one
transaction (read-only for read tools). A statement that ends that transaction, changes the
role or the claims, or sets anything beyond the transaction would get out of the user's
RLS-limited view, or leave state on the pooled connection for the next unit of work. Tool code
is trusted, so this is defence in depth: each statement is read (comments, strings and quoted
names understood the way Postgres's lexer reads them) and refused before it is sent if it

* controls the transaction (`BEGIN`, `COMMIT`, `ROLLBACK`, `SAVEPOINT`, `PREPARE`, ...);
* sets anything for the session (`SET` without `LOCAL`, `RESET`, `DISCARD`), the role or the
  session user (`SET [LOCAL] ROLE`, `SET [LOCAL] SESSION AUTHORIZATION`), the JWT claims
  (`SET LOCAL request.jwt...`), the transaction's mode (`SET TRANSACTION`) or how string
  literals are read (`SET LOCAL standard_conforming_strings`, which would make this reader and
  Postgres disagree on where a string ends);
* calls `set_config` (which can do all of the above) or a built-in that runs SQL given as text
  (`query_to_xml` and its siblings, `ts_stat`, `ts_rewrite`), runs an anonymous block (`DO`) or
  defines a function or procedure (`CREATE FUNCTION` / `PROCEDURE`, e.g. in `pg_temp`), whose
  body could;
* copies (`COPY`): never needed by a tool, and its streams bypass the cursor's checks;
* holds a Unicode escape (`U&"..."` or `U&'...'`): an escaped name (`U&"set\\005fconfig"`)
  would hide what it names, so escapes are refused rather than decoded (no tool writes them;
  psycopg never produces them).

`SET LOCAL` of anything else (`statement_timeout`, ...) and `SET CONSTRAINTS` are allowed.
Names are read as Postgres reads them: any non-ASCII character is part of a name (so `é$$`
does not open a dollar quote), and an `E'...'` string continued on the next line
(`E'a'` newline `'b'`) keeps its backslash escapes. Standard-conforming strings are assumed
(the Postgres default, and Supabase's); `database.py` refuses a unit where they are off.

What this reader cannot see is what runs server-side from text it was never shown (a function
that already exists and runs SQL it builds): the end of every unit resets the session
(`database.RESET_SESSION`), and Parley's own functions in `parley_private` are not executable
by `authenticated` (docs/security.md).
"""

from __future__ import annotations

import re

from shared.kernel.errors import AppError

TRANSACTION_CONTROL = frozenset(
    {"begin", "start", "commit", "end", "rollback", "abort", "savepoint", "release", "prepare"}
)
SESSION_STATEMENTS = frozenset({"reset", "discard", "do"})
LOCAL_ONLY_FORBIDDEN = frozenset(
    {"role", "session", "session_authorization", "request", "transaction"}
)
LEXER_SETTINGS = frozenset({"standard_conforming_strings"})
FORBIDDEN_CALLS = frozenset(
    {
        "set_config",
        # Built-ins that run the SQL text they are given, where this reader cannot see it.
        "query_to_xml",
        "query_to_xmlschema",
        "query_to_xml_and_xmlschema",
        "ts_stat",
        "ts_rewrite",
    }
)
CODE_DEFINITIONS = frozenset({"function", "procedure"})
UNICODE_ESCAPE = "\x00U&"
"""The word `statements` records where a `U&"..."` or `U&'...'` escape starts (no name holds a
NUL, so no name reads as it)."""

# Postgres's lexer counts every byte >= 0x80 as a letter of a name (or of a dollar-quote tag):
# in UTF-8, every non-ASCII character. The classes are written as "not these ASCII characters"
# (a letter: not 0x00-@, [-^, ` or {-0x7f): the same sets as `[A-Za-z_\x80-\U0010ffff]` and
# its variants, checked over every code point, but a range up to U+10FFFF costs ~5 ms each to
# compile, at import, on every cold start.
_LETTER = r"[^\x00-@\[-^`{-\x7f]"
_LETTER_OR_DIGIT = r"[^\x00-/:-@\[-^`{-\x7f]"
_LETTER_DIGIT_OR_DOLLAR = r"[^\x00-#%-/:-@\[-^`{-\x7f]"
_DOLLAR_TAG = re.compile(rf"\$(?:{_LETTER}{_LETTER_OR_DIGIT}*)?\$")
_WORD = re.compile(rf"{_LETTER}{_LETTER_DIGIT_OR_DOLLAR}*")
# What may separate two parts of one string literal: whitespace holding a newline, and `--`
# comments (Postgres's `quotecontinue`). The next part keeps the first's escape rules.
_LINE_END = re.compile(r"[\n\r]")  # a `--` comment ends at either
_CONTINUATION = re.compile(r"(?:[ \t\f\v]|--[^\n\r]*)*[\n\r](?:[ \t\n\r\f\v]|--[^\n\r]*[\n\r])*'")


class StatementRefused(AppError):
    """A user's unit of work tried a statement that would escape its transaction or identity."""

    title = "Statement refused"


def check_user_statement(text: str) -> None:
    """Raise `StatementRefused` if any statement of `text` may not run in a user's unit."""
    for words in statements(text):
        reason = _refusal(words)
        if reason is not None:
            shown = " ".join(words[:4]).upper()
            raise StatementRefused(f"not allowed in a user's unit of work: {shown}… ({reason})")


def _refusal(words: list[str]) -> str | None:
    if not words:
        return None
    first = words[0]
    if first in TRANSACTION_CONTROL:
        return "transaction control"
    if first in SESSION_STATEMENTS:
        return "changes the session"
    if UNICODE_ESCAPE in words:
        return "Unicode escapes (U&\"...\" and U&'...') are not read by the check"
    if first == "copy":
        return "COPY is not used by tools"
    if first == "create" and CODE_DEFINITIONS & set(words[1:4]):
        return "defines code the check cannot read"
    if first == "set":
        second = words[1] if len(words) > 1 else ""
        if second == "constraints":
            return None
        if second != "local":
            return "only SET LOCAL is allowed"
        setting = words[2].lower().split(".")[0] if len(words) > 2 else ""  # GUC names: any case
        if setting in LOCAL_ONLY_FORBIDDEN:
            return "changes the role, the session user, the claims or the transaction mode"
        if setting in LEXER_SETTINGS:
            return "changes how string literals are read"
    if any(word in FORBIDDEN_CALLS for word in words):
        return "set_config, or SQL run from text, can change the role and the claims"
    return None


def statements(text: str) -> list[list[str]]:
    """The words of each statement of `text`: keywords and names lower-cased, quoted names as
    written; string literals, dollar-quoted bodies, comments and punctuation left out."""
    found: list[list[str]] = [[]]
    i, n = 0, len(text)
    word_end, word = -1, ""  # the last name read, and where it ended: `E'...'` / `U&"..."`
    while i < n:
        c = text[i]
        if c == ";":
            found.append([])
            i += 1
        elif text.startswith("--", i):
            line_end = _LINE_END.search(text, i)
            i = n if line_end is None else line_end.end()
        elif text.startswith("/*", i):
            i = _skip_block_comment(text, i)
        elif c == "'":
            escaped = word_end == i and word in ("e", "E")
            i = _skip_string(text, i, backslashes=escaped)
        elif c == '"':
            i, name = _quoted_name(text, i)
            found[-1].append(name)
        elif c == "$" and (tag := _DOLLAR_TAG.match(text, i)):
            end = text.find(tag.group(), tag.end())
            i = n if end < 0 else end + len(tag.group())
        elif read := _WORD.match(text, i):
            # Every name is read whole, so a letter reached here starts one (after a digit
            # too: `1set_config` is read as two words, as older Postgres lexes it).
            word, word_end = read.group(), read.end()
            if word in ("u", "U") and text[word_end : word_end + 2] in ("&'", '&"'):
                found[-1].append(UNICODE_ESCAPE)
            found[-1].append(word.lower())
            i = word_end
        else:
            i += 1
    return [words for words in found if words]


def _skip_block_comment(text: str, i: int) -> int:
    depth = 0
    while i < len(text):
        if text.startswith("/*", i):
            depth += 1
            i += 2
        elif text.startswith("*/", i):
            depth -= 1
            i += 2
            if depth == 0:
                return i
        else:
            i += 1
    return i


def _skip_string(text: str, i: int, *, backslashes: bool) -> int:
    i += 1
    while i < len(text):
        c = text[i]
        if backslashes and c == "\\":
            i += 2
        elif c == "'":
            if text.startswith("''", i):
                i += 2
            elif more := _CONTINUATION.match(text, i + 1):
                i = more.end()  # the literal goes on after the newline, with the same escapes
            else:
                return i + 1
        else:
            i += 1
    return i


def _quoted_name(text: str, i: int) -> tuple[int, str]:
    name: list[str] = []
    i += 1
    while i < len(text):
        if text.startswith('""', i):
            name.append('"')
            i += 2
        elif text[i] == '"':
            return i + 1, "".join(name)
        else:
            name.append(text[i])
            i += 1
    return i, "".join(name)
