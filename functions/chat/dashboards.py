"""Routes over the SQL dashboard views, for operators."""

from typing import Annotated

from fastapi import APIRouter, Query

from shared.api.deps import CurrentUser, ServicesDep
from shared.api.problems import problems
from shared.usecases.daily_dashboards import daily_dashboards
from shared.wire.dashboards import Dashboards

router = APIRouter(tags=["dashboards"])
Days = Annotated[int, Query(ge=1, le=366, description="How many UTC days, today included.")]


@router.get("/dashboards/daily", responses=problems(403))
async def get_daily_dashboards(
    user: CurrentUser, services: ServicesDep, days: Days = 30
) -> Dashboards:
    """Per UTC day: executions by model and agent role (tokens incl. cache hits, cost, p50/p95
    durations) and plan outcomes by strategy, for every user. Operators only
    (`app_metadata.parley_role = "operator"`)."""
    return await daily_dashboards(services.db, user, days=days)
