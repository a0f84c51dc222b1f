"""From a row to its trace: `agent_plans.trace_id` and `agent_executions.trace_id`.

With tracing on (`OTEL_*` settings, docs/observability.md) every user turn is one
OpenTelemetry trace across the three functions. The plan keeps the trace of the turn that
created it (set when the message is stored, or by the first run that had one); each execution
keeps the trace of the invocation that opened it — the plan's, unless a later request (an
approval decided, the sweeper's re-drive) resumed it. NULL where tracing was off. So a failed
plan on a dashboard, or in the console's operations view, leads to its trace, and a trace
(by its id, indexed) to its plan.

32 lowercase hex digits, as W3C trace context writes them (`traceparent`), never all zeros.
The tables' grants are unchanged: the column is read like the rest of the row (RLS: the
user's own plans), and only the service writes it. A trace id is no secret: it grants nothing.

Revision ID: 4d1e8a7c0601
Revises: 7a3c5e1f0501
Create Date: 2026-11-27 09:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "4d1e8a7c0601"
down_revision: str | None = "7a3c5e1f0501"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TRACE_ID = "text CHECK (trace_id ~ '^[0-9a-f]{32}$' AND trace_id <> repeat('0', 32))"

UPGRADE = f"""
ALTER TABLE public.agent_plans ADD COLUMN trace_id {TRACE_ID};
COMMENT ON COLUMN public.agent_plans.trace_id IS
    'OpenTelemetry trace of the turn that created the plan (NULL: tracing was off).';
CREATE INDEX agent_plans_trace_idx ON public.agent_plans (trace_id) WHERE trace_id IS NOT NULL;

ALTER TABLE public.agent_executions ADD COLUMN trace_id {TRACE_ID};
COMMENT ON COLUMN public.agent_executions.trace_id IS
    'OpenTelemetry trace of the invocation that opened the run (NULL: tracing was off).';
"""

DOWNGRADE = """
ALTER TABLE public.agent_executions DROP COLUMN trace_id;
DROP INDEX public.agent_plans_trace_idx;
ALTER TABLE public.agent_plans DROP COLUMN trace_id;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
