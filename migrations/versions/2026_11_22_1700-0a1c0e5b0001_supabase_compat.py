"""Supabase compatibility: on plain Postgres, create what a Supabase project already has.

Roles `anon`, `authenticated`, `service_role`; schema `auth` with a minimal `auth.users` and
`auth.uid()`, `auth.role()`, `auth.jwt()` reading `request.jwt.claims`; schema `extensions`
with pg_trgm; the `supabase_realtime` publication. Every object is created only if missing, so
on a real Supabase project this revision changes nothing. What it creates is marked with a
comment, and the downgrade drops only marked objects. Roles are cluster-wide and shared by every
database on the server, so the downgrade leaves them in place.

Revision ID: 0a1c0e5b0001
Revises:
Create Date: 2026-11-22 17:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0a1c0e5b0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

MARK = "created by parley supabase-compat"

UPGRADE = f"""
DO $compat$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'anon') THEN
        CREATE ROLE anon NOLOGIN NOINHERIT;
        EXECUTE 'GRANT anon TO ' || quote_ident(current_user);
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'authenticated') THEN
        CREATE ROLE authenticated NOLOGIN NOINHERIT;
        EXECUTE 'GRANT authenticated TO ' || quote_ident(current_user);
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'service_role') THEN
        CREATE ROLE service_role NOLOGIN NOINHERIT BYPASSRLS;
        EXECUTE 'GRANT service_role TO ' || quote_ident(current_user);
    END IF;

    IF NOT EXISTS (SELECT FROM pg_namespace WHERE nspname = 'auth') THEN
        CREATE SCHEMA auth;
        COMMENT ON SCHEMA auth IS '{MARK}';
        GRANT USAGE ON SCHEMA auth TO anon, authenticated, service_role;
    END IF;

    IF to_regclass('auth.users') IS NULL THEN
        CREATE TABLE auth.users (
            id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
            email text UNIQUE,
            raw_app_meta_data jsonb NOT NULL DEFAULT '{{}}',
            raw_user_meta_data jsonb NOT NULL DEFAULT '{{}}',
            created_at timestamptz NOT NULL DEFAULT now(),
            updated_at timestamptz NOT NULL DEFAULT now()
        );
        COMMENT ON TABLE auth.users IS '{MARK}';
    END IF;

    IF to_regprocedure('auth.jwt()') IS NULL THEN
        CREATE FUNCTION auth.jwt() RETURNS jsonb LANGUAGE sql STABLE AS $fn$
            SELECT coalesce(
                nullif(current_setting('request.jwt.claim', true), ''),
                nullif(current_setting('request.jwt.claims', true), '')
            )::jsonb
        $fn$;
        COMMENT ON FUNCTION auth.jwt() IS '{MARK}';
    END IF;

    IF to_regprocedure('auth.uid()') IS NULL THEN
        CREATE FUNCTION auth.uid() RETURNS uuid LANGUAGE sql STABLE AS $fn$
            SELECT coalesce(
                nullif(current_setting('request.jwt.claim.sub', true), ''),
                (nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub')
            )::uuid
        $fn$;
        COMMENT ON FUNCTION auth.uid() IS '{MARK}';
    END IF;

    IF to_regprocedure('auth.role()') IS NULL THEN
        CREATE FUNCTION auth.role() RETURNS text LANGUAGE sql STABLE AS $fn$
            SELECT coalesce(
                nullif(current_setting('request.jwt.claim.role', true), ''),
                (nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'role')
            )::text
        $fn$;
        COMMENT ON FUNCTION auth.role() IS '{MARK}';
    END IF;

    IF NOT EXISTS (SELECT FROM pg_namespace WHERE nspname = 'extensions') THEN
        CREATE SCHEMA extensions;
        COMMENT ON SCHEMA extensions IS '{MARK}';
        GRANT USAGE ON SCHEMA extensions TO anon, authenticated, service_role;
    END IF;

    IF NOT EXISTS (SELECT FROM pg_publication WHERE pubname = 'supabase_realtime') THEN
        CREATE PUBLICATION supabase_realtime;
        COMMENT ON PUBLICATION supabase_realtime IS '{MARK}';
    END IF;
END
$compat$;

CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA extensions;
GRANT USAGE ON SCHEMA public TO anon, authenticated, service_role;
"""

DOWNGRADE = f"""
DO $compat$
BEGIN
    IF (SELECT obj_description(oid, 'pg_publication') FROM pg_publication
         WHERE pubname = 'supabase_realtime') = '{MARK}' THEN
        DROP PUBLICATION supabase_realtime;
    END IF;

    IF to_regnamespace('extensions') IS NOT NULL
       AND obj_description(to_regnamespace('extensions'), 'pg_namespace') = '{MARK}' THEN
        IF (SELECT extnamespace FROM pg_extension WHERE extname = 'pg_trgm')
           = to_regnamespace('extensions') THEN
            DROP EXTENSION pg_trgm;
        END IF;
        DROP SCHEMA extensions;
    END IF;

    IF to_regnamespace('auth') IS NOT NULL
       AND obj_description(to_regnamespace('auth'), 'pg_namespace') = '{MARK}' THEN
        DROP SCHEMA auth CASCADE;
    END IF;
END
$compat$;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
