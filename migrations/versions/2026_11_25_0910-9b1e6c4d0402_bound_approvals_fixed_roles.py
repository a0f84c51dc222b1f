"""Approvals bound to the exact call, agents' roles fixed, the planner's denials in the dialogue.

* `agent_approvals.call_hash` — SHA-256 of the call's kind, tool name and arguments (in
  Postgres's `jsonb` normal form: keys sorted, whitespace dropped) or escalation reason. It is
  part of the approval's key with the call id, so a decision only ever applies to the call it
  was asked for: a later call that reuses an id — even with other arguments — is a new
  approval. (Parley also assigns its own call ids, unique within a plan; this is the database's
  half of that promise.) Rows asked for before this revision get their hash computed here.
* `agents.role` never changes (a trigger: a CHECK sees one row, and two agents could otherwise
  swap planner and executor in one transaction, past the one-planner index).
* `agent_chat_messages.plan_id` — every dialogue row names its plan, and `agent_session_id`
  may be NULL for the planner's own tool loop, which has no thread: a tool call of the planner
  that the permission check refused is a `permission_denied` row like an executor's, so
  `permission_denials_daily` counts every denial. `session_timeline` takes the plan from the
  row.

Revision ID: 9b1e6c4d0402
Revises: 9b1e6c4d0401
Create Date: 2026-11-25 09:10:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "9b1e6c4d0402"
down_revision: str | None = "9b1e6c4d0401"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The same expression as `shared.db.approvals.CALL_HASH`, over the row's own columns.
CALL_HASH = (
    "encode(sha256(convert_to(concat_ws(E'\\n', kind, tool_name, tool_args::text, reason), "
    "'UTF8')), 'hex')"
)

TIMELINE = """
CREATE OR REPLACE VIEW public.session_timeline WITH (security_invoker = true) AS
SELECT m.session_id, m.seq, 'chat'::text AS source, m.id AS message_id,
       m.role AS kind, m.role AS sender_role, NULL::uuid AS agent_id,
       NULL::uuid AS agent_session_id, m.plan_id, m.content, m.tool_name, m.model,
       m.prompt_tokens, m.completion_tokens, m.cost_usd, m.user_id, m.created_at
  FROM public.chat_messages m
UNION ALL
SELECT d.session_id, d.seq, 'agent'::text, d.id,
       d.message_type, coalesce(a.role, 'system'), d.sender_agent_id,
       d.agent_session_id, {plan}, d.content, d.tool_name, d.model,
       d.prompt_tokens, d.completion_tokens, d.cost_usd, d.user_id, d.created_at
  FROM public.agent_chat_messages d{threads}
  LEFT JOIN public.agents a ON a.id = d.sender_agent_id;
"""

THREADS = "\n  JOIN public.agent_chat_sessions t ON t.id = d.agent_session_id"

UPGRADE = f"""
ALTER TABLE public.agent_approvals ADD COLUMN call_hash text;
UPDATE public.agent_approvals SET call_hash = {CALL_HASH};
ALTER TABLE public.agent_approvals
    ALTER COLUMN call_hash SET NOT NULL,
    ADD CONSTRAINT agent_approvals_call_hash CHECK (call_hash ~ '^[0-9a-f]{{64}}$'),
    DROP CONSTRAINT agent_approvals_call,
    ADD CONSTRAINT agent_approvals_call
        UNIQUE NULLS NOT DISTINCT (plan_id, step_id, tool_call_id, call_hash);
COMMENT ON COLUMN public.agent_approvals.call_hash IS
    'SHA-256 (hex) of kind, tool name and jsonb arguments (or reason): a decision applies to '
    'this exact call only.';

CREATE FUNCTION parley_private.keep_agent_role() RETURNS trigger
LANGUAGE plpgsql SET search_path = '' AS $$
BEGIN
    RAISE EXCEPTION 'agent % is a %: an agent''s role never changes', OLD.id, OLD.role
        USING ERRCODE = 'check_violation';
END
$$;
REVOKE ALL ON FUNCTION parley_private.keep_agent_role()
    FROM PUBLIC, anon, authenticated, service_role;
CREATE TRIGGER agents_role_fixed BEFORE UPDATE OF role ON public.agents
    FOR EACH ROW WHEN (NEW.role IS DISTINCT FROM OLD.role)
    EXECUTE FUNCTION parley_private.keep_agent_role();

ALTER TABLE public.agent_chat_messages
    ADD COLUMN plan_id uuid REFERENCES public.agent_plans (id) ON DELETE CASCADE;
UPDATE public.agent_chat_messages d SET plan_id = t.plan_id
  FROM public.agent_chat_sessions t WHERE t.id = d.agent_session_id;
ALTER TABLE public.agent_chat_messages
    ALTER COLUMN plan_id SET NOT NULL,
    ALTER COLUMN agent_session_id DROP NOT NULL,
    ADD CONSTRAINT agent_chat_messages_thread_or_denial
        CHECK (agent_session_id IS NOT NULL OR message_type = 'permission_denied');
CREATE INDEX agent_chat_messages_plan_idx ON public.agent_chat_messages (plan_id);
{TIMELINE.format(plan="d.plan_id", threads="")}
"""

DOWNGRADE = f"""
DELETE FROM public.agent_chat_messages WHERE agent_session_id IS NULL;
{TIMELINE.format(plan="t.plan_id", threads=THREADS)}
ALTER TABLE public.agent_chat_messages
    DROP CONSTRAINT agent_chat_messages_thread_or_denial,
    ALTER COLUMN agent_session_id SET NOT NULL,
    DROP COLUMN plan_id;

DROP TRIGGER agents_role_fixed ON public.agents;
DROP FUNCTION parley_private.keep_agent_role();

ALTER TABLE public.agent_approvals
    DROP CONSTRAINT agent_approvals_call,
    DROP CONSTRAINT agent_approvals_call_hash,
    DROP COLUMN call_hash;
DELETE FROM public.agent_approvals a USING public.agent_approvals b
 WHERE a.plan_id = b.plan_id AND a.step_id IS NOT DISTINCT FROM b.step_id
   AND a.tool_call_id = b.tool_call_id AND a.created_at > b.created_at;
ALTER TABLE public.agent_approvals
    ADD CONSTRAINT agent_approvals_call UNIQUE NULLS NOT DISTINCT (plan_id, step_id, tool_call_id);
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
