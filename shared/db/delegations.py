"""A step's task (its delegation) is held by the run it was handed to, not by a dialogue row.

The task a step's agent is handed (`prompts.delegation`) opens with the plan's goal, the step
and its tools — all held by the plan and step rows — and may go on with the results of the
steps it depends on (cut to the agent's budget when they are long: not derivable). The run of
the step attempt (`agent_executions`, whose id is the thread's) holds the delegation's number
(`delegation_seq`) and that rest (`delegation_rest`, usually none); readers of the dialogue
read `DIALOGUE`, where each such run is the thread's first row again — a `delegation` from the
plan's planner to the run's agent, whose id is the run's — with the opening put back
(`opening`: the same text `prompts.delegation_opening` writes;
`tests/shared/agents/test_delegations.py` holds them together). Delegations stored before
revision 5a0c1e2b0706 are rows of `agent_chat_messages`, whole, and are read as they are.
Retention of the dialogue clears the runs' delegations with the rows (`retention_batches`).

A `postgres_changes` subscriber of `agent_chat_messages` sees no delegation; the
`agent_message` event, the API and `session_timeline` carry each whole.
"""

from __future__ import annotations

from shared.db.records import AgentMessage

OPENING = "Goal of the plan: "
"""How every delegation starts (`prompts.delegation`)."""


def opening(step: str, plan: str, request: str) -> str:
    """SQL: a delegation's opening, from the step row `step`, the plan row `plan` and the
    user's message `request` (the goal when the plan has none)."""
    return f"""concat('{OPENING}',
        coalesce(nullif({plan}.goal, ''), nullif({request}.content, ''), 'see the step'),
        E'\\n\\nYour step: ', {step}.description,
        CASE WHEN cardinality({step}.tools) > 0
             THEN E'\\nTools for this step: ' || array_to_string({step}.tools, ', ') END)"""


DIALOGUE = f"""(
    SELECT d.id, d.agent_session_id, d.plan_id, d.session_id, d.user_id, d.seq,
           d.sender_agent_id, d.receiver_agent_id, d.message_type, d.content,
           d.tool_name, d.tool_call_id, d.tool_args, d.model, d.created_at, d.reasoning_content
      FROM public.agent_chat_messages d
    UNION ALL
    SELECT e.id, e.id, e.plan_id, p.session_id, e.user_id, e.delegation_seq,
           p.planner_agent_id, e.agent_id, 'delegation',
           {opening("s", "p", "u")} || coalesce(e.delegation_rest, ''),
           NULL, NULL, NULL::jsonb, NULL, e.created_at, NULL
      FROM public.agent_executions e
      JOIN public.agent_plans p ON p.id = e.plan_id
      JOIN public.agent_plan_steps s ON s.id = e.step_id
      LEFT JOIN public.chat_messages u ON u.id = p.user_message_id
     WHERE e.delegation_seq IS NOT NULL)"""
"""SQL: the agents' dialogue as readers get it — the rows of `agent_chat_messages` and each
step attempt's delegation, held by its run — in `AgentMessage`'s columns. Filters on
`plan_id`, `agent_session_id` or `session_id` reach both parts' indexes."""


def message_columns(row: str) -> str:
    """`AgentMessage`'s columns of a `DIALOGUE` row `row`."""
    return ", ".join(f"{row}.{name}" for name in AgentMessage._fields)
