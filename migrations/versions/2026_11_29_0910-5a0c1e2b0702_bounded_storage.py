"""Bounded storage: prompts stored once, every index earning its place, detail that retention
can delete.

Bytes per turn, before this revision (docs/storage.md has the figures): every agent row held its
whole system prompt, the dialogue rows carried eight indexes and each model call's usage a
second time (the executions hold it), the executions nine indexes. Now:

* **Prompts once.** `parley_private.agent_prompts` holds each distinct system prompt, keyed by
  its hash (`id`: the first 16 bytes of the body's SHA-256, as a uuid; a CHECK holds the two
  together); `agents.prompt_id` names it. The statement that makes an agent also inserts its
  prompt if absent (one statement, as before). Existing agents' prompts move there, and the
  rows are rewritten without them.
* **The dialogue** (`agent_chat_messages`) keeps the conversation and who said it: a model
  call's tokens and cost live on its execution only (`prompt_tokens`, `completion_tokens`,
  `cache_hit_tokens`, `cost_usd` dropped; `model` stays: it marks the row that starts a call's
  turn), and a tool result once (`content`; `tool_result`, its parsed copy, dropped).
  `session_timeline` shows NULL usage for agent rows (their calls are accounted on the plan's
  executions). Its primary key stays `id`: that is what a `postgres_changes` DELETE tells every
  subscriber of the table, whatever RLS says (`(session_id, seq)` would name sessions).
* **No column nobody reads**: a thread's `result` (its step has it), an execution's
  `session_id` (its plan's), and `updated_at` with its trigger where no reader uses it
  (`chat_messages`, `agents`, `agent_plans`, `agent_plan_steps`, `agent_chat_sessions`,
  `agent_executions`: 8 bytes a row, and a trigger on each of the hot path's updates).
* **Each index justified by a query** (docs/storage.md lists each kept index with its query).
  Foreign keys whose only effect was a cascade that another one already makes (a user's rows go
  with their sessions, a session's with its plans, a plan's detail with the plan) are dropped,
  with the indexes that only served their cascades: the `user_id` keys below `chat_sessions`,
  and every key to `agents` (agents are deleted only with their session, or by retention; the
  rows naming them keep the id). Kept keys have an index on their referencing column, but
  `agents.prompt_id` (a prompt is never deleted).
  `agent_executions` is unique on `(plan_id, step_id, attempt)` (NULLS NOT DISTINCT: the
  planner's plan-level run has no step), one index for what three did.
* **Retention** (`shared/usecases/retention.py`, settings `RETENTION_*_DAYS`): the sweeper deletes the
  detail of plans that ended long enough ago, in batches ordered by `agent_plans.completed_at`
  (indexed here). `parley_private.retention_marks` records, per kind of detail, the
  `completed_at` through which it has been deleted, so readers can say what was removed
  (`parley_private.retention_removed()`, readable by `authenticated`).

Deployments upgrading keep their data (dropped columns held copies); to give the space of the
rewritten and dropped columns back to the operating system, run `VACUUM FULL` on `agents` and
`agent_chat_messages` at a quiet time (it locks the table while it copies it), or let later
rows reuse it. Downgrade brings the columns, keys and indexes back: the prompts return to
their rows, dropped usage and tool results come back NULL (they were copies), and the foreign
keys are restored `NOT VALID` (retention may have deleted rows they pointed at).

Revision ID: 5a0c1e2b0702
Revises: 5a0c1e2b0701
Create Date: 2026-11-29 09:10:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "5a0c1e2b0702"
down_revision: str | None = "5a0c1e2b0701"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The same as `shared.db.prompt_store.prompt_id` (tests/migrations/test_storage.py holds them equal).
PROMPT_ID = "encode(substring(sha256(convert_to({body}, 'UTF8')) FROM 1 FOR 16), 'hex')::uuid"

RETAINED = ("dialogue", "tool_rounds", "receipts", "executions")

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
       d.agent_session_id, d.plan_id, d.content, d.tool_name, d.model,
       {usage}, d.user_id, d.created_at
  FROM public.agent_chat_messages d
  LEFT JOIN public.agents a ON a.id = d.sender_agent_id;
"""
ROW_USAGE = "d.prompt_tokens, d.completion_tokens, d.cost_usd"
NO_USAGE = "NULL::integer, NULL::integer, NULL::numeric(14, 6)"

# (table, constraint, column, referenced table, action): the foreign keys dropped.
DROPPED_KEYS = (
    ("chat_messages", "chat_messages_user_id_fkey", "user_id", "auth.users (id)", "CASCADE"),
    ("agents", "agents_user_id_fkey", "user_id", "auth.users (id)", "CASCADE"),
    ("agents", "agents_parent_agent_id_fkey", "parent_agent_id", "public.agents (id)", "SET NULL"),
    ("agent_plans", "agent_plans_user_id_fkey", "user_id", "auth.users (id)", "CASCADE"),
    (
        "agent_plans",
        "agent_plans_planner_agent_id_fkey",
        "planner_agent_id",
        "public.agents (id)",
        "CASCADE",
    ),
    ("agent_plan_steps", "agent_plan_steps_user_id_fkey", "user_id", "auth.users (id)", "CASCADE"),
    (
        "agent_plan_steps",
        "agent_plan_steps_assigned_agent_id_fkey",
        "assigned_agent_id",
        "public.agents (id)",
        "SET NULL",
    ),
    (
        "agent_chat_sessions",
        "agent_chat_sessions_session_id_fkey",
        "session_id",
        "public.chat_sessions (id)",
        "CASCADE",
    ),
    (
        "agent_chat_sessions",
        "agent_chat_sessions_user_id_fkey",
        "user_id",
        "auth.users (id)",
        "CASCADE",
    ),
    (
        "agent_chat_sessions",
        "agent_chat_sessions_step_id_fkey",
        "step_id",
        "public.agent_plan_steps (id)",
        "CASCADE",
    ),
    (
        "agent_chat_sessions",
        "agent_chat_sessions_parent_agent_id_fkey",
        "parent_agent_id",
        "public.agents (id)",
        "CASCADE",
    ),
    (
        "agent_chat_sessions",
        "agent_chat_sessions_child_agent_id_fkey",
        "child_agent_id",
        "public.agents (id)",
        "CASCADE",
    ),
    (
        "agent_chat_messages",
        "agent_chat_messages_user_id_fkey",
        "user_id",
        "auth.users (id)",
        "CASCADE",
    ),
    (
        "agent_chat_messages",
        "agent_chat_messages_agent_session_id_fkey",
        "agent_session_id",
        "public.agent_chat_sessions (id)",
        "CASCADE",
    ),
    (
        "agent_chat_messages",
        "agent_chat_messages_sender_agent_id_fkey",
        "sender_agent_id",
        "public.agents (id)",
        "SET NULL",
    ),
    (
        "agent_chat_messages",
        "agent_chat_messages_receiver_agent_id_fkey",
        "receiver_agent_id",
        "public.agents (id)",
        "SET NULL",
    ),
    ("agent_executions", "agent_executions_user_id_fkey", "user_id", "auth.users (id)", "CASCADE"),
    (
        "agent_executions",
        "agent_executions_session_id_fkey",
        "session_id",
        "public.chat_sessions (id)",
        "CASCADE",
    ),
    (
        "agent_executions",
        "agent_executions_step_id_fkey",
        "step_id",
        "public.agent_plan_steps (id)",
        "CASCADE",
    ),
    (
        "agent_executions",
        "agent_executions_agent_id_fkey",
        "agent_id",
        "public.agents (id)",
        "CASCADE",
    ),
    (
        "agent_executions",
        "agent_executions_agent_session_id_fkey",
        "agent_session_id",
        "public.agent_chat_sessions (id)",
        "SET NULL",
    ),
    ("agent_approvals", "agent_approvals_user_id_fkey", "user_id", "auth.users (id)", "CASCADE"),
    (
        "agent_approvals",
        "agent_approvals_session_id_fkey",
        "session_id",
        "public.chat_sessions (id)",
        "CASCADE",
    ),
    (
        "agent_approvals",
        "agent_approvals_agent_id_fkey",
        "agent_id",
        "public.agents (id)",
        "CASCADE",
    ),
    (
        "tool_call_receipts",
        "tool_call_receipts_user_id_fkey",
        "user_id",
        "auth.users (id)",
        "CASCADE",
    ),
)

# (index, its definition): the indexes dropped (each served only a dropped key's cascade, or a
# query that a kept index serves, or no query).
DROPPED_INDEXES = (
    ("chat_messages_user_idx", "public.chat_messages (user_id)"),
    ("agents_user_idx", "public.agents (user_id)"),
    ("agents_parent_idx", "public.agents (parent_agent_id) WHERE parent_agent_id IS NOT NULL"),
    ("agent_plans_user_idx", "public.agent_plans (user_id)"),
    ("agent_plans_planner_idx", "public.agent_plans (planner_agent_id)"),
    ("agent_plan_steps_user_idx", "public.agent_plan_steps (user_id)"),
    (
        "agent_plan_steps_agent_idx",
        "public.agent_plan_steps (assigned_agent_id) WHERE assigned_agent_id IS NOT NULL",
    ),
    ("agent_chat_sessions_session_idx", "public.agent_chat_sessions (session_id)"),
    ("agent_chat_sessions_step_idx", "public.agent_chat_sessions (step_id)"),
    ("agent_chat_sessions_user_idx", "public.agent_chat_sessions (user_id)"),
    ("agent_chat_sessions_parent_idx", "public.agent_chat_sessions (parent_agent_id)"),
    ("agent_chat_sessions_child_idx", "public.agent_chat_sessions (child_agent_id)"),
    ("agent_chat_messages_thread_idx", "public.agent_chat_messages (agent_session_id, seq)"),
    ("agent_chat_messages_user_idx", "public.agent_chat_messages (user_id)"),
    ("agent_chat_messages_sender_idx", "public.agent_chat_messages (sender_agent_id)"),
    ("agent_chat_messages_receiver_idx", "public.agent_chat_messages (receiver_agent_id)"),
    (
        "agent_chat_messages_denials_idx",
        "public.agent_chat_messages (created_at) WHERE message_type = 'permission_denied'",
    ),
    ("agent_executions_plan_idx", "public.agent_executions (plan_id)"),
    ("agent_executions_session_idx", "public.agent_executions (session_id)"),
    ("agent_executions_user_idx", "public.agent_executions (user_id)"),
    ("agent_executions_agent_idx", "public.agent_executions (agent_id)"),
    ("agent_executions_thread_idx", "public.agent_executions (agent_session_id)"),
    ("agent_executions_day_idx", "public.agent_executions (created_at)"),
    (
        "agent_executions_planner_run",
        "public.agent_executions (plan_id, attempt) "
        "WHERE step_id IS NULL AND agent_role = 'planner'",
    ),
    ("agent_approvals_user_idx", "public.agent_approvals (user_id)"),
    ("agent_approvals_session_idx", "public.agent_approvals (session_id)"),
    ("agent_approvals_agent_idx", "public.agent_approvals (agent_id)"),
    ("tool_call_receipts_user_idx", "parley_private.tool_call_receipts (user_id)"),
)

# The dialogue's columns that held copies, with their definitions (for the downgrade).
DIALOGUE_COPIES = {
    "prompt_tokens": "integer NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0)",
    "completion_tokens": "integer NOT NULL DEFAULT 0 CHECK (completion_tokens >= 0)",
    "cache_hit_tokens": "integer NOT NULL DEFAULT 0 CHECK (cache_hit_tokens >= 0)",
    "cost_usd": "numeric(14, 6) NOT NULL DEFAULT 0 CHECK (cost_usd >= 0)",
    "tool_result": "jsonb",
}


UNREAD_UPDATED_AT = (
    "chat_messages",
    "agents",
    "agent_plans",
    "agent_plan_steps",
    "agent_chat_sessions",
    "agent_executions",
)
"""Tables whose `updated_at` (and the trigger keeping it) nothing reads: 8 bytes a row, and a
trigger on every update of the hot path's rows."""


def _schema(table: str) -> str:
    return "parley_private" if table == "tool_call_receipts" else "public"


def _drop_keys() -> str:
    return "\n".join(
        f"ALTER TABLE {_schema(table)}.{table} DROP CONSTRAINT {name};"
        for table, name, *_ in DROPPED_KEYS
    )


def _restore_keys() -> str:
    return "\n".join(
        f"ALTER TABLE {_schema(table)}.{table} ADD CONSTRAINT {name} FOREIGN KEY ({column}) "
        f"REFERENCES {target} ON DELETE {action} NOT VALID;"
        for table, name, column, target, action in DROPPED_KEYS
    )


def _drop_indexes() -> str:
    return "\n".join(
        f"DROP INDEX {'parley_private' if name.startswith('tool_call') else 'public'}.{name};"
        for name, _ in DROPPED_INDEXES
    )


def _drop_updated_at() -> str:
    return "\n".join(
        f"DROP TRIGGER {table}_updated_at ON public.{table};\n"
        f"ALTER TABLE public.{table} DROP COLUMN updated_at;"
        for table in UNREAD_UPDATED_AT
    )


def _restore_updated_at() -> str:
    return "\n".join(
        f"ALTER TABLE public.{table} ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now();\n"
        f"CREATE TRIGGER {table}_updated_at BEFORE UPDATE ON public.{table} "
        "FOR EACH ROW EXECUTE FUNCTION parley_private.set_updated_at();"
        for table in UNREAD_UPDATED_AT
    )


def _restore_indexes() -> str:
    return "\n".join(
        f"CREATE INDEX {name} ON {definition};"
        for name, definition in DROPPED_INDEXES
        if name != "agent_executions_planner_run"
    )


UPGRADE = f"""
-- Prompts, once each ---------------------------------------------------------------------

CREATE TABLE parley_private.agent_prompts (
    id uuid PRIMARY KEY,
    body text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT agent_prompts_id_is_hash CHECK (id = {PROMPT_ID.format(body="body")})
);
COMMENT ON TABLE parley_private.agent_prompts IS
    'Each distinct system prompt an agent was given, once; agents.prompt_id names it.';
ALTER TABLE parley_private.agent_prompts ENABLE ROW LEVEL SECURITY;
REVOKE ALL ON parley_private.agent_prompts FROM PUBLIC, anon, authenticated, service_role;

ALTER TABLE public.agents
    ADD COLUMN prompt_id uuid REFERENCES parley_private.agent_prompts (id);
COMMENT ON COLUMN public.agents.prompt_id IS
    'The system prompt the agent was given (parley_private.agent_prompts).';
INSERT INTO parley_private.agent_prompts (id, body)
    SELECT DISTINCT {PROMPT_ID.format(body="system_prompt")}, system_prompt
      FROM public.agents WHERE system_prompt IS NOT NULL;
ALTER TABLE public.agents DISABLE TRIGGER agents_updated_at;
UPDATE public.agents SET prompt_id = {PROMPT_ID.format(body="system_prompt")},
                         system_prompt = NULL  -- the new row versions without the copy
 WHERE system_prompt IS NOT NULL;
ALTER TABLE public.agents ENABLE TRIGGER agents_updated_at;
ALTER TABLE public.agents DROP COLUMN system_prompt;

-- Keys and indexes -----------------------------------------------------------------------

{_drop_keys()}
{_drop_indexes()}

CREATE INDEX agents_session_idx ON public.agents (chat_session_id);
DROP INDEX public.chat_sessions_user_recent_idx;
CREATE INDEX chat_sessions_user_recent_idx ON public.chat_sessions (user_id, updated_at DESC);
CREATE INDEX chat_sessions_forked_at_idx ON public.chat_sessions (forked_at_message_id)
    WHERE forked_at_message_id IS NOT NULL;
CREATE INDEX agent_plans_ended_idx ON public.agent_plans (completed_at)
    WHERE completed_at IS NOT NULL;

ALTER TABLE public.chat_messages DROP CONSTRAINT chat_messages_session_id_client_message_id_key;
CREATE UNIQUE INDEX chat_messages_client_message ON public.chat_messages
    (session_id, client_message_id) WHERE client_message_id IS NOT NULL;

ALTER TABLE public.agent_executions
    DROP CONSTRAINT agent_executions_step_attempt,
    ADD CONSTRAINT agent_executions_attempt
        UNIQUE NULLS NOT DISTINCT (plan_id, step_id, attempt);
COMMENT ON CONSTRAINT agent_executions_attempt ON public.agent_executions IS
    'One run per step attempt, and one plan-level planner run per attempt (no step).';

-- The dialogue: the conversation, once -----------------------------------------------------

{TIMELINE.format(usage=NO_USAGE)}
ALTER TABLE public.agent_chat_messages
    {", ".join(f"DROP COLUMN {c}" for c in DIALOGUE_COPIES)};
COMMENT ON COLUMN public.agent_chat_messages.model IS
    'The model whose call wrote this row (the first row of the call''s turn); the call''s '
    'tokens and cost are on the run''s agent_executions row.';

-- Copies and columns no reader needs -------------------------------------------------------

ALTER TABLE public.agent_chat_sessions DROP COLUMN result;  -- the step's result
ALTER TABLE public.agent_executions DROP COLUMN session_id;  -- its plan's session
{_drop_updated_at()}

-- Retention's marks -----------------------------------------------------------------------

CREATE TABLE parley_private.retention_marks (
    what text PRIMARY KEY CHECK (what IN ({", ".join(f"'{w}'" for w in RETAINED)})),
    removed_through timestamptz NOT NULL DEFAULT '-infinity',
    kept_days integer CHECK (kept_days > 0),
    updated_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE parley_private.retention_marks IS
    'Per kind of detail: deleted for every plan that ended (completed_at) at or before '
    'removed_through, kept_days after it ended (shared/usecases/retention.py).';
ALTER TABLE parley_private.retention_marks ENABLE ROW LEVEL SECURITY;
REVOKE ALL ON parley_private.retention_marks FROM PUBLIC, anon, authenticated, service_role;
INSERT INTO parley_private.retention_marks (what)
    VALUES {", ".join(f"('{w}')" for w in RETAINED)};

CREATE FUNCTION parley_private.retention_removed()
RETURNS TABLE (what text, removed_through timestamptz, kept_days integer)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = '' AS $$
    SELECT what, removed_through, kept_days FROM parley_private.retention_marks
     WHERE removed_through > '-infinity'
$$;
COMMENT ON FUNCTION parley_private.retention_removed() IS
    'What retention has deleted: per kind of detail, through which plan end (no user data).';
REVOKE ALL ON FUNCTION parley_private.retention_removed() FROM PUBLIC, anon;
GRANT EXECUTE ON FUNCTION parley_private.retention_removed() TO authenticated, service_role;
"""

DOWNGRADE = f"""
DROP FUNCTION parley_private.retention_removed();
DROP TABLE parley_private.retention_marks;

{_restore_updated_at()}
ALTER TABLE public.agent_executions ADD COLUMN session_id uuid;
UPDATE public.agent_executions e SET session_id = p.session_id
  FROM public.agent_plans p WHERE p.id = e.plan_id;
ALTER TABLE public.agent_executions ALTER COLUMN session_id SET NOT NULL;
ALTER TABLE public.agent_chat_sessions ADD COLUMN result text;
UPDATE public.agent_chat_sessions t SET result = s.result
  FROM public.agent_plan_steps s WHERE s.id = t.step_id AND t.status = 'completed';

ALTER TABLE public.agent_chat_messages
    {", ".join(f"ADD COLUMN {c} {d}" for c, d in DIALOGUE_COPIES.items())};
{TIMELINE.format(usage=ROW_USAGE)}

ALTER TABLE public.agent_executions
    DROP CONSTRAINT agent_executions_attempt,
    ADD CONSTRAINT agent_executions_step_attempt UNIQUE (step_id, attempt);
CREATE UNIQUE INDEX agent_executions_planner_run ON public.agent_executions (plan_id, attempt)
    WHERE step_id IS NULL AND agent_role = 'planner';

DROP INDEX public.chat_messages_client_message;
ALTER TABLE public.chat_messages ADD CONSTRAINT chat_messages_session_id_client_message_id_key
    UNIQUE (session_id, client_message_id);

DROP INDEX public.agent_plans_ended_idx;
DROP INDEX public.chat_sessions_forked_at_idx;
DROP INDEX public.chat_sessions_user_recent_idx;
CREATE INDEX chat_sessions_user_recent_idx ON public.chat_sessions (user_id, updated_at DESC)
    WHERE status <> 'deleted';
DROP INDEX public.agents_session_idx;
{_restore_indexes()}
{_restore_keys()}

ALTER TABLE public.agents ADD COLUMN system_prompt text;
ALTER TABLE public.agents DISABLE TRIGGER agents_updated_at;
UPDATE public.agents a SET system_prompt = p.body
  FROM parley_private.agent_prompts p WHERE p.id = a.prompt_id;
ALTER TABLE public.agents ENABLE TRIGGER agents_updated_at;
ALTER TABLE public.agents DROP COLUMN prompt_id;
DROP TABLE parley_private.agent_prompts;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
