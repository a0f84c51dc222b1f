"""A page of a session's timeline: its chat messages and its agents' dialogue in `seq` order.

The dialogue has no index by session (`docs/storage.md`): a page finds it through the turns
(plans) that can hold rows in the page's range of numbers, each plan's rows by the plan index.
Those plans are the plans of the user messages in the page, and — for a page after a number —
the session's plans still open, or ended when the rows before that number were written (less
`MARGIN`: a statement's time stamp is when it started, its number when it took the session's
row). A page of chat rows that is full ends the range at its last row. So a page reads its own
rows and a session's plans' ends, never a session's whole dialogue.
"""

from __future__ import annotations

from shared.db.chats import CONTENT
from shared.db.delegations import DIALOGUE

MARGIN = "interval '1 day'"
"""How long before the last row before the page a plan that still wrote into it may have
ended: far more than a statement waits for a session's row."""

TIMELINE_PAGE = f"""
WITH chat AS (
    SELECT m.session_id, m.seq, 'chat'::text AS source, m.id AS message_id, m.role AS kind,
           m.role AS sender_role, NULL::uuid AS agent_id, NULL::uuid AS thread_id, m.plan_id,
           {CONTENT} AS content, m.tool_name, m.model, m.prompt_tokens,
           m.completion_tokens, m.cost_usd, m.user_id, m.created_at
      FROM chat_messages m
     WHERE m.session_id = %(session)s AND m.seq > %(after)s
     ORDER BY m.seq LIMIT %(limit)s),
upto AS (SELECT CASE WHEN count(*) = %(limit)s THEN max(seq) END AS seq FROM chat),
before AS (
    SELECT created_at FROM chat_messages
     WHERE session_id = %(session)s AND seq <= %(after)s
     ORDER BY seq DESC LIMIT 1),
plans AS (
    SELECT p.id FROM agent_plans p JOIN chat c ON c.message_id = p.user_message_id
    UNION
    SELECT p.id FROM agent_plans p, before b
     WHERE p.session_id = %(session)s
       AND (p.completed_at IS NULL OR p.completed_at >= b.created_at - {MARGIN})),
dialogue AS (
    SELECT d.session_id, d.seq, 'agent'::text, d.id, d.message_type,
           coalesce(a.role, 'system'), d.sender_agent_id, d.agent_session_id, d.plan_id,
           d.content, d.tool_name, d.model, NULL::integer, NULL::integer,
           NULL::numeric(14, 6), d.user_id, d.created_at
      FROM {DIALOGUE} d
      LEFT JOIN agents a ON a.id = d.sender_agent_id
     WHERE d.plan_id = ANY(ARRAY(SELECT id FROM plans))  -- a value: it reaches both parts
       AND d.seq > %(after)s
       AND ((SELECT seq FROM upto) IS NULL OR d.seq <= (SELECT seq FROM upto)))
SELECT * FROM chat UNION ALL SELECT * FROM dialogue
ORDER BY seq LIMIT %(limit)s"""
"""The page of the session `%(session)s` after `%(after)s`, at most `%(limit)s` entries, in
`session_timeline`'s columns (`thread_id` for its `agent_session_id`)."""
