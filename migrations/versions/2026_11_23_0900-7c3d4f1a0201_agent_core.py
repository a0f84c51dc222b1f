"""Agent core: cancellation flag, reasoning kept for thinking models, one planner run per plan.

* `agent_plans.cancel_requested_at` — set by a cancel request; the planner and executors check
  it between model and tool calls and stop (the plan ends `cancelled`).
* `reasoning_content` on `chat_messages` and `agent_chat_messages` — a thinking model's
  reasoning for an assistant turn. DeepSeek rejects a history whose tool-call turns lack it,
  so histories rebuilt from the tables must carry it back.
* One plan-level planner execution per plan and attempt (planner, no step): the planner's own
  model calls (routing, its tool loop, answers to executors, synthesis) are accounted there,
  idempotently, like executor runs are on (step_id, attempt).

Revision ID: 7c3d4f1a0201
Revises: 5e7a2b9c0101
Create Date: 2026-11-23 09:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "7c3d4f1a0201"
down_revision: str | None = "5e7a2b9c0101"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPGRADE = """
ALTER TABLE public.agent_plans ADD COLUMN cancel_requested_at timestamptz;
COMMENT ON COLUMN public.agent_plans.cancel_requested_at IS
    'Set when the user asked to cancel; agents stop at their next check and the plan ends cancelled.';

ALTER TABLE public.chat_messages ADD COLUMN reasoning_content text;
ALTER TABLE public.agent_chat_messages ADD COLUMN reasoning_content text;

CREATE UNIQUE INDEX agent_executions_planner_run ON public.agent_executions (plan_id, attempt)
    WHERE step_id IS NULL AND agent_role = 'planner';
"""

DOWNGRADE = """
DROP INDEX public.agent_executions_planner_run;
ALTER TABLE public.agent_chat_messages DROP COLUMN reasoning_content;
ALTER TABLE public.chat_messages DROP COLUMN reasoning_content;
ALTER TABLE public.agent_plans DROP COLUMN cancel_requested_at;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
