"""What SQL a user's unit of work may send: nothing that leaves its transaction, role or claims.

`Database.as_user` runs as `authenticated` with the user's claims, `SET LOCAL` inside one
transaction (read-only for read tools). A statement that ends that transaction, changes the
role or the claims, or sets anything beyond the transaction would get out of the user's
RLS-limited view, or leave state on the pooled connection for the next unit of work. Tool code
is trusted, so this is defence in depth: each statement is read (comments, strings and quoted
names understood) and refused before it is sent if it

* controls the transaction (`BEGIN`, `COMMIT`, `ROLLBACK`, `SAVEPOINT`, `PREPARE`, ...);
* sets anything for the session (`SET` without `LOCAL`, `RESET`, `DISCARD`), the role or the
  session user (`SET [LOCAL] ROLE`, `SET [LOCAL] SESSION AUTHORIZATION`), the JWT claims
  (`SET LOCAL request.jwt...`) or the transaction's mode (`SET TRANSACTION`);
* calls `set_config` (which can do all of the above), or runs an anonymous block (`DO`),
  whose body could.

`SET LOCAL` of anything else (`statement_timeout`, ...) and `SET CONSTRAINTS` are allowed.
"""

from __future__ import annotations

import re

from shared.errors import AppError

TRANSACTION_CONTROL = frozenset(
    {"begin", "start", "commit", "end", "rollback", "abort", "savepoint", "release", "prepare"}
)
SESSION_STATEMENTS = frozenset({"reset", "discard", "do"})
LOCAL_ONLY_FORBIDDEN = frozenset(
    {"role", "session", "session_authorization", "request", "transaction"}
)
FORBIDDEN_CALLS = frozenset({"set_config"})

_DOLLAR_TAG = re.compile(r"\$(?:[A-Za-z_][A-Za-z_0-9]*)?\$")
_WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9$]*")


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
    if first == "set":
        second = words[1] if len(words) > 1 else ""
        if second == "constraints":
            return None
        if second != "local":
            return "only SET LOCAL is allowed"
        setting = words[2].lower().split(".")[0] if len(words) > 2 else ""  # GUC names: any case
        if setting in LOCAL_ONLY_FORBIDDEN:
            return "changes the role, the session user, the claims or the transaction mode"
    if any(word in FORBIDDEN_CALLS for word in words):
        return "set_config can change the role and the claims"
    return None


def statements(text: str) -> list[list[str]]:
    """The words of each statement of `text`: keywords and names lower-cased, quoted names as
    written; string literals, dollar-quoted bodies, comments and punctuation left out."""
    found: list[list[str]] = [[]]
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == ";":
            found.append([])
            i += 1
        elif text.startswith("--", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif text.startswith("/*", i):
            i = _skip_block_comment(text, i)
        elif c == "'":
            escaped = i > 0 and text[i - 1] in "eE" and (i < 2 or not _is_word(text[i - 2]))
            i = _skip_string(text, i, backslashes=escaped)
        elif c == '"':
            i, name = _quoted_name(text, i)
            found[-1].append(name)
        elif c == "$" and (tag := _DOLLAR_TAG.match(text, i)):
            end = text.find(tag.group(), tag.end())
            i = n if end < 0 else end + len(tag.group())
        elif (word := _WORD.match(text, i)) and (i == 0 or not _is_word(text[i - 1])):
            found[-1].append(word.group().lower())
            i = word.end()
        else:
            i += 1
    return [words for words in found if words]


def _is_word(c: str) -> bool:
    return c.isalnum() or c in "_$"


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
