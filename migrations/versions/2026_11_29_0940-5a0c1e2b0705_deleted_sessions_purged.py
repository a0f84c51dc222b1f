"""Deleted sessions go for good: an index for the sweeper to find them by.

`DELETE /sessions/{id}` marks a session `deleted` (every route then answers 404 for it); its
rows stayed forever. The sweeper now deletes such a session with everything of it
`RETENTION_DELETED_SESSIONS_DAYS` days after it was deleted (`shared/db/retention_batches.py`),
finding the sessions deleted longest ago through this partial index — one entry per deleted
session still held, none for the others.

A deployment upgrading: sessions its users deleted more than the setting's days ago (all of
them, when nobody had removed them by hand) go over the sweeps after the upgrade, a batch of
turns a statement. To keep them, set `RETENTION_DELETED_SESSIONS_DAYS=0` before upgrading.

Revision ID: 5a0c1e2b0705
Revises: 5a0c1e2b0704
Create Date: 2026-11-29 09:40:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "5a0c1e2b0705"
down_revision: str | None = "5a0c1e2b0704"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute(
        "CREATE INDEX chat_sessions_deleted_idx ON chat_sessions (updated_at) "
        "WHERE status = 'deleted'"
    )


def downgrade() -> None:
    op.execute("DROP INDEX chat_sessions_deleted_idx")
