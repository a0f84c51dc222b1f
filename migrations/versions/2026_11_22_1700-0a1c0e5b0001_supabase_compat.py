"""Supabase compatibility: on plain Postgres, create what a Supabase project already has.

Roles `anon`, `authenticated`, `service_role`; schema `auth` with a minimal `auth.users` and
`auth.uid()`, `auth.role()`, `auth.jwt()` reading `request.jwt.claims`; schema `extensions`
with pg_trgm; the `supabase_realtime` publication. Every object is created only if missing, so
on a real Supabase project this revision changes nothing. What it creates is marked with a
comment, and the downgrade drops only marked objects. Roles are cluster-wide and shared by every
database on the server, so the downgrade leaves them in place.

Creating `service_role` (BYPASSRLS) needs a superuser on PostgreSQL 15, or CREATEROLE and
BYPASSRLS on 16 and newer; managed servers (RDS, Cloud SQL, Neon…) rarely give the migrating
role that. Then this revision stops before changing anything, with the statements an
administrator runs once per server. The migrating role must also be a member of the three roles
(Supabase grants them to `postgres`): the service switches to `authenticated` for user work.

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

ROLES = """
DO $roles$
DECLARE
    wanted constant text[] := ARRAY['anon', 'authenticated', 'service_role'];
    attributes constant text[] := ARRAY['NOLOGIN NOINHERIT', 'NOLOGIN NOINHERIT',
                                        'NOLOGIN NOINHERIT BYPASSRLS'];
    missing text[] := ARRAY[]::text[];
    setup text := '';
    api_role text;
BEGIN
    FOR i IN 1 .. cardinality(wanted) LOOP
        api_role := wanted[i];
        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = api_role) THEN
            missing := missing || api_role;
            setup := setup || format(E'\n    CREATE ROLE %I %s;', api_role, attributes[i]);
        ELSIF NOT pg_has_role(current_user, api_role, 'MEMBER') THEN
            missing := missing || api_role;
        END IF;
    END LOOP;
    IF cardinality(missing) = 0 THEN
        RETURN;
    END IF;
    setup := setup || format(E'\n    GRANT %s TO %I;', array_to_string(missing, ', '),
                             current_user);
    BEGIN
        FOR i IN 1 .. cardinality(wanted) LOOP
            api_role := wanted[i];
            IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = api_role) THEN
                EXECUTE format('CREATE ROLE %I %s', api_role, attributes[i]);
            END IF;
            IF NOT pg_has_role(current_user, api_role, 'MEMBER') THEN
                EXECUTE format('GRANT %I TO %I', api_role, current_user);
            END IF;
        END LOOP;
    EXCEPTION WHEN insufficient_privilege THEN
        RAISE EXCEPTION USING
            ERRCODE = 'insufficient_privilege',
            MESSAGE = format('Parley needs Supabase''s roles anon, authenticated and '
                             || 'service_role, and %I cannot create or join %s (%s).',
                             current_user, array_to_string(missing, ', '), SQLERRM),
            HINT = 'Ask an administrator (a superuser; on PostgreSQL 16 and newer a role with '
                   || 'CREATEROLE and BYPASSRLS will do) to run, once per server:' || setup
                   || E'\nthen run the migrations again.';
    END;
END
$roles$;
"""

UPGRADE = f"""
DO $compat$
BEGIN

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
    op.execute(ROLES)
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
