"""The operators' dashboards over HTTP: the SQL dashboard views, for a console's charts.

The views cover every user, so only operators may read them: users whose Supabase
`app_metadata` says `"parley_role": "operator"` (only the service role can set `app_metadata`,
so a user cannot make themselves one).
"""

from __future__ import annotations

from collections.abc import Mapping

from shared.auth.access_tokens import User
from shared.db import Database
from shared.kernel.errors import PermissionDenied
from shared.wire.dashboards import Dashboards, ExecutionDay, PlanDay

OPERATOR_CLAIM = "parley_role"
OPERATOR = "operator"


def is_operator(user: User) -> bool:
    """Whether the user's verified token names them an operator (`app_metadata.parley_role`)."""
    metadata = user.claims.get("app_metadata")
    return isinstance(metadata, Mapping) and metadata.get(OPERATOR_CLAIM) == OPERATOR


async def daily_dashboards(db: Database, user: User, *, days: int) -> Dashboards:
    """Executions and plan outcomes per UTC day over the last `days` days (today included)."""
    if not is_operator(user):
        raise PermissionDenied(
            "The dashboards show every user's usage: they are for operators, whose "
            f'app_metadata has "{OPERATOR_CLAIM}": "{OPERATOR}".'
        )
    since = "day > (now() AT TIME ZONE 'UTC')::date - %s"
    async with db.service() as conn:
        cur = await conn.execute(
            f"SELECT * FROM execution_stats_daily WHERE {since} ORDER BY day, model, agent_role",
            (days,),
        )
        executions = [ExecutionDay.model_validate(row) for row in await cur.fetchall()]
        cur = await conn.execute(
            f"SELECT * FROM plan_outcomes_daily WHERE {since} ORDER BY day, strategy", (days,)
        )
        plans = [PlanDay.model_validate(row) for row in await cur.fetchall()]
    return Dashboards(days=days, executions=executions, plans=plans)
