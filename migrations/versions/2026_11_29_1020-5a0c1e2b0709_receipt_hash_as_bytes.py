"""A write receipt's hash as its 32 bytes, not 64 hex characters.

`parley_private.tool_call_receipts.call_hash` (SHA-256 of the call's tool and canonical
arguments, part of the receipt's key) was stored as hex text: 65 bytes in the row and again in
the key's index. It is `bytea` now (33 bytes in each); existing receipts are converted in
place (a receipt lives `RETENTION_RECEIPTS_DAYS`, 7 by default: the table is small).

Revision ID: 5a0c1e2b0709
Revises: 5a0c1e2b0708
Create Date: 2026-11-29 10:20:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "5a0c1e2b0709"
down_revision: str | None = "5a0c1e2b0708"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "parley_private.tool_call_receipts"
CHECK = "tool_call_receipts_call_hash_check"


def upgrade() -> None:
    op.execute(
        f"""ALTER TABLE {TABLE}
                DROP CONSTRAINT {CHECK},
                ALTER COLUMN call_hash TYPE bytea USING decode(call_hash, 'hex'),
                ADD CONSTRAINT {CHECK} CHECK (octet_length(call_hash) = 32)"""
    )


def downgrade() -> None:
    op.execute(
        f"""ALTER TABLE {TABLE}
                DROP CONSTRAINT {CHECK},
                ALTER COLUMN call_hash TYPE text USING encode(call_hash, 'hex'),
                ADD CONSTRAINT {CHECK} CHECK (char_length(call_hash) = 64)"""
    )
