"""Run Alembic from code (the local stack and the tests); `alembic upgrade head` does the same."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

ALEMBIC_INI = Path(__file__).resolve().parents[1] / "alembic.ini"


def alembic_config(url: str) -> Config:
    """An Alembic config bound to `url` (takes precedence over DATABASE_URL)."""
    config = Config(str(ALEMBIC_INI))
    config.attributes["url"] = url
    return config


def upgrade(url: str, revision: str = "head") -> None:
    """Migrate the database at `url` up to `revision`."""
    command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str = "base") -> None:
    """Migrate the database at `url` down to `revision`."""
    command.downgrade(alembic_config(url), revision)
