"""Alembic environment: raw-SQL revisions, URL from DATABASE_URL (or `-x url=...`)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool

from shared.settings import get_settings


def database_url() -> str:
    url = (
        context.config.attributes.get("url")
        or context.get_x_argument(as_dictionary=True).get("url")
        or get_settings().database_url
    )
    if not url:
        raise SystemExit(
            "DATABASE_URL is not set. Export it (your Supabase database URL), "
            "or use `python3 dev.py run`, which migrates the embedded Postgres for you."
        )
    # SQLAlchemy needs the driver named; Parley uses psycopg 3 everywhere.
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url.removeprefix(prefix)
    return url


def run_migrations_offline() -> None:
    context.configure(url=database_url(), literal_binds=True, transaction_per_migration=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    engine = create_engine(
        database_url(), poolclass=pool.NullPool, connect_args={"prepare_threshold": None}
    )
    with engine.connect() as connection:
        context.configure(connection=connection, transaction_per_migration=True)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
