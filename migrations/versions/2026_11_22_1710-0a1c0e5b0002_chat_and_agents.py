"""Chat sessions and messages, agents, plans and steps, agent dialogue, executions.

Every table is owned by a user (`user_id` → `auth.users`, cascade) and has RLS on. Users read
their own rows; they may manage their own chat sessions (title and status only); everything
else is written by the service, which bypasses RLS as the table owner. Messages and dialogue
rows get a per-session `seq` from one counter on `chat_sessions`, assigned by trigger, so the
unified timeline and the event stream share one order.

Revision ID: 0a1c0e5b0002
Revises: 0a1c0e5b0001
Create Date: 2026-11-22 17:10:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0a1c0e5b0002"
down_revision: str | None = "0a1c0e5b0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPGRADE = """
CREATE FUNCTION public.set_updated_at() RETURNS trigger
LANGUAGE plpgsql SET search_path = '' AS $$
BEGIN
    NEW.updated_at := now();
    RETURN NEW;
END
$$;

-- chat ---------------------------------------------------------------------------------------

CREATE TABLE public.chat_sessions (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id uuid NOT NULL REFERENCES auth.users (id) ON DELETE CASCADE,
    title text NOT NULL DEFAULT 'New chat' CHECK (char_length(title) BETWEEN 1 AND 200),
    status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived', 'deleted')),
    forked_from_session_id uuid REFERENCES public.chat_sessions (id) ON DELETE SET NULL,
    forked_at_message_id uuid,
    last_seq bigint NOT NULL DEFAULT 0,
    prompt_tokens bigint NOT NULL DEFAULT 0,
    completion_tokens bigint NOT NULL DEFAULT 0,
    cache_hit_tokens bigint NOT NULL DEFAULT 0,
    cost_usd numeric(14, 6) NOT NULL DEFAULT 0,
    last_message_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX chat_sessions_user_recent_idx ON public.chat_sessions (user_id, updated_at DESC)
    WHERE status <> 'deleted';
CREATE INDEX chat_sessions_forked_from_idx ON public.chat_sessions (forked_from_session_id)
    WHERE forked_from_session_id IS NOT NULL;

CREATE TABLE public.chat_messages (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    session_id uuid NOT NULL REFERENCES public.chat_sessions (id) ON DELETE CASCADE,
    user_id uuid NOT NULL REFERENCES auth.users (id) ON DELETE CASCADE,
    seq bigint NOT NULL,
    role text NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'status', 'tool')),
    content text NOT NULL DEFAULT '',
    tool_calls jsonb,
    tool_call_id text,
    tool_name text,
    plan_id uuid,
    model text,
    prompt_tokens integer NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    completion_tokens integer NOT NULL DEFAULT 0 CHECK (completion_tokens >= 0),
    cache_hit_tokens integer NOT NULL DEFAULT 0 CHECK (cache_hit_tokens >= 0),
    cost_usd numeric(14, 6) NOT NULL DEFAULT 0 CHECK (cost_usd >= 0),
    client_message_id text CHECK (char_length(client_message_id) BETWEEN 1 AND 200),
    metadata jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (session_id, seq),
    UNIQUE (session_id, client_message_id)
);
CREATE INDEX chat_messages_user_idx ON public.chat_messages (user_id);
CREATE INDEX chat_messages_plan_idx ON public.chat_messages (plan_id) WHERE plan_id IS NOT NULL;

ALTER TABLE public.chat_sessions
    ADD CONSTRAINT chat_sessions_forked_at_message_fk FOREIGN KEY (forked_at_message_id)
    REFERENCES public.chat_messages (id) ON DELETE SET NULL;

-- agents and plans -------------------------------------------------------------------------

CREATE TABLE public.agents (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id uuid NOT NULL REFERENCES auth.users (id) ON DELETE CASCADE,
    chat_session_id uuid NOT NULL REFERENCES public.chat_sessions (id) ON DELETE CASCADE,
    parent_agent_id uuid REFERENCES public.agents (id) ON DELETE SET NULL,
    role text NOT NULL CHECK (role IN ('planner', 'executor')),
    name text NOT NULL,
    model text NOT NULL,
    permissions text NOT NULL CHECK (permissions IN ('read_only', 'read_write')),
    allowed_tools text[],
    token_budget integer NOT NULL CHECK (token_budget > 0),
    system_prompt text,
    status text NOT NULL DEFAULT 'active'
        CHECK (status IN ('active', 'idle', 'completed', 'failed')),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    completed_at timestamptz,
    -- Executors are read-only by construction, whatever the code that creates them says.
    CONSTRAINT agents_executor_read_only CHECK (role <> 'executor' OR permissions = 'read_only')
);
COMMENT ON COLUMN public.agents.allowed_tools IS
    'NULL: every tool the permission level allows; otherwise only these names.';
CREATE UNIQUE INDEX agents_one_planner_per_session ON public.agents (chat_session_id)
    WHERE role = 'planner';
CREATE INDEX agents_user_idx ON public.agents (user_id);
CREATE INDEX agents_parent_idx ON public.agents (parent_agent_id) WHERE parent_agent_id IS NOT NULL;

CREATE TABLE public.agent_plans (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    session_id uuid NOT NULL REFERENCES public.chat_sessions (id) ON DELETE CASCADE,
    user_id uuid NOT NULL REFERENCES auth.users (id) ON DELETE CASCADE,
    user_message_id uuid NOT NULL UNIQUE REFERENCES public.chat_messages (id) ON DELETE CASCADE,
    planner_agent_id uuid NOT NULL REFERENCES public.agents (id) ON DELETE CASCADE,
    strategy text CHECK (strategy IN ('direct', 'tool', 'complex')),
    status text NOT NULL DEFAULT 'pending' CHECK (status IN (
        'pending', 'executing', 'awaiting_approval', 'completed', 'failed', 'cancelled')),
    goal text,
    error text,
    prompt_tokens bigint NOT NULL DEFAULT 0,
    completion_tokens bigint NOT NULL DEFAULT 0,
    cache_hit_tokens bigint NOT NULL DEFAULT 0,
    cost_usd numeric(14, 6) NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    started_at timestamptz,
    completed_at timestamptz
);
CREATE INDEX agent_plans_session_idx ON public.agent_plans (session_id, created_at);
CREATE INDEX agent_plans_user_idx ON public.agent_plans (user_id);
CREATE INDEX agent_plans_planner_idx ON public.agent_plans (planner_agent_id);
CREATE INDEX agent_plans_open_idx ON public.agent_plans (status)
    WHERE status IN ('pending', 'executing', 'awaiting_approval');

ALTER TABLE public.chat_messages
    ADD CONSTRAINT chat_messages_plan_fk FOREIGN KEY (plan_id)
    REFERENCES public.agent_plans (id) ON DELETE SET NULL;

CREATE TABLE public.agent_plan_steps (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    plan_id uuid NOT NULL REFERENCES public.agent_plans (id) ON DELETE CASCADE,
    user_id uuid NOT NULL REFERENCES auth.users (id) ON DELETE CASCADE,
    step_number integer NOT NULL CHECK (step_number > 0),
    description text NOT NULL,
    executor_required boolean NOT NULL,
    depends_on integer[] NOT NULL DEFAULT '{}',
    tools text[] NOT NULL DEFAULT '{}',
    assigned_agent_id uuid REFERENCES public.agents (id) ON DELETE SET NULL,
    status text NOT NULL DEFAULT 'pending' CHECK (status IN (
        'pending', 'running', 'awaiting_approval', 'completed', 'failed', 'skipped', 'cancelled')),
    result text,
    error text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    started_at timestamptz,
    completed_at timestamptz,
    UNIQUE (plan_id, step_number)
);
CREATE INDEX agent_plan_steps_user_idx ON public.agent_plan_steps (user_id);
CREATE INDEX agent_plan_steps_agent_idx ON public.agent_plan_steps (assigned_agent_id)
    WHERE assigned_agent_id IS NOT NULL;

-- agent dialogue ---------------------------------------------------------------------------

CREATE TABLE public.agent_chat_sessions (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    session_id uuid NOT NULL REFERENCES public.chat_sessions (id) ON DELETE CASCADE,
    user_id uuid NOT NULL REFERENCES auth.users (id) ON DELETE CASCADE,
    plan_id uuid NOT NULL REFERENCES public.agent_plans (id) ON DELETE CASCADE,
    step_id uuid REFERENCES public.agent_plan_steps (id) ON DELETE CASCADE,
    parent_agent_id uuid NOT NULL REFERENCES public.agents (id) ON DELETE CASCADE,
    child_agent_id uuid NOT NULL REFERENCES public.agents (id) ON DELETE CASCADE,
    status text NOT NULL DEFAULT 'active' CHECK (status IN (
        'active', 'completed', 'failed', 'abandoned', 'timeout')),
    turn_count integer NOT NULL DEFAULT 0 CHECK (turn_count >= 0),
    max_turns integer NOT NULL CHECK (max_turns > 0),
    result text,
    error text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    completed_at timestamptz
);
CREATE INDEX agent_chat_sessions_session_idx ON public.agent_chat_sessions (session_id);
CREATE INDEX agent_chat_sessions_plan_idx ON public.agent_chat_sessions (plan_id);
CREATE INDEX agent_chat_sessions_step_idx ON public.agent_chat_sessions (step_id);
CREATE INDEX agent_chat_sessions_user_idx ON public.agent_chat_sessions (user_id);
CREATE INDEX agent_chat_sessions_parent_idx ON public.agent_chat_sessions (parent_agent_id);
CREATE INDEX agent_chat_sessions_child_idx ON public.agent_chat_sessions (child_agent_id);

CREATE TABLE public.agent_chat_messages (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    agent_session_id uuid NOT NULL REFERENCES public.agent_chat_sessions (id) ON DELETE CASCADE,
    session_id uuid NOT NULL REFERENCES public.chat_sessions (id) ON DELETE CASCADE,
    user_id uuid NOT NULL REFERENCES auth.users (id) ON DELETE CASCADE,
    seq bigint NOT NULL,
    sender_agent_id uuid REFERENCES public.agents (id) ON DELETE SET NULL,
    receiver_agent_id uuid REFERENCES public.agents (id) ON DELETE SET NULL,
    message_type text NOT NULL CHECK (message_type IN (
        'delegation', 'question', 'answer', 'status', 'completion', 'error', 'escalation',
        'tool_call', 'tool_result', 'permission_denied')),
    content text NOT NULL DEFAULT '',
    tool_name text,
    tool_call_id text,
    tool_args jsonb,
    tool_result jsonb,
    model text,
    prompt_tokens integer NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    completion_tokens integer NOT NULL DEFAULT 0 CHECK (completion_tokens >= 0),
    cache_hit_tokens integer NOT NULL DEFAULT 0 CHECK (cache_hit_tokens >= 0),
    cost_usd numeric(14, 6) NOT NULL DEFAULT 0 CHECK (cost_usd >= 0),
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (session_id, seq)
);
CREATE INDEX agent_chat_messages_thread_idx ON public.agent_chat_messages (agent_session_id, seq);
CREATE INDEX agent_chat_messages_user_idx ON public.agent_chat_messages (user_id);
CREATE INDEX agent_chat_messages_sender_idx ON public.agent_chat_messages (sender_agent_id);
CREATE INDEX agent_chat_messages_receiver_idx ON public.agent_chat_messages (receiver_agent_id);
CREATE INDEX agent_chat_messages_denials_idx ON public.agent_chat_messages (created_at)
    WHERE message_type = 'permission_denied';

CREATE TABLE public.agent_executions (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id uuid NOT NULL REFERENCES auth.users (id) ON DELETE CASCADE,
    session_id uuid NOT NULL REFERENCES public.chat_sessions (id) ON DELETE CASCADE,
    plan_id uuid NOT NULL REFERENCES public.agent_plans (id) ON DELETE CASCADE,
    step_id uuid REFERENCES public.agent_plan_steps (id) ON DELETE CASCADE,
    agent_id uuid NOT NULL REFERENCES public.agents (id) ON DELETE CASCADE,
    agent_session_id uuid REFERENCES public.agent_chat_sessions (id) ON DELETE SET NULL,
    agent_role text NOT NULL CHECK (agent_role IN ('planner', 'executor')),
    model text NOT NULL,
    attempt integer NOT NULL DEFAULT 1 CHECK (attempt > 0),
    status text NOT NULL DEFAULT 'pending' CHECK (status IN (
        'pending', 'running', 'completed', 'failed', 'timeout', 'cancelled')),
    llm_calls integer NOT NULL DEFAULT 0 CHECK (llm_calls >= 0),
    prompt_tokens integer NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    completion_tokens integer NOT NULL DEFAULT 0 CHECK (completion_tokens >= 0),
    cache_hit_tokens integer NOT NULL DEFAULT 0 CHECK (cache_hit_tokens >= 0),
    cost_usd numeric(14, 6) NOT NULL DEFAULT 0 CHECK (cost_usd >= 0),
    tool_call_count integer NOT NULL DEFAULT 0 CHECK (tool_call_count >= 0),
    permission_denials integer NOT NULL DEFAULT 0 CHECK (permission_denials >= 0),
    started_at timestamptz,
    finished_at timestamptz,
    duration_ms integer GENERATED ALWAYS AS (
        (extract(epoch FROM finished_at - started_at) * 1000)::integer) STORED,
    error text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT agent_executions_step_attempt UNIQUE (step_id, attempt),
    CONSTRAINT agent_executions_finished_after_start CHECK (finished_at >= started_at)
);
CREATE INDEX agent_executions_plan_idx ON public.agent_executions (plan_id);
CREATE INDEX agent_executions_session_idx ON public.agent_executions (session_id);
CREATE INDEX agent_executions_user_idx ON public.agent_executions (user_id);
CREATE INDEX agent_executions_agent_idx ON public.agent_executions (agent_id);
CREATE INDEX agent_executions_thread_idx ON public.agent_executions (agent_session_id);
CREATE INDEX agent_executions_day_idx ON public.agent_executions (created_at);

-- per-session sequence ---------------------------------------------------------------------

CREATE FUNCTION public.allocate_session_seq(p_session_id uuid, p_count integer DEFAULT 1)
RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    last bigint;
BEGIN
    UPDATE public.chat_sessions
       SET last_seq = last_seq + p_count, last_message_at = now()
     WHERE id = p_session_id
    RETURNING last_seq INTO last;
    IF last IS NULL THEN
        RAISE EXCEPTION 'chat session % does not exist', p_session_id
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN last;
END
$$;
COMMENT ON FUNCTION public.allocate_session_seq(uuid, integer) IS
    'Reserve p_count numbers of the session''s monotonic sequence; returns the last one.';
REVOKE ALL ON FUNCTION public.allocate_session_seq(uuid, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.allocate_session_seq(uuid, integer) TO service_role;

CREATE FUNCTION public.assign_session_seq() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    NEW.seq := public.allocate_session_seq(NEW.session_id, 1);
    RETURN NEW;
END
$$;

CREATE TRIGGER chat_messages_seq BEFORE INSERT ON public.chat_messages
    FOR EACH ROW EXECUTE FUNCTION public.assign_session_seq();
CREATE TRIGGER agent_chat_messages_seq BEFORE INSERT ON public.agent_chat_messages
    FOR EACH ROW EXECUTE FUNCTION public.assign_session_seq();

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['chat_sessions', 'chat_messages', 'agents', 'agent_plans',
                             'agent_plan_steps', 'agent_chat_sessions', 'agent_executions']
    LOOP
        EXECUTE format('CREATE TRIGGER %I BEFORE UPDATE ON public.%I FOR EACH ROW '
                       'EXECUTE FUNCTION public.set_updated_at()', t || '_updated_at', t);
    END LOOP;
END
$$;

-- row level security and grants ------------------------------------------------------------

ALTER TABLE public.chat_sessions ENABLE ROW LEVEL SECURITY;
CREATE POLICY chat_sessions_select ON public.chat_sessions FOR SELECT TO authenticated
    USING (user_id = (SELECT auth.uid()));
CREATE POLICY chat_sessions_insert ON public.chat_sessions FOR INSERT TO authenticated
    WITH CHECK (user_id = (SELECT auth.uid()));
CREATE POLICY chat_sessions_update ON public.chat_sessions FOR UPDATE TO authenticated
    USING (user_id = (SELECT auth.uid())) WITH CHECK (user_id = (SELECT auth.uid()));
CREATE POLICY chat_sessions_delete ON public.chat_sessions FOR DELETE TO authenticated
    USING (user_id = (SELECT auth.uid()));
REVOKE ALL ON public.chat_sessions FROM anon, authenticated;
GRANT SELECT, DELETE ON public.chat_sessions TO authenticated;
GRANT INSERT (user_id, title) ON public.chat_sessions TO authenticated;
GRANT UPDATE (title, status) ON public.chat_sessions TO authenticated;
GRANT ALL ON public.chat_sessions TO service_role;

DO $$
DECLARE
    t text;
BEGIN
    -- Written by the service only: users may read their own rows.
    FOREACH t IN ARRAY ARRAY['chat_messages', 'agents', 'agent_plans', 'agent_plan_steps',
                             'agent_chat_sessions', 'agent_chat_messages', 'agent_executions']
    LOOP
        EXECUTE format('ALTER TABLE public.%I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY %I ON public.%I FOR SELECT TO authenticated '
                       'USING (user_id = (SELECT auth.uid()))', t || '_select', t);
        EXECUTE format('REVOKE ALL ON public.%I FROM anon, authenticated', t);
        EXECUTE format('GRANT SELECT ON public.%I TO authenticated', t);
        EXECUTE format('GRANT ALL ON public.%I TO service_role', t);
    END LOOP;
END
$$;

ALTER PUBLICATION supabase_realtime ADD TABLE
    public.chat_messages, public.agent_chat_messages, public.agent_plans, public.agent_plan_steps;
"""

DOWNGRADE = """
ALTER PUBLICATION supabase_realtime DROP TABLE
    public.chat_messages, public.agent_chat_messages, public.agent_plans, public.agent_plan_steps;
ALTER TABLE public.chat_messages DROP CONSTRAINT chat_messages_plan_fk;
ALTER TABLE public.chat_sessions DROP CONSTRAINT chat_sessions_forked_at_message_fk;
DROP TABLE public.agent_executions, public.agent_chat_messages, public.agent_chat_sessions,
    public.agent_plan_steps, public.agent_plans, public.agents, public.chat_messages,
    public.chat_sessions;
DROP FUNCTION public.assign_session_seq();
DROP FUNCTION public.allocate_session_seq(uuid, integer);
DROP FUNCTION public.set_updated_at();
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
