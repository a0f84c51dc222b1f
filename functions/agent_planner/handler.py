"""AWS Lambda entry point of the `agent_planner` function (function URL, payload v2)."""

from __future__ import annotations

from mangum import Mangum

from functions.agent_planner.app import app

handler = Mangum(app, lifespan="off")
