"""Runs that hand work to queues, a sweeper that re-drives them, and writes that happen once.

* `agent_plan_steps.dispatched_at` — when the planner last handed the step to an executor
  without waiting (`INVOKER_TRANSPORT=sqs`); a resumed planner does not hand it over again.
* `agent_plans.redriven_at`, `agent_plan_steps.redriven_at` — when the sweeper last re-drove
  the row; it re-drives a plan or step at most once per expired lease.
* `agent_plans.decisions_seen` — the `decisions` count when the plan last settled
  `awaiting_approval`: more decisions than that, and no run since, is a decision nobody has
  resumed the plan for yet.
* `parley_private.tool_call_receipts` — one row per write tool call of a plan, keyed on (plan,
  the call's id, a hash of the tool name and canonical arguments). A database write tool records
  its receipt, with its result, in the transaction of the write itself, so a resumed call
  whose write committed finds the receipt and returns the recorded result instead of writing
  again. An external (MCP) write records the receipt before the call and its result after:
  a receipt without result is a call that may have reached the server. Internal, so in the
  private schema the Data API does not serve (docs/security.md): RLS on, no policy, nothing
  granted to any API role.

Revision ID: 6b2e9f4c0401
Revises: 9b1e6c4d0402
Create Date: 2026-11-26 09:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "6b2e9f4c0401"
down_revision: str | None = "9b1e6c4d0402"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPGRADE = """
ALTER TABLE public.agent_plans
    ADD COLUMN redriven_at timestamptz,
    ADD COLUMN decisions_seen integer NOT NULL DEFAULT 0 CHECK (decisions_seen >= 0);
COMMENT ON COLUMN public.agent_plans.redriven_at IS
    'When the sweeper last handed the plan to the planner again (once per expired lease).';
COMMENT ON COLUMN public.agent_plans.decisions_seen IS
    'decisions when the plan last settled awaiting_approval; more means a decision to use.';

ALTER TABLE public.agent_plan_steps
    ADD COLUMN dispatched_at timestamptz,
    ADD COLUMN redriven_at timestamptz;
COMMENT ON COLUMN public.agent_plan_steps.dispatched_at IS
    'When the planner handed the step to an executor without waiting (a queue message).';
COMMENT ON COLUMN public.agent_plan_steps.redriven_at IS
    'When the sweeper last handed the step to an executor again (once per expired lease).';
CREATE INDEX agent_plan_steps_running_idx ON public.agent_plan_steps (lease_expires_at)
    WHERE status = 'running';

CREATE TABLE parley_private.tool_call_receipts (
    plan_id uuid NOT NULL REFERENCES public.agent_plans (id) ON DELETE CASCADE,
    tool_call_id text NOT NULL CHECK (char_length(tool_call_id) BETWEEN 1 AND 200),
    call_hash text NOT NULL CHECK (char_length(call_hash) = 64),
    user_id uuid NOT NULL REFERENCES auth.users (id) ON DELETE CASCADE,
    tool_name text NOT NULL,
    result jsonb,
    created_at timestamptz NOT NULL DEFAULT now(),
    completed_at timestamptz,
    PRIMARY KEY (plan_id, tool_call_id, call_hash),
    CONSTRAINT tool_call_receipts_result_when_completed
        CHECK ((result IS NULL) = (completed_at IS NULL))
);
COMMENT ON TABLE parley_private.tool_call_receipts IS
    'Write tool calls of plans: a recorded result is returned again instead of writing twice.';
CREATE INDEX tool_call_receipts_user_idx ON parley_private.tool_call_receipts (user_id);
ALTER TABLE parley_private.tool_call_receipts ENABLE ROW LEVEL SECURITY;
REVOKE ALL ON parley_private.tool_call_receipts FROM PUBLIC, anon, authenticated, service_role;
"""

DOWNGRADE = """
DROP TABLE parley_private.tool_call_receipts;
DROP INDEX public.agent_plan_steps_running_idx;
ALTER TABLE public.agent_plan_steps DROP COLUMN redriven_at, DROP COLUMN dispatched_at;
ALTER TABLE public.agent_plans DROP COLUMN decisions_seen, DROP COLUMN redriven_at;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
