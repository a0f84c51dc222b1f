"""Approvals, run leases, and the session a message without `session_id` created.

* `agent_approvals` — one row per destructive tool call or step escalation that waits for the
  user: `pending` until the user approves/rejects the call or answers/rejects the escalation;
  `cancelled` when its plan ended without a decision. Unique per (plan, step, tool call):
  the approval gate finds the row again on every resume.
* `lease_owner` / `lease_expires_at` on `agent_plans` and `agent_plan_steps` — the invocation
  working on a plan (or step) holds a lease it renews while it runs; another invocation for
  the same plan finds it live and leaves. A runner that died stops renewing, and once the
  lease has expired the next invocation takes it over. Row leases rather than advisory locks:
  Supabase's transaction pooler shares server connections between clients.
* `agent_plans.decisions` — counts decided approvals, so a run that saw fewer before it
  stopped to wait knows a decision arrived meanwhile and goes on instead.
* `chat_sessions.first_client_message_id` — the `client_message_id` of the message that
  created the session (sent without `session_id`): a resend finds the session instead of
  creating a second one, even when both arrive at once (the unique index decides).

Revision ID: 3f8a9c2d0301
Revises: 8d4e5a2b0301
Create Date: 2026-11-24 09:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "3f8a9c2d0301"
down_revision: str | None = "8d4e5a2b0301"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPGRADE = """
ALTER TABLE public.agent_plans
    ADD COLUMN lease_owner text,
    ADD COLUMN lease_expires_at timestamptz,
    ADD COLUMN decisions integer NOT NULL DEFAULT 0 CHECK (decisions >= 0),
    ADD CONSTRAINT agent_plans_lease_whole
        CHECK ((lease_owner IS NULL) = (lease_expires_at IS NULL));
COMMENT ON COLUMN public.agent_plans.lease_owner IS
    'The invocation running the plan now (renewed while it runs; free once expired).';
COMMENT ON COLUMN public.agent_plans.decisions IS
    'Approvals decided so far; a run that saw fewer goes on instead of waiting.';

ALTER TABLE public.agent_plan_steps
    ADD COLUMN lease_owner text,
    ADD COLUMN lease_expires_at timestamptz,
    ADD CONSTRAINT agent_plan_steps_lease_whole
        CHECK ((lease_owner IS NULL) = (lease_expires_at IS NULL));
COMMENT ON COLUMN public.agent_plan_steps.lease_owner IS
    'The invocation running the step now (renewed while it runs; free once expired).';

ALTER TABLE public.chat_sessions ADD COLUMN first_client_message_id text
    CHECK (char_length(first_client_message_id) BETWEEN 1 AND 200);
CREATE UNIQUE INDEX chat_sessions_first_client_message
    ON public.chat_sessions (user_id, first_client_message_id)
    WHERE first_client_message_id IS NOT NULL;

CREATE TABLE public.agent_approvals (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    plan_id uuid NOT NULL REFERENCES public.agent_plans (id) ON DELETE CASCADE,
    session_id uuid NOT NULL REFERENCES public.chat_sessions (id) ON DELETE CASCADE,
    user_id uuid NOT NULL REFERENCES auth.users (id) ON DELETE CASCADE,
    step_id uuid REFERENCES public.agent_plan_steps (id) ON DELETE CASCADE,
    agent_id uuid NOT NULL REFERENCES public.agents (id) ON DELETE CASCADE,
    kind text NOT NULL CHECK (kind IN ('tool_call', 'escalation')),
    tool_call_id text NOT NULL CHECK (char_length(tool_call_id) BETWEEN 1 AND 200),
    tool_name text,
    tool_args jsonb,
    reason text,
    status text NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'approved', 'rejected', 'answered', 'cancelled')),
    response text CHECK (char_length(response) <= 4000),
    decided_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    -- Per conversation: the planner's own loop (no step) and each step's thread.
    CONSTRAINT agent_approvals_call UNIQUE NULLS NOT DISTINCT (plan_id, step_id, tool_call_id),
    CONSTRAINT agent_approvals_shape CHECK (CASE kind
        WHEN 'tool_call' THEN tool_name IS NOT NULL AND tool_args IS NOT NULL
        ELSE reason IS NOT NULL AND step_id IS NOT NULL END),
    CONSTRAINT agent_approvals_decision_fits_kind CHECK (
        status IN ('pending', 'rejected', 'cancelled')
        OR (status = 'approved' AND kind = 'tool_call')
        OR (status = 'answered' AND kind = 'escalation')),
    CONSTRAINT agent_approvals_decided CHECK ((status = 'pending') = (decided_at IS NULL))
);
COMMENT ON TABLE public.agent_approvals IS
    'Destructive tool calls and step escalations waiting for (or decided by) the user.';
COMMENT ON COLUMN public.agent_approvals.response IS
    'The user''s answer to an escalation, or their reason for a rejection.';
CREATE INDEX agent_approvals_plan_idx ON public.agent_approvals (plan_id, created_at);
CREATE INDEX agent_approvals_pending_idx ON public.agent_approvals (plan_id)
    WHERE status = 'pending';
CREATE INDEX agent_approvals_session_idx ON public.agent_approvals (session_id);
CREATE INDEX agent_approvals_user_idx ON public.agent_approvals (user_id);
CREATE INDEX agent_approvals_step_idx ON public.agent_approvals (step_id) WHERE step_id IS NOT NULL;
CREATE INDEX agent_approvals_agent_idx ON public.agent_approvals (agent_id);
CREATE TRIGGER agent_approvals_updated_at BEFORE UPDATE ON public.agent_approvals
    FOR EACH ROW EXECUTE FUNCTION public.set_updated_at();

-- Written by the service only (decisions go through the planner function): users read theirs.
ALTER TABLE public.agent_approvals ENABLE ROW LEVEL SECURITY;
CREATE POLICY agent_approvals_select ON public.agent_approvals FOR SELECT TO authenticated
    USING (user_id = (SELECT auth.uid()));
REVOKE ALL ON public.agent_approvals FROM anon, authenticated;
GRANT SELECT ON public.agent_approvals TO authenticated;
GRANT ALL ON public.agent_approvals TO service_role;

ALTER PUBLICATION supabase_realtime ADD TABLE public.agent_approvals;
"""

DOWNGRADE = """
ALTER PUBLICATION supabase_realtime DROP TABLE public.agent_approvals;
DROP TABLE public.agent_approvals;
DROP INDEX public.chat_sessions_first_client_message;
ALTER TABLE public.chat_sessions DROP COLUMN first_client_message_id;
ALTER TABLE public.agent_plan_steps DROP CONSTRAINT agent_plan_steps_lease_whole,
    DROP COLUMN lease_expires_at, DROP COLUMN lease_owner;
ALTER TABLE public.agent_plans DROP CONSTRAINT agent_plans_lease_whole,
    DROP COLUMN decisions, DROP COLUMN lease_expires_at, DROP COLUMN lease_owner;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
