"""Text search that can use the trigram indexes under RLS.

Under row level security Postgres evaluates the policy's quals before any qual of the query
that is not LEAKPROOF, and `ILIKE` (like every pg_trgm operator) is not: so for the
`authenticated` role a search predicate can never become an index condition, and the GIN
trigram indexes of 0a1c0e5b0003 sit unused (the planner walks the user's rows instead).
Marking the operators LEAKPROOF needs a superuser, which Supabase does not grant.

These functions run one trigram lookup as their owner (no RLS, so the index applies), limited
explicitly to `auth.uid()`'s rows, and return only ids. The caller's own query then reads the
rows through RLS as before, so even a wrong id from here could not reveal another user's row.
Each predicate is spelled exactly like its index expression.

Revision ID: 5e7a2b9c0101
Revises: 0a1c0e5b0004
Create Date: 2026-11-22 18:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "5e7a2b9c0101"
down_revision: str | None = "0a1c0e5b0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SEARCHES = {
    "projects": "name || ' ' || description || ' ' || executive_summary",
    "tasks": "title || ' ' || description",
    "notes": "title || ' ' || content",
    "brain_dumps": "title || ' ' || content",
}

FUNCTION = """
CREATE FUNCTION public.{table}_matching(pattern text) RETURNS SETOF uuid
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = '' ROWS 20 AS $$
    SELECT id FROM public.{table}
    WHERE user_id = (SELECT auth.uid()) AND ({expression}) ILIKE pattern
$$;
COMMENT ON FUNCTION public.{table}_matching(text) IS
    'Ids of the calling user''s {table} whose searchable text matches the ILIKE pattern '
    '(uses the trigram index, which RLS would rule out). Read the rows themselves under RLS.';
REVOKE ALL ON FUNCTION public.{table}_matching(text) FROM PUBLIC, anon;
GRANT EXECUTE ON FUNCTION public.{table}_matching(text) TO authenticated, service_role;
"""


def upgrade() -> None:
    for table, expression in SEARCHES.items():
        op.execute(FUNCTION.format(table=table, expression=expression))


def downgrade() -> None:
    for table in reversed(SEARCHES):
        op.execute(f"DROP FUNCTION public.{table}_matching(text)")
