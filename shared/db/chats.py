"""Repository: chat sessions and their messages."""

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any, NamedTuple
from uuid import UUID

from psycopg import errors
from psycopg.types.json import Jsonb

from shared.db._rows import fetch_all, fetch_one, fetch_optional, record_from_json
from shared.db.database import Connection
from shared.db.plans import RUNNING_PLAN
from shared.db.prompt_store import STORE_PROMPT, prompt_params
from shared.db.records import (
    ChatMessage,
    ChatSession,
    MessageRole,
    Plan,
    PlanStatus,
    SessionStatus,
    columns,
)
from shared.kernel.errors import AccountGone
from shared.kernel.usage import Usage

SESSION = columns(ChatSession)
MESSAGE = columns(ChatMessage)

_PLAN_STEPS = "public.agent_plan_steps s WHERE s.plan_id = m.plan_id"
PLAN_RESULTS = f"""coalesce((SELECT string_agg(concat_ws(E'\\n',
        'Step ' || s.step_number || ': ' || s.status, 'Result: ' || nullif(s.result, ''),
        'Problem: ' || nullif(s.error, '')), E'\\n' ORDER BY s.step_number)
    FROM {_PLAN_STEPS}), '')"""
"""A plan's steps' outcomes as the planner was given them (`history.plan_results`), for the row
`m` of its `plan_results` (stored without them)."""
STEP_ARGUMENTS = """jsonb_strip_nulls(jsonb_build_object('step_number', s.step_number,
    'description', s.description,
    'assignee', CASE WHEN NOT s.executor_required THEN 'planner' END,
    'depends_on', CASE WHEN cardinality(s.depends_on) > 0 THEN to_jsonb(s.depends_on) END,
    'tools', CASE WHEN cardinality(s.tools) > 0 THEN to_jsonb(s.tools) END))"""
"""A stored step as `create_plan` takes it (`history.step_arguments`)."""
TOOL_CALLS = f"""CASE WHEN m.metadata ? 'plan_steps' THEN (
    SELECT jsonb_agg(CASE WHEN c->>'id' = m.metadata->>'plan_steps' THEN
        jsonb_set(c, '{{function,arguments}}', to_jsonb(((c->'function'->>'arguments')::jsonb
            || jsonb_build_object('steps', coalesce((
                SELECT jsonb_agg({STEP_ARGUMENTS} ORDER BY s.step_number) FROM {_PLAN_STEPS}),
                '[]'::jsonb)))::text))
        ELSE c END ORDER BY e.n)
    FROM jsonb_array_elements(m.tool_calls) WITH ORDINALITY AS e(c, n))
    ELSE m.tool_calls END"""
"""The row `m`'s calls, the accepted `create_plan`'s (stored without its steps: `history`)
with its steps again."""
CONTENT = f"""CASE WHEN m.role = 'tool' AND m.content = ''
    AND m.metadata->>'kind' = 'plan_results' THEN {PLAN_RESULTS} ELSE m.content END"""
"""The row `m`'s content, a plan's results (stored without them: `history`) read back."""


def default_kind(row: str) -> str:
    """SQL: the `metadata.kind` a chat row `row` is stored without (`stored_metadata`)."""
    return f"""CASE {row}.role WHEN 'tool' THEN 'tool_result'
        WHEN 'assistant' THEN CASE WHEN {row}.tool_calls IS NULL THEN 'answer'
                                   ELSE 'tool_round' END END"""


def metadata(row: str) -> str:
    """SQL: the chat row `row`'s `metadata` as readers get it: the defaults it is stored
    without put back (`stored_metadata`)."""
    return f"""CASE WHEN {row}.role IN ('assistant', 'tool')
        THEN jsonb_build_object('kind', {default_kind(row)})
             || CASE WHEN {row}.role = 'tool' THEN '{{"error": null}}'::jsonb
                     ELSE '{{}}'::jsonb END
             || {row}.metadata
        ELSE {row}.metadata END"""


def kind(row: str) -> str:
    """SQL: the chat row `row`'s `metadata.kind` (its default when it is stored without)."""
    return f"coalesce({row}.metadata->>'kind', {default_kind(row)})"


def as_json(row: str) -> str:
    """SQL: the chat row `row` as JSON, as readers see it (its metadata's defaults back)."""
    return f"to_jsonb({row}) || jsonb_build_object('metadata', {metadata(row)})"


def stored_metadata(
    role: str, tool_calls: list[dict[str, Any]] | None, given: dict[str, Any] | None
) -> dict[str, Any]:
    """What a chat row stores of its `metadata`: not what its role and calls say already —
    an answer's or a tool round's `kind`, a tool result's `kind` and null `error` (`metadata`
    puts them back for readers; a `postgres_changes` subscriber sees them stored)."""
    defaults: dict[str, Any] = {}
    if role == "assistant":
        defaults = {"kind": "answer" if tool_calls is None else "tool_round"}
    elif role == "tool":
        defaults = {"kind": "tool_result", "error": None}
    return {
        key: value
        for key, value in (given or {}).items()
        if key not in defaults or defaults[key] != value
    }


def _columns(read: dict[str, str]) -> str:
    """`MESSAGE` of the rows `m`, the columns `read` names read as it says."""
    return ", ".join(
        f"{read[name]} AS {name}" if name in read else f"m.{name}" for name in ChatMessage._fields
    )


RETURNED = _columns({"metadata": metadata("m")})
"""`MESSAGE` of a row `m` just written, as readers see it (its metadata's defaults back)."""
READ_MESSAGE = _columns({"content": CONTENT, "tool_calls": TOOL_CALLS, "metadata": metadata("m")})
"""`MESSAGE` of the rows `m` as readers see them: what the plan holds put back."""
OWNER_KEY = "chat_sessions_user_id_fkey"
"""A session's owner is a row of `auth.users`."""


async def create_session(
    conn: Connection,
    *,
    user_id: UUID,
    title: str = "New chat",
    forked_from_session_id: UUID | None = None,
    forked_at_message_id: UUID | None = None,
) -> ChatSession:
    """Start a chat session for `user_id` (a fork when the fork columns are given)."""
    if forked_from_session_id is None:
        # Only the columns users may insert themselves, so this works as the user too.
        query = f"INSERT INTO chat_sessions (user_id, title) VALUES (%s, %s) RETURNING {SESSION}"
        params: tuple[Any, ...] = (user_id, title)
    else:
        query = f"""INSERT INTO chat_sessions
                        (user_id, title, forked_from_session_id, forked_at_message_id)
                    VALUES (%s, %s, %s, %s) RETURNING {SESSION}"""
        params = (user_id, title, forked_from_session_id, forked_at_message_id)
    with _owner_exists():
        return await fetch_one(conn, ChatSession, query, params)


@contextmanager
def _owner_exists() -> Iterator[None]:
    """A new session's owner must still be a user: Supabase does not revoke the tokens it
    issued to a user it deletes, and such a token is refused (401), not a 500."""
    try:
        yield
    except errors.ForeignKeyViolation as exc:
        if exc.diag.constraint_name != OWNER_KEY:
            raise
        raise AccountGone from None


async def get_session(
    conn: Connection, *, session_id: UUID, user_id: UUID | None = None, lock: bool = False
) -> ChatSession | None:
    """The session, or None if it does not exist (or is not `user_id`'s, when given); `lock`
    holds its row until the transaction ends (one turn starts at a time in a session)."""
    query = f"""SELECT {SESSION} FROM chat_sessions
                WHERE id = %(id)s AND (%(user)s::uuid IS NULL OR user_id = %(user)s)"""
    return await fetch_optional(
        conn,
        ChatSession,
        query + " FOR UPDATE" if lock else query,
        {"id": session_id, "user": user_id},
    )


async def session_for_first_message(
    conn: Connection, *, user_id: UUID, client_message_id: str, title: str
) -> ChatSession:
    """The session a message sent without a session id creates — created once per
    (user, `client_message_id`): a resend, even one arriving at the same moment, gets the same
    session (the unique index makes the second insert wait for the first and find it)."""
    with _owner_exists():
        created = await fetch_optional(
            conn,
            ChatSession,
            f"""INSERT INTO chat_sessions (user_id, title, first_client_message_id)
                VALUES (%s, %s, %s)
                ON CONFLICT (user_id, first_client_message_id)
                    WHERE first_client_message_id IS NOT NULL DO NOTHING
                RETURNING {SESSION}""",
            (user_id, title, client_message_id),
        )
    if created is not None:
        return created
    return await fetch_one(
        conn,
        ChatSession,
        f"""SELECT {SESSION} FROM chat_sessions
            WHERE user_id = %s AND first_client_message_id = %s""",
        (user_id, client_message_id),
    )


async def list_sessions(
    conn: Connection,
    *,
    user_id: UUID,
    include_archived: bool = False,
    limit: int = 50,
    before: tuple[datetime, UUID] | None = None,
) -> list[ChatSession]:
    """The user's sessions, most recently active first (`updated_at`, then `id`, descending),
    those after `before` (the last session of the previous page) only; deleted ones are never
    listed."""
    statuses = ["active", "archived"] if include_archived else ["active"]
    at, last = before if before is not None else (None, None)
    return await fetch_all(
        conn,
        ChatSession,
        f"""SELECT {SESSION} FROM chat_sessions
            WHERE user_id = %s AND status = ANY(%s) AND status <> 'deleted'
              AND (%s::timestamptz IS NULL OR (updated_at, id) < (%s, %s))
            ORDER BY updated_at DESC, id DESC LIMIT %s""",
        (user_id, statuses, at, at, last, limit),
    )


async def update_session(
    conn: Connection,
    *,
    session_id: UUID,
    title: str | None = None,
    status: SessionStatus | None = None,
) -> ChatSession | None:
    """Rename and/or change the status of a session; None if it does not exist or is deleted
    (decided on the row as it is when its lock is granted: a rename waiting behind a delete
    finds the session deleted, and does not bring it back)."""
    return await fetch_optional(
        conn,
        ChatSession,
        f"""UPDATE chat_sessions
            SET title = coalesce(%s, title), status = coalesce(%s, status)
            WHERE id = %s AND status <> 'deleted' RETURNING {SESSION}""",
        (title, status, session_id),
    )


async def delete_session(conn: Connection, *, session_id: UUID, user_id: UUID) -> bool:
    """Mark the user's session deleted (its row locked until the transaction ends); False if
    it does not exist, is someone else's or was deleted already."""
    cur = await conn.execute(
        """UPDATE chat_sessions SET status = 'deleted'
            WHERE id = %s AND user_id = %s AND status <> 'deleted' RETURNING id""",
        (session_id, user_id),
    )
    return await cur.fetchone() is not None


async def add_message(
    conn: Connection,
    *,
    session_id: UUID,
    user_id: UUID,
    role: MessageRole,
    content: str,
    plan_id: UUID | None = None,
    model: str | None = None,
    usage: Usage | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    tool_call_id: str | None = None,
    tool_name: str | None = None,
    metadata: dict[str, Any] | None = None,
    reasoning_content: str | None = None,
) -> ChatMessage:
    """Append a message; its `seq` comes from the session's counter (trigger)."""
    usage = usage or Usage()
    return await fetch_one(
        conn,
        ChatMessage,
        f"""INSERT INTO chat_messages AS m
              (session_id, user_id, role, content, plan_id, model, prompt_tokens,
               completion_tokens, cache_hit_tokens, cost_usd, tool_calls, tool_call_id,
               tool_name, metadata, reasoning_content)
            VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
            RETURNING {RETURNED}""",
        (
            session_id,
            user_id,
            role,
            content,
            plan_id,
            model,
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.cache_hit_tokens,
            usage.cost_usd,
            Jsonb(tool_calls) if tool_calls is not None else None,
            tool_call_id,
            tool_name,
            Jsonb(stored_metadata(role, tool_calls, metadata)),
            reasoning_content,
        ),
    )


async def add_user_message(
    conn: Connection,
    *,
    session_id: UUID,
    user_id: UUID,
    content: str,
    client_message_id: str | None = None,
) -> tuple[ChatMessage, bool]:
    """Store a user message once per `client_message_id`: (message, True if newly created).

    A resend with the same id returns the stored message, even when two arrive at once (the
    unique key decides; a losing insert leaves a gap in `seq`, which stays monotonic).
    """
    created = await fetch_optional(
        conn,
        ChatMessage,
        f"""INSERT INTO chat_messages AS m
                (session_id, user_id, role, content, client_message_id)
            VALUES (%s, %s, 'user', %s, %s)
            ON CONFLICT (session_id, client_message_id) WHERE client_message_id IS NOT NULL
                DO NOTHING
            RETURNING {RETURNED}""",
        (session_id, user_id, content, client_message_id),
    )
    if created is not None:
        return created, True
    existing = await fetch_one(
        conn,
        ChatMessage,
        f"""SELECT {RETURNED} FROM chat_messages m
            WHERE m.session_id = %s AND m.client_message_id = %s""",
        (session_id, client_message_id),
    )
    return existing, False


async def get_message(conn: Connection, *, message_id: UUID) -> ChatMessage | None:
    """One message by id."""
    return await fetch_optional(
        conn,
        ChatMessage,
        f"SELECT {READ_MESSAGE} FROM chat_messages m WHERE m.id = %s",
        (message_id,),
    )


async def list_messages(
    conn: Connection,
    *,
    session_id: UUID,
    after_seq: int = 0,
    limit: int = 500,
    internal: bool = True,
) -> list[ChatMessage]:
    """Messages of a session in order, those after `after_seq` only (catch-up after a gap);
    not `internal`: the conversation alone — the user's messages and the answers, without the
    planner's own rows (its tool rounds and their results)."""
    return await fetch_all(
        conn,
        ChatMessage,
        f"""SELECT {READ_MESSAGE} FROM chat_messages m
            WHERE m.session_id = %s AND m.seq > %s
              AND (%s OR NOT (m.role = 'tool'
                              OR (m.role = 'assistant' AND m.tool_calls IS NOT NULL)))
            ORDER BY m.seq LIMIT %s""",
        (session_id, after_seq, internal, limit),
    )


async def list_plan_messages(conn: Connection, *, plan_id: UUID) -> list[ChatMessage]:
    """The messages the planner wrote for one plan (tool rounds, tool results, answer), in order."""
    return await fetch_all(
        conn,
        ChatMessage,
        f"SELECT {READ_MESSAGE} FROM chat_messages m WHERE m.plan_id = %s ORDER BY m.seq",
        (plan_id,),
    )


async def list_conversation(
    conn: Connection, *, session_id: UUID, before_seq: int, limit: int = 200
) -> list[ChatMessage]:
    """The user's messages and the planner's final answers before `before_seq`, oldest first.

    Tool traffic, status notices and configuration notices are left out: a past turn is its
    request and its answer, which keeps every rebuilt history valid by construction.
    """
    rows = await fetch_all(
        conn,
        ChatMessage,
        f"""SELECT {RETURNED} FROM chat_messages m
            WHERE m.session_id = %s AND m.seq < %s
              AND (m.role = 'user' OR (m.role = 'assistant' AND {kind("m")} = 'answer'))
            ORDER BY m.seq DESC LIMIT %s""",
        (session_id, before_seq, limit),
    )
    return rows[::-1]


class StoredTurn(NamedTuple):
    """What `store_turn` found or stored: the turn of the message, or the turn still running."""

    message: ChatMessage | None
    plan_id: UUID | None
    planner_id: UUID | None
    plan_status: PlanStatus | None
    """The status of the message's plan (`pending` when stored now)."""
    created: bool
    running: Plan | None
    """A turn of the session still running: nothing was stored."""


STORE_TURN = f"""
WITH earlier AS (
    SELECT * FROM chat_messages
    WHERE session_id = %(session)s AND client_message_id = %(cmid)s),
running AS (
    SELECT * FROM agent_plans
    WHERE session_id = %(session)s AND NOT EXISTS (SELECT 1 FROM earlier)
      AND {RUNNING_PLAN}
    ORDER BY created_at LIMIT 1),
message AS (
    INSERT INTO chat_messages (session_id, user_id, role, content, client_message_id)
    SELECT %(session)s, %(user)s, 'user', %(content)s, %(cmid)s
    WHERE NOT EXISTS (SELECT 1 FROM earlier) AND NOT EXISTS (SELECT 1 FROM running)
    RETURNING *),
{STORE_PROMPT},
new_planner AS (
    INSERT INTO agents (user_id, chat_session_id, role, name, model, permissions, token_budget,
                        prompt_id)
    SELECT %(user)s, %(session)s, 'planner', 'planner', %(model)s, 'read_write', %(budget)s,
           %(prompt_id)s
    WHERE EXISTS (SELECT 1 FROM message)
    ON CONFLICT (chat_session_id) WHERE role = 'planner' DO NOTHING
    RETURNING id),
planner AS (
    SELECT id FROM new_planner
    UNION ALL
    SELECT id FROM agents WHERE chat_session_id = %(session)s AND role = 'planner'
      AND NOT EXISTS (SELECT 1 FROM new_planner)),
plan AS (
    INSERT INTO agent_plans (session_id, user_id, user_message_id, planner_agent_id, trace_id)
    SELECT %(session)s, %(user)s, m.id, p.id, %(trace)s FROM message m, planner p
    RETURNING id, status),
turn AS (
    SELECT id, status FROM plan
    UNION ALL
    SELECT p.id, p.status FROM agent_plans p, earlier e WHERE p.user_message_id = e.id)
SELECT coalesce((SELECT to_jsonb(m) FROM message m), (SELECT to_jsonb(e) FROM earlier e))
           AS message,
    EXISTS (SELECT 1 FROM message) AS created,
    (SELECT id FROM turn LIMIT 1) AS plan_id,
    (SELECT status FROM turn LIMIT 1) AS plan_status,
    (SELECT id FROM planner LIMIT 1) AS planner_id,
    (SELECT to_jsonb(r) FROM running r) AS running"""


async def store_turn(
    conn: Connection,
    *,
    session_id: UUID,
    user_id: UUID,
    content: str,
    client_message_id: str | None,
    fresh_seconds: float,
    planner_model: str,
    planner_budget: int,
    planner_prompt: str,
    trace_id: str | None = None,
) -> StoredTurn:
    """In one statement, with the session's row locked by the caller: the earlier message sent
    with `client_message_id` and its plan; or the turn still running in the session; or the
    message stored now, with the session's planner (made on first use) and the message's plan
    (in trace `trace_id`: the request's, when tracing is on).
    (What counts as running: `plans.RUNNING_PLAN`.)"""
    cur = await conn.execute(
        STORE_TURN,
        {
            "session": session_id,
            "user": user_id,
            "content": content,
            "cmid": client_message_id,
            "fresh": fresh_seconds,
            "model": planner_model,
            "budget": planner_budget,
            "trace": trace_id,
            **prompt_params(planner_prompt),
        },
    )
    row = await cur.fetchone()
    assert row is not None
    running = record_from_json(Plan, row["running"]) if row["running"] else None
    message = record_from_json(ChatMessage, row["message"]) if row["message"] else None
    return StoredTurn(
        message,
        row["plan_id"],
        row["planner_id"],
        row["plan_status"],
        bool(row["created"]),
        running,
    )
