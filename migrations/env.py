"""Alembic environment: raw-SQL revisions, URL from DATABASE_URL (or `-x url=...`).

Alembic's version table lives in the private schema `parley_private`, out of the Data API's
reach (in `public`, Supabase's default privileges would let anyone with the anon key rewrite
it). Alembic reads the version table before any revision runs, so the schema is made here, and
a version table an older Parley left in `public` is moved into it first: otherwise Alembic
would find no version and start again from the first revision.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, create_engine, pool

from shared.services import get_settings

VERSION_SCHEMA = "parley_private"

PREPARE_VERSION_TABLE = """
DO $version$
DECLARE
    api_role text;
BEGIN
    IF to_regnamespace('parley_private') IS NULL THEN
        CREATE SCHEMA parley_private;
    END IF;
    IF to_regclass('public.alembic_version') IS NOT NULL
       AND to_regclass('parley_private.alembic_version') IS NULL THEN
        ALTER TABLE public.alembic_version SET SCHEMA parley_private;
        -- Supabase's default privileges had opened it to the API roles while it was in public.
        REVOKE ALL ON parley_private.alembic_version FROM PUBLIC;
        FOR api_role IN SELECT rolname FROM pg_roles
                         WHERE rolname IN ('anon', 'authenticated', 'service_role') LOOP
            EXECUTE 'REVOKE ALL ON parley_private.alembic_version FROM ' || quote_ident(api_role);
        END LOOP;
    END IF;
END
$version$;
"""


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


def prepare_version_table(connection: Connection) -> None:
    """Make the version table's schema; move a version table left in `public` into it."""
    connection.exec_driver_sql(PREPARE_VERSION_TABLE)
    connection.commit()


def run_migrations_offline() -> None:
    context.configure(
        url=database_url(),
        literal_binds=True,
        transaction_per_migration=True,
        version_table_schema=VERSION_SCHEMA,
    )
    with context.begin_transaction():
        context.execute(PREPARE_VERSION_TABLE)
        context.run_migrations()


def run_migrations_online() -> None:
    engine = create_engine(
        database_url(), poolclass=pool.NullPool, connect_args={"prepare_threshold": None}
    )
    with engine.connect() as connection:
        prepare_version_table(connection)
        context.configure(
            connection=connection,
            transaction_per_migration=True,
            version_table_schema=VERSION_SCHEMA,
        )
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
