"""Leaner turns: what a turn stores once, not twice.

* **A write's receipt names its result's row.** `parley_private.tool_call_receipts` keeps a
  write call's result from the write's own transaction until the row answering the call (the
  planner's `tool` message, an agent's `tool_result`) is stored; the statement storing that row
  clears the receipt's copy when it is exactly what the row holds, and readers take the result
  from the row (`shared/db/receipts.py`). A receipt may so be done (`completed_at`) without a
  `result`: the check that tied them together now only says a result means done.

Deployments upgrading keep their data: receipts written before keep their copies (readers
take either). Downgrade gives every receipt its result again (from its row, or a note that it
is gone when retention deleted the row).

Revision ID: 5a0c1e2b0704
Revises: 5a0c1e2b0703
Create Date: 2026-11-29 09:30:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "5a0c1e2b0704"
down_revision: str | None = "5a0c1e2b0703"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

RECEIPTS = "parley_private.tool_call_receipts"
GONE = '{"done": true, "note": "This call was made earlier; its result is no longer stored."}'
"""The result a receipt gets back on downgrade when its row is gone (`receipts.GONE`)."""

UPGRADE = f"""
ALTER TABLE {RECEIPTS}
    DROP CONSTRAINT tool_call_receipts_result_when_completed,
    ADD CONSTRAINT tool_call_receipts_result_when_completed
        CHECK (result IS NULL OR completed_at IS NOT NULL);
COMMENT ON COLUMN {RECEIPTS}.result IS
    'The call''s result until the row answering the call is stored (then read from that row).';
"""

DOWNGRADE = f"""
UPDATE {RECEIPTS} r SET result = coalesce(
    (SELECT m.content::jsonb FROM public.chat_messages m
      WHERE m.plan_id = r.plan_id AND m.tool_call_id = r.tool_call_id AND m.role = 'tool'
      LIMIT 1),
    (SELECT d.content::jsonb FROM public.agent_chat_messages d
      WHERE d.plan_id = r.plan_id AND d.tool_call_id = r.tool_call_id
        AND d.message_type = 'tool_result'
      LIMIT 1),
    '{GONE}'::jsonb)
 WHERE r.result IS NULL AND r.completed_at IS NOT NULL;
COMMENT ON COLUMN {RECEIPTS}.result IS NULL;
ALTER TABLE {RECEIPTS}
    DROP CONSTRAINT tool_call_receipts_result_when_completed,
    ADD CONSTRAINT tool_call_receipts_result_when_completed
        CHECK ((result IS NULL) = (completed_at IS NULL));
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
