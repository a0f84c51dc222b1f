"""Repository: agent-to-agent threads (`agent_chat_sessions`) and their messages.

A thread is held by its step attempt's run (`agent_executions`: `turn_count`, `max_turns`,
`thread_status`; the thread's id is the run's); `agent_chat_sessions` is the view of them."""

from __future__ import annotations

from uuid import UUID

from psycopg.types.json import Jsonb

from shared.db._rows import fetch_all, fetch_one
from shared.db.database import Connection
from shared.db.delegations import DIALOGUE, message_columns
from shared.db.records import AgentMessage, AgentThread, DialogueEntry, columns
from shared.kernel.ids import new_id

THREAD = columns(AgentThread)
MESSAGE = columns(AgentMessage)
READ = message_columns("m")
"""A `DIALOGUE` row's columns: the dialogue as readers get it (`db.delegations`)."""
THREAD_OF_RUN = """run.id, p.session_id, run.user_id, run.plan_id, run.step_id,
    p.planner_agent_id AS parent_agent_id, run.agent_id AS child_agent_id,
    run.thread_status AS status, run.turn_count, run.max_turns, run.error, run.created_at,
    CASE WHEN run.thread_status <> 'active' THEN run.finished_at END AS completed_at"""
"""`agent_chat_sessions`' columns of the run row `run` of the plan row `p` (the view's)."""


async def create_thread(
    conn: Connection,
    *,
    session_id: UUID,
    user_id: UUID,
    plan_id: UUID,
    parent_agent_id: UUID,
    child_agent_id: UUID,
    max_turns: int,
    step_id: UUID | None = None,
) -> AgentThread:
    """Open a planner↔agent thread: a run of the child agent (its role and model), `running`,
    holding the thread — the attempt after the step's last (a plan-level one without a step).
    (`session_id` and `parent_agent_id` are the plan's: a thread shows its plan's.)"""
    del session_id, parent_agent_id
    return await fetch_one(
        conn,
        AgentThread,
        f"""WITH run AS (
              INSERT INTO agent_executions (id, agent_session_id, user_id, plan_id, step_id,
                  agent_id, agent_role, model, attempt, status, started_at, turn_count,
                  max_turns, thread_status)
              SELECT %(id)s, %(id)s, %(user)s, %(plan)s, %(step)s, a.id, a.role, a.model,
                     coalesce((SELECT max(attempt) FROM agent_executions
                                WHERE plan_id = %(plan)s
                                  AND step_id IS NOT DISTINCT FROM %(step)s), 0) + 1,
                     'running', now(), 0, %(max_turns)s, 'active'
                FROM agents a WHERE a.id = %(child)s
              RETURNING *)
            SELECT {THREAD_OF_RUN} FROM run JOIN agent_plans p ON p.id = run.plan_id""",
        {
            "id": new_id(),
            "user": user_id,
            "plan": plan_id,
            "step": step_id,
            "child": child_agent_id,
            "max_turns": max_turns,
        },
    )


async def list_threads(conn: Connection, *, plan_id: UUID) -> list[AgentThread]:
    """A plan's threads, oldest first."""
    return await fetch_all(
        conn,
        AgentThread,
        f"SELECT {THREAD} FROM agent_chat_sessions WHERE plan_id = %s ORDER BY created_at, id",
        (plan_id,),
    )


async def add_agent_message(
    conn: Connection, entry: DialogueEntry, *, plan_id: UUID, thread_id: UUID | None = None
) -> AgentMessage:
    """Append a dialogue row to the plan's dialogue — in `thread_id`, or none (a refused tool
    call of the planner's own loop) — outside a run's statement (a run's rows go through its
    `Transition`); `seq` comes from the chat session's counter. (A call's usage is accounted
    on its execution, not here.)"""
    return await fetch_one(
        conn,
        AgentMessage,
        f"""INSERT INTO agent_chat_messages
              (agent_session_id, plan_id, session_id, user_id, sender_agent_id, receiver_agent_id,
               message_type, content, tool_name, tool_call_id, tool_args, model,
               reasoning_content)
            SELECT %(thread)s, p.id, p.session_id, p.user_id, %(sender_agent_id)s,
                   %(receiver_agent_id)s, %(message_type)s, %(content)s, %(tool_name)s,
                   %(tool_call_id)s, %(tool_args)s, %(model)s, %(reasoning_content)s
              FROM agent_plans p WHERE p.id = %(plan)s
            RETURNING {MESSAGE}""",
        {
            **entry._asdict(),
            "tool_args": Jsonb(entry.tool_args) if entry.tool_args is not None else None,
            "thread": thread_id,
            "plan": plan_id,
        },
    )


async def list_thread_messages(conn: Connection, *, thread_id: UUID) -> list[AgentMessage]:
    """A thread's messages in order (found through its plan's: the index the dialogue has)."""
    return await fetch_all(
        conn,
        AgentMessage,
        f"""SELECT {READ} FROM {DIALOGUE} m
            WHERE m.plan_id = (SELECT plan_id FROM agent_executions WHERE id = %(thread)s)
              AND m.agent_session_id = %(thread)s
            ORDER BY m.seq""",
        {"thread": thread_id},
    )


async def list_plan_dialogue(conn: Connection, *, plan_id: UUID) -> list[AgentMessage]:
    """A plan's dialogue (every thread's messages, and the planner's denials) in order."""
    return await fetch_all(
        conn,
        AgentMessage,
        f"SELECT {READ} FROM {DIALOGUE} m WHERE m.plan_id = %s ORDER BY m.seq",
        (plan_id,),
    )


async def abandon_open_threads(
    conn: Connection, *, plan_id: UUID, error: str, step_id: UUID | None = None
) -> None:
    """Close every still-active thread of a plan (or of one of its steps) as `abandoned`
    (cancellation, failure); the runs holding them are closed by `close_open_executions`."""
    await conn.execute(
        """UPDATE agent_executions SET thread_status = 'abandoned', error = coalesce(error, %s)
           WHERE plan_id = %s AND thread_status = 'active'
             AND (%s::uuid IS NULL OR step_id = %s)""",
        (error, plan_id, step_id, step_id),
    )
