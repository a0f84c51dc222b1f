"""Nothing internal in an exposed schema: Parley's functions move to `parley_private`.

On Supabase the Data API serves `public`, and the default privileges give `anon` and
`authenticated` EXECUTE on every function created there (explicit grants that `REVOKE ... FROM
PUBLIC` does not remove). `allocate_session_seq` is SECURITY DEFINER: through
`/rest/v1/rpc/allocate_session_seq` anyone with the anon key could rewind any session's counter
(the service's next insert then fails) or probe which session ids exist. Supabase's guidance is
to keep such functions out of exposed schemas, so every Parley function moves to the private
schema `parley_private` — the Data API does not serve it — and keeps only the grants it needs:

* `set_updated_at`, `assign_session_seq` (triggers) and `allocate_session_seq` (the service's
  sequence): no client role may execute them. Triggers fire whoever inserts; the service
  calls `allocate_session_seq` as the owner.
* `<table>_matching` (trigram lookups that tools run as the user): `authenticated` only, which
  therefore has USAGE on the schema. `anon` has none.

Alembic's version table is in this schema too (`migrations/env.py` creates the schema and moves
an existing `public.alembic_version` before Alembic reads it), so the downgrade moves the
functions back but leaves the schema.

Revision ID: 9b1e6c4d0401
Revises: 6c2f8e4a0401
Create Date: 2026-11-25 09:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "9b1e6c4d0401"
down_revision: str | None = "6c2f8e4a0401"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SEARCHES = ("projects", "tasks", "notes", "brain_dumps")
INTERNAL = ("set_updated_at()", "allocate_session_seq(uuid, integer)", "assign_session_seq()")
MATCHING = tuple(f"{table}_matching(text)" for table in SEARCHES)

ASSIGN_SEQ = """
CREATE OR REPLACE FUNCTION {schema}.assign_session_seq() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    NEW.seq := {schema}.allocate_session_seq(NEW.session_id, 1);
    RETURN NEW;
END
$$;
"""


def _move(functions: Sequence[str], source: str, target: str) -> str:
    return "\n".join(f"ALTER FUNCTION {source}.{f} SET SCHEMA {target};" for f in functions)


def _revoke(functions: Sequence[str], schema: str) -> str:
    return "\n".join(
        f"REVOKE ALL ON FUNCTION {schema}.{f} FROM PUBLIC, anon, authenticated, service_role;"
        for f in functions
    )


UPGRADE = f"""
DO $schema$
BEGIN
    IF to_regnamespace('parley_private') IS NULL THEN  -- made by env.py, unless run offline
        CREATE SCHEMA parley_private;
    END IF;
END
$schema$;
COMMENT ON SCHEMA parley_private IS
    'Parley internals. Keep it out of the Data API''s exposed schemas.';
REVOKE ALL ON SCHEMA parley_private FROM PUBLIC;
GRANT USAGE ON SCHEMA parley_private TO authenticated;

{_move(INTERNAL + MATCHING, "public", "parley_private")}
{ASSIGN_SEQ.format(schema="parley_private")}
{_revoke(INTERNAL + MATCHING, "parley_private")}
GRANT EXECUTE ON FUNCTION {", ".join(f"parley_private.{f}" for f in MATCHING)} TO authenticated;
"""

DOWNGRADE = f"""
{_move(INTERNAL + MATCHING, "parley_private", "public")}
{ASSIGN_SEQ.format(schema="public")}
GRANT EXECUTE ON FUNCTION public.allocate_session_seq(uuid, integer) TO service_role;
GRANT EXECUTE ON FUNCTION {", ".join(f"public.{f}" for f in MATCHING)}
    TO authenticated, service_role;
REVOKE USAGE ON SCHEMA parley_private FROM authenticated;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
