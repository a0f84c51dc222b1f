"""AWS Lambda entry point of the `agent_executor` function (function URL, payload v2)."""

from __future__ import annotations

from mangum import Mangum

from functions.agent_executor.app import app

handler = Mangum(app, lifespan="off")
