"""Plans as their user sees them: steps, threads, executions, approvals (read under the user's RLS).

One plan or a whole session's take the same six reads in one transaction: the plans, then each
kind of row for all of them at once (`plan_id = ANY(...)`), grouped here — and what retention
deleted of them (`shared.usecases.retention`), so a view of an old turn says so instead of showing
less.
"""

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol, TypeVar
from uuid import UUID

from pydantic import BaseModel

from shared.auth.access_tokens import User
from shared.db import Connection, Database, chats, plans
from shared.db._rows import fetch_all
from shared.db.records import AgentThread, Approval, Execution, PlanStep, Retained, columns
from shared.kernel.errors import NotFound
from shared.usecases.retention import removed_details
from shared.wire.sessions import RemovedDetail
from shared.wire.turns import ApprovalOut, ExecutionOut, PlanDetail, StepOut, ThreadOut

PARTS = ("steps", "threads", "executions", "approvals")
PLAN_FIELDS = tuple(
    name for name in PlanDetail.model_fields if name not in PARTS and name != "removed"
)
SHOWN_REMOVED: tuple[Retained, ...] = ("dialogue", "tool_rounds", "executions")
"""What a plan view says retention deleted (its threads and executions were among those)."""
SESSION_PLANS = f"""
    SELECT {", ".join(f"p.{name}" for name in PLAN_FIELDS)}, m.seq AS message_seq
      FROM agent_plans p JOIN chat_messages m ON m.id = p.user_message_id
     WHERE p.session_id = %s AND m.seq > %s
     ORDER BY m.seq LIMIT %s"""


class SessionPlans(NamedTuple):
    """A page of a session's plans, in the order of the messages they answer."""

    plans: list[PlanDetail]
    last_seq: int
    """The `seq` of the last plan's user message: `after_seq` for the next page."""


async def plan_detail(db: Database, user: User, plan_id: UUID) -> PlanDetail:
    """The user's plan with everything that happened in it; `NotFound` for anyone else."""
    async with db.as_user(user.id, read_only=True, claims=user.claims) as conn:
        plan = await plans.get_user_plan(conn, plan_id=plan_id)
        if plan is None:
            raise NotFound(f"Plan {plan_id} not found")
        [detail] = await _details(conn, [{name: getattr(plan, name) for name in PLAN_FIELDS}])
    return detail


async def session_plans(
    db: Database, user: User, session_id: UUID, *, after_seq: int = 0, limit: int = 50
) -> SessionPlans:
    """The session's plans whose user message comes after `after_seq`, each in full, oldest
    first; `NotFound` if the session is missing, deleted or someone else's."""
    async with db.as_user(user.id, read_only=True, claims=user.claims) as conn:
        session = await chats.get_session(conn, session_id=session_id)
        if session is None or session.status == "deleted":
            raise NotFound(f"Chat session {session_id} not found")
        cur = await conn.execute(SESSION_PLANS, (session_id, after_seq, limit))
        rows = await cur.fetchall()
        details = await _details(conn, rows)
    return SessionPlans(details, rows[-1]["message_seq"] if rows else after_seq)


class _PlanPart(Protocol):
    @property
    def plan_id(self) -> UUID: ...


Out = TypeVar("Out", bound=BaseModel)


async def _details(conn: Connection, found: Sequence[Mapping[str, Any]]) -> list[PlanDetail]:
    """`found` (plan rows) with their steps, threads, executions and approvals."""
    if not found:
        return []
    ids = [row["id"] for row in found]
    steps = await fetch_all(
        conn,
        PlanStep,
        f"""SELECT {columns(PlanStep)} FROM agent_plan_steps
             WHERE plan_id = ANY(%s) ORDER BY step_number""",
        (ids,),
    )
    threads = await fetch_all(
        conn,
        AgentThread,
        f"""SELECT {columns(AgentThread)} FROM agent_chat_sessions
             WHERE plan_id = ANY(%s) ORDER BY created_at, id""",
        (ids,),
    )
    runs = await fetch_all(
        conn,
        Execution,
        f"""SELECT {columns(Execution)} FROM agent_executions
             WHERE plan_id = ANY(%s) ORDER BY created_at, id""",
        (ids,),
    )
    asked = await fetch_all(
        conn,
        Approval,
        f"""SELECT {columns(Approval)} FROM agent_approvals
             WHERE plan_id = ANY(%s) ORDER BY created_at, id""",
        (ids,),
    )
    removed = await removed_details(conn, ids, SHOWN_REMOVED)
    parts: dict[str, Mapping[UUID, Sequence[BaseModel]]] = {
        "steps": _by_plan(steps, StepOut),
        "threads": _threads(threads, steps),
        "executions": _by_plan(runs, ExecutionOut),
        "approvals": _by_plan(asked, ApprovalOut),
        "removed": _by_plan(removed, RemovedDetail),
    }
    return [
        PlanDetail.model_validate(
            {name: row[name] for name in PLAN_FIELDS}
            | {part: rows.get(row["id"], []) for part, rows in parts.items()}
        )
        for row in found
    ]


def _threads(
    threads: Iterable[AgentThread], steps: Iterable[PlanStep]
) -> dict[UUID, list[ThreadOut]]:
    """The threads as shown, by plan; each that ended its step with its step's result (the
    result is stored once, on the step)."""
    results = {step.id: step.result for step in steps}
    grouped: defaultdict[UUID, list[ThreadOut]] = defaultdict(list)
    for thread in threads:
        ended = thread.step_id is not None and thread.status in ENDED_WITH_RESULT
        result = results.get(thread.step_id) if ended and thread.step_id else None
        grouped[thread.plan_id].append(
            ThreadOut.model_validate({**thread._asdict(), "result": result})
        )
    return grouped


ENDED_WITH_RESULT = ("completed", "timeout")
"""A thread that ended with a result (a timed-out step keeps its partial one)."""


def _by_plan(rows: Iterable[_PlanPart], out: type[Out]) -> dict[UUID, list[Out]]:
    grouped: defaultdict[UUID, list[Out]] = defaultdict(list)
    for row in rows:
        grouped[row.plan_id].append(out.model_validate(row))
    return grouped
