"""Counting what a unit of work sends to Postgres, on a server of its own that logs it all.

A dedicated embedded cluster (`logging_server`) logs every statement (`log_statement = all`)
with the client's `application_name` and the virtual transaction id; `read_log` reads back what
one application sent since an offset of the log: each statement (a `BEGIN` and a `COMMIT` are
statements — round trips) and each distinct transaction (a statement sent outside one is one).
The statement-count test and `bench.sql_per_turn` share it. It always starts its own cluster:
`log_statement` and the log's prefix are server-wide settings, not a test database's.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from local.postgres import start_embedded

PREFIX = "parley|"
_LINE = re.compile(r"^parley\|(?P<app>[^|]*)\|(?P<vxid>[^|]*)\|\s*LOG:\s+(?P<what>.*)$")
_STATEMENT = re.compile(r"^(?:statement|execute [^:]*): (?P<sql>.*)$")
_WRITE = re.compile(r"^\s*(?:WITH\b.*?\b)?(INSERT|UPDATE|DELETE)\b", re.IGNORECASE | re.DOTALL)


@dataclass
class Statements:
    """What one application sent: (virtual transaction id, statement text), in order."""

    sent: list[tuple[str, str]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.sent)

    @property
    def transactions(self) -> int:
        return len({vxid for vxid, _ in self.sent})

    @property
    def bracketing(self) -> int:
        """`BEGIN`s, `COMMIT`s and `ROLLBACK`s."""
        return sum(1 for _, s in self.sent if _verb(s) in ("BEGIN", "COMMIT", "ROLLBACK"))

    @property
    def writes(self) -> int:
        return sum(1 for _, s in self.sent if _WRITE.match(s))

    def repeated(self, n: int) -> list[tuple[int, str]]:
        """The `n` statements sent most often (more than once), as (count, text cut short)."""
        counts = Counter(" ".join(s.split())[:110] for _, s in self.sent)
        return [(c, s) for s, c in counts.most_common(n) if c > 1]


def _verb(sql: str) -> str:
    return sql.strip().split(None, 1)[0].rstrip(";").upper() if sql.strip() else ""


def logging_server(folder: Path) -> tuple[str, Path]:
    """A fresh embedded cluster in `folder` logging every statement: (maintenance URL, log)."""
    url = start_embedded(folder)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET log_statement = 'all'")
        conn.execute(f"ALTER SYSTEM SET log_line_prefix = '{PREFIX}%a|%v| '")
        conn.execute("SELECT pg_reload_conf()")
    return url, folder / "postgres" / "log"


def log_size(log: Path) -> int:
    """Where the log ends now (read what follows with `read_log`)."""
    return log.stat().st_size


def read_log(log: Path, start: int, application: str) -> Statements:
    """The statements `application` sent since byte `start` of the log (a statement's text may
    run over several lines)."""
    statements = Statements()
    with log.open("r", errors="replace") as f:
        f.seek(start)
        lines = f.read().splitlines()
    entry: tuple[str, list[str]] | None = None
    for line in [*lines, f"{PREFIX}|| LOG:  end"]:  # the sentinel flushes the last entry
        match = _LINE.match(line)
        if match is None:
            if entry is not None and not line.startswith(PREFIX):
                entry[1].append(line.strip())
            continue
        if entry is not None:
            statements.sent.append((entry[0], " ".join(entry[1])))
            entry = None
        found = _STATEMENT.match(match["what"])
        if match["app"] == application and found is not None:
            entry = (match["vxid"], [found["sql"]])
    return statements
