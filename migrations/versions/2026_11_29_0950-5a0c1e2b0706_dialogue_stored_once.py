"""The agents' dialogue stored once: a delegation held by its run, no index of it by session,
a receipt's hash as bytes.

* **A step's task held by its run.** Every step attempt opens with a delegation — the planner
  handing the step's task to the step's agent — which was a row of `agent_chat_messages`
  (a row header, ids, a number and index entries: ~250 bytes a step). The run of the attempt
  (`agent_executions`, whose id is the thread's) now holds it: `delegation_seq`, the number its
  `agent_message` event carries, and `delegation_rest`, what follows the opening its step and
  plan rows say — the results of the steps it depends on (NULL when there are none). Readers of
  the dialogue read the rows and those runs together (`shared/db/delegations.py`, `DIALOGUE`):
  each run with a `delegation_seq` is its thread's first message, a `delegation` with the run's
  id; `session_timeline` does here. Delegation rows stored before stay rows and are read as they
  are (nothing is rewritten). Retention of the dialogue clears the runs' delegations with it.

* **No index of the dialogue by session.** `agent_chat_messages` had a unique index on
  `(session_id, seq)` for one reader, a session's timeline in `seq` order; sessions' rows
  interleave in it, so it grew faster than the table's other indexes (173 bytes a turn at
  100,000 turns, 240 at a million). It is dropped: a timeline page reads the dialogue through
  the plans that can hold rows in its range (`shared/db/timeline.py`), `session_timeline` joins
  the dialogue to its session through its plans. The foreign key from the dialogue to the
  session goes too: a session's dialogue is deleted with its plans (each row's plan is in the
  row's session), so deleting a session never reads the whole dialogue. The numbers stay unique
  by construction: each takes its number from the session's counter under the session row's
  lock.

* **A write receipt's hash as its 32 bytes.** `parley_private.tool_call_receipts.call_hash`
  (SHA-256 of the call's tool and canonical arguments, part of the key) was hex text, 65 bytes
  in the row and again in the key's index; it is `bytea` now, converted in place (receipts live
  `RETENTION_RECEIPTS_DAYS`, 7 by default: the table is small).

Downgrade writes each run's delegation back as a row (whole), restores the key, the index and
the view, and the hashes as hex.

Revision ID: 5a0c1e2b0706
Revises: 5a0c1e2b0705
Create Date: 2026-11-29 09:50:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "5a0c1e2b0706"
down_revision: str | None = "5a0c1e2b0705"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OPENING = """concat('Goal of the plan: ',
    coalesce(nullif(p.goal, ''), nullif(u.content, ''), 'see the step'),
    E'\\n\\nYour step: ', s.description,
    CASE WHEN cardinality(s.tools) > 0
         THEN E'\\nTools for this step: ' || array_to_string(s.tools, ', ') END)"""
"""A delegation's opening from its step `s`, plan `p` and request `u`
(`shared.db.delegations.opening`, `shared.agents.prompts.delegation`)."""
HELD = f"""
    SELECT e.id, e.id AS agent_session_id, e.plan_id, p.session_id, e.user_id,
           e.delegation_seq AS seq, p.planner_agent_id AS sender_agent_id,
           e.agent_id AS receiver_agent_id, 'delegation' AS message_type,
           {OPENING} || coalesce(e.delegation_rest, '') AS content, e.created_at
      FROM public.agent_executions e
      JOIN public.agent_plans p ON p.id = e.plan_id
      JOIN public.agent_plan_steps s ON s.id = e.step_id
      LEFT JOIN public.chat_messages u ON u.id = p.user_message_id
     WHERE e.delegation_seq IS NOT NULL"""
"""The delegations the runs hold, as dialogue rows (`shared.db.delegations.DIALOGUE`)."""

STEPS = "public.agent_plan_steps s WHERE s.plan_id = m.plan_id"
PLAN_RESULTS = f"""coalesce((SELECT string_agg(concat_ws(E'\\n',
        'Step ' || s.step_number || ': ' || s.status, 'Result: ' || nullif(s.result, ''),
        'Problem: ' || nullif(s.error, '')), E'\\n' ORDER BY s.step_number)
    FROM {STEPS}), '')"""
"""A plan's results as the planner was given them (revision 5a0c1e2b0704)."""
STORED_RESULTS = """m.role = 'tool' AND m.content = '' AND m.metadata->>'kind' = 'plan_results'"""
CHAT = f"""
CREATE OR REPLACE VIEW public.session_timeline WITH (security_invoker = true) AS
SELECT m.session_id, m.seq, 'chat'::text AS source, m.id AS message_id,
       m.role AS kind, m.role AS sender_role, NULL::uuid AS agent_id,
       NULL::uuid AS agent_session_id, m.plan_id,
       CASE WHEN {STORED_RESULTS} THEN {PLAN_RESULTS} ELSE m.content END AS content,
       m.tool_name, m.model, m.prompt_tokens, m.completion_tokens, m.cost_usd, m.user_id,
       m.created_at
  FROM public.chat_messages m
UNION ALL"""
AGENT = """
SELECT {session}, d.seq, 'agent'::text, d.id, d.message_type, coalesce(a.role, 'system'),
       d.sender_agent_id, d.agent_session_id, d.plan_id, d.content, {tool_name}, {model},
       NULL::integer, NULL::integer, NULL::numeric(14, 6), d.user_id, d.created_at
  FROM {dialogue}
  LEFT JOIN public.agents a ON a.id = d.sender_agent_id"""
ROWS = "public.agent_plans p JOIN public.agent_chat_messages d ON d.plan_id = p.id"
RECEIPTS = "parley_private.tool_call_receipts"
HASH_CHECK = "tool_call_receipts_call_hash_check"

UPGRADE = f"""
ALTER TABLE public.agent_chat_messages
    DROP CONSTRAINT agent_chat_messages_session_id_seq_key,
    DROP CONSTRAINT agent_chat_messages_session_id_fkey;
ALTER TABLE public.agent_executions
    ADD COLUMN delegation_seq bigint,
    ADD COLUMN delegation_rest text;
COMMENT ON COLUMN public.agent_executions.delegation_seq IS
    'A step attempt''s delegation (its thread''s first message, id = this run''s): its seq.';
COMMENT ON COLUMN public.agent_executions.delegation_rest IS
    'What the delegation says after the opening its step and plan hold: the results of the '
    'steps it depends on (NULL: nothing).';
{CHAT}
{AGENT.format(session="p.session_id", tool_name="d.tool_name", model="d.model", dialogue=ROWS)}
UNION ALL
{AGENT.format(session="d.session_id", tool_name="NULL", model="NULL", dialogue=f"({HELD}) d")};
ALTER TABLE {RECEIPTS}
    DROP CONSTRAINT {HASH_CHECK},
    ALTER COLUMN call_hash TYPE bytea USING decode(call_hash, 'hex'),
    ADD CONSTRAINT {HASH_CHECK} CHECK (octet_length(call_hash) = 32);
"""

DOWNGRADE = f"""
ALTER TABLE {RECEIPTS}
    DROP CONSTRAINT {HASH_CHECK},
    ALTER COLUMN call_hash TYPE text USING encode(call_hash, 'hex'),
    ADD CONSTRAINT {HASH_CHECK} CHECK (char_length(call_hash) = 64);
INSERT INTO public.agent_chat_messages (id, agent_session_id, plan_id, session_id, user_id,
    seq, sender_agent_id, receiver_agent_id, message_type, content, created_at)
SELECT * FROM ({HELD}) d;
{CHAT}
{
    AGENT.format(
        session="d.session_id",
        tool_name="d.tool_name",
        model="d.model",
        dialogue="public.agent_chat_messages d",
    )
};
ALTER TABLE public.agent_executions DROP COLUMN delegation_seq, DROP COLUMN delegation_rest;
ALTER TABLE public.agent_chat_messages
    ADD CONSTRAINT agent_chat_messages_session_id_seq_key UNIQUE (session_id, seq),
    ADD CONSTRAINT agent_chat_messages_session_id_fkey FOREIGN KEY (session_id)
        REFERENCES public.chat_sessions (id) ON DELETE CASCADE;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
