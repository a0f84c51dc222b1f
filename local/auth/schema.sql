-- What the Auth twin needs of GoTrue's schema, installed at start when `auth.users` is Parley's
-- plain-Postgres stand-in (the supabase-compat migration marks it). Columns, types and keys are
-- GoTrue's (github.com/supabase/auth, migrations/): 00_init_auth_schema (users, refresh_tokens),
-- 20210710035447_alter_users, 20210722035447_adds_confirmed_at (confirmed_at generated),
-- 20210909172000_create_identities_table, 20210927181326_add_refresh_token_parent,
-- 20220114185340_add_banned_until, 20220811173540_add_sessions_table,
-- 20221003041400_add_aal_and_factor_id_to_sessions, 20221215195800_add_identities_email_column,
-- 20230116124412_add_deleted_at, 20231027141322_add_session_refresh_columns,
-- 20231117164230_add_id_pkey_identities, 20240214120130_add_is_anonymous_column.
-- On a real Supabase database none of this runs: GoTrue's own tables are there.
DO $auth_twin$
BEGIN
    IF obj_description('auth.users'::regclass, 'pg_class') IS DISTINCT FROM
       'created by parley supabase-compat' THEN
        RETURN;
    END IF;

    ALTER TABLE auth.users
        ADD COLUMN IF NOT EXISTS instance_id uuid,
        ADD COLUMN IF NOT EXISTS aud varchar(255),
        ADD COLUMN IF NOT EXISTS role varchar(255),
        ADD COLUMN IF NOT EXISTS encrypted_password varchar(255),
        ADD COLUMN IF NOT EXISTS email_confirmed_at timestamptz,
        ADD COLUMN IF NOT EXISTS invited_at timestamptz,
        ADD COLUMN IF NOT EXISTS confirmation_sent_at timestamptz,
        ADD COLUMN IF NOT EXISTS phone text DEFAULT NULL,
        ADD COLUMN IF NOT EXISTS phone_confirmed_at timestamptz,
        ADD COLUMN IF NOT EXISTS last_sign_in_at timestamptz,
        ADD COLUMN IF NOT EXISTS is_super_admin bool,
        ADD COLUMN IF NOT EXISTS banned_until timestamptz,
        ADD COLUMN IF NOT EXISTS deleted_at timestamptz,
        ADD COLUMN IF NOT EXISTS is_sso_user boolean NOT NULL DEFAULT false,
        ADD COLUMN IF NOT EXISTS is_anonymous boolean NOT NULL DEFAULT false;
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'auth.users'::regclass
                   AND attname = 'confirmed_at' AND NOT attisdropped) THEN
        ALTER TABLE auth.users ADD COLUMN confirmed_at timestamptz
            GENERATED ALWAYS AS (LEAST(email_confirmed_at, phone_confirmed_at)) STORED;
    END IF;

    CREATE TABLE IF NOT EXISTS auth.identities (
        provider_id text NOT NULL,
        user_id uuid NOT NULL REFERENCES auth.users (id) ON DELETE CASCADE,
        identity_data jsonb NOT NULL,
        provider text NOT NULL,
        last_sign_in_at timestamptz,
        created_at timestamptz,
        updated_at timestamptz,
        email text GENERATED ALWAYS AS (lower(identity_data ->> 'email')) STORED,
        id uuid NOT NULL DEFAULT gen_random_uuid() PRIMARY KEY,
        CONSTRAINT identities_provider_id_provider_unique UNIQUE (provider_id, provider)
    );
    CREATE INDEX IF NOT EXISTS identities_user_id_idx ON auth.identities (user_id);

    CREATE TABLE IF NOT EXISTS auth.sessions (
        id uuid NOT NULL PRIMARY KEY,
        user_id uuid NOT NULL REFERENCES auth.users (id) ON DELETE CASCADE,
        created_at timestamptz,
        updated_at timestamptz,
        factor_id uuid,
        aal text,
        not_after timestamptz,
        refreshed_at timestamp,
        user_agent text,
        ip inet,
        tag text
    );
    CREATE INDEX IF NOT EXISTS sessions_user_id_idx ON auth.sessions (user_id);

    CREATE TABLE IF NOT EXISTS auth.refresh_tokens (
        instance_id uuid,
        id bigserial PRIMARY KEY,
        token varchar(255),
        user_id varchar(255),
        revoked bool,
        created_at timestamptz,
        updated_at timestamptz,
        parent varchar(255),
        session_id uuid REFERENCES auth.sessions (id) ON DELETE CASCADE,
        CONSTRAINT refresh_tokens_token_unique UNIQUE (token)
    );
    CREATE INDEX IF NOT EXISTS refresh_tokens_parent_idx ON auth.refresh_tokens (parent);
    CREATE INDEX IF NOT EXISTS refresh_tokens_session_id_revoked_idx
        ON auth.refresh_tokens (session_id, revoked);

    CREATE TABLE IF NOT EXISTS auth.mfa_amr_claims (
        session_id uuid NOT NULL REFERENCES auth.sessions (id) ON DELETE CASCADE,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        authentication_method text NOT NULL,
        id uuid NOT NULL PRIMARY KEY,
        CONSTRAINT mfa_amr_claims_session_id_authentication_method_pkey
            UNIQUE (session_id, authentication_method)
    );
END
$auth_twin$;
