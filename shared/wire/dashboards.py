"""Wire models of the operators' dashboards (rows of the SQL dashboard views)."""

from datetime import date
from decimal import Decimal

from pydantic import BaseModel

from shared.wire.sessions import _Out


class ExecutionDay(_Out):
    """One `execution_stats_daily` row: a UTC day × model × agent role."""

    day: date
    model: str
    agent_role: str
    executions: int
    completed: int
    failed: int
    timed_out: int
    cancelled: int
    success_rate: Decimal | None
    p50_duration_ms: Decimal | None
    p95_duration_ms: Decimal | None
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    cache_hit_tokens: int
    cost_usd: Decimal
    tool_calls: int
    permission_denials: int


class PlanDay(_Out):
    """One `plan_outcomes_daily` row: a UTC day × strategy."""

    day: date
    strategy: str
    plans: int
    completed: int
    failed: int
    cancelled: int
    awaiting_approval: int
    in_progress: int
    success_rate: Decimal | None
    avg_steps: Decimal | None
    p50_duration_ms: Decimal | None
    prompt_tokens: int
    completion_tokens: int
    cache_hit_tokens: int
    cost_usd: Decimal


class Dashboards(BaseModel):
    """The last `days` UTC days of the dashboard views, oldest first (all users)."""

    days: int
    executions: list[ExecutionDay]
    plans: list[PlanDay]
