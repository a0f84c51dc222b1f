"""AWS Lambda entry point of the `agent_planner` function: its function URL, its SQS queue
("run plan", "resume plan") and the sweeper's EventBridge schedule."""

from __future__ import annotations

from functions.agent_planner.app import app
from shared.runtime.lambda_handler import LambdaHandler

handler = LambdaHandler(app, queue=True, schedule=True, agent="planner")
handler.prepare()
