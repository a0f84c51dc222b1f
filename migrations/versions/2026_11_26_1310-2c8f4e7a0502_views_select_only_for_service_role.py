"""`service_role` may only read Parley's views, on Supabase as on plain Postgres.

Revision 0a1c0e5b0004 granted `service_role` `SELECT` on the four views. On a Supabase project
the owner's default privileges (`GRANT ALL ON TABLES ... TO anon, authenticated, service_role`,
which covers views) had already given it `ALL`: `INSERT`, `UPDATE`, `DELETE`, `TRUNCATE`,
`REFERENCES`, `TRIGGER` (and `MAINTAIN` on PostgreSQL 17+) as well. None of them is usable on
these views as they stand (not updatable; `service_role` already holds `ALL` on the tables
behind them), but `TRIGGER` would let it attach an `INSTEAD OF` trigger, and the two kinds of
database should not differ: now it is `SELECT` on both (`anon` and `authenticated` keep what
0a1c0e5b0004 left them: nothing, and `SELECT` on `session_timeline`).

Downgrade changes nothing: `SELECT` is what plain Postgres had before, and less than Supabase
had, which Parley never used.

Revision ID: 2c8f4e7a0502
Revises: 2c8f4e7a0501
Create Date: 2026-11-26 13:10:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "2c8f4e7a0502"
down_revision: str | None = "2c8f4e7a0501"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

VIEWS = ", ".join(
    f"public.{view}"
    for view in (
        "execution_stats_daily",
        "plan_outcomes_daily",
        "permission_denials_daily",
        "session_timeline",
    )
)


def upgrade() -> None:
    op.execute(f"REVOKE ALL ON {VIEWS} FROM service_role; GRANT SELECT ON {VIEWS} TO service_role")


def downgrade() -> None:
    pass
