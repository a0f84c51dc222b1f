"""A delegation is stored without what its step row already says.

The task a step's agent is handed (`prompts.delegation`) opens with the plan's goal, the step
and its tools — all held by the plan and step rows — and may go on with the results of the
steps it depends on (cut to the agent's budget when they are long: not derivable). Its
`agent_chat_messages` row stores only that rest (often nothing); readers put the opening back
from the rows, through the thread's run (`DELEGATION`, the same text `prompts.delegation`
writes: `tests/shared/agents/test_delegations.py` holds them together). Rows stored before this
hold the whole text, which starts with the opening; they are read as they are.

A `postgres_changes` subscriber of `agent_chat_messages` sees the stored rest; the
`agent_message` event, the API and `session_timeline` carry the whole text.
"""

from __future__ import annotations

from shared.db.records import AgentMessage

OPENING = "Goal of the plan: "
"""How every delegation starts (`prompts.delegation`): a row that starts so holds it whole."""
GONE = "(The task of this step is no longer stored: retention deleted the run it was given to.)"
"""The opening, when the run the thread belongs to was deleted before its dialogue."""


def delegation(row: str) -> str:
    """A dialogue row's content as readers get it, for the `agent_chat_messages` row `row`
    (a table alias): a delegation's opening put back from its step, plan and request."""
    return f"""CASE WHEN {row}.message_type = 'delegation'
            AND left({row}.content, {len(OPENING)}) <> '{OPENING}'
        THEN coalesce((
            SELECT concat('{OPENING}',
                coalesce(nullif(p.goal, ''), nullif(u.content, ''), 'see the step'),
                E'\\n\\nYour step: ', s.description,
                CASE WHEN cardinality(s.tools) > 0
                     THEN E'\\nTools for this step: ' || array_to_string(s.tools, ', ') END)
            FROM public.agent_executions e
            JOIN public.agent_plan_steps s ON s.id = e.step_id
            JOIN public.agent_plans p ON p.id = s.plan_id
            LEFT JOIN public.chat_messages u ON u.id = p.user_message_id
            WHERE e.id = {row}.agent_session_id), '{GONE}') || {row}.content
        ELSE {row}.content END"""


def message_columns(row: str) -> str:
    """`AgentMessage`'s columns of the `agent_chat_messages` row `row`, as readers get them."""
    return ", ".join(
        f"{delegation(row)} AS content" if name == "content" else f"{row}.{name}"
        for name in AgentMessage._fields
    )


def stored_tail(text: str, opening: str) -> str:
    """What a delegation's row stores of `text`, whose opening (`prompts.delegation` of the
    step without its dependencies' results) is `opening`: the rest, or all of it."""
    return text[len(opening) :] if text.startswith(opening) else text
