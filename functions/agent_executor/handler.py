"""AWS Lambda entry point of the `agent_executor` function: its function URL and its SQS
queue ("run step")."""

from __future__ import annotations

from functions.agent_executor.app import app
from shared.runtime.lambda_handler import LambdaHandler

handler = LambdaHandler(app, queue=True, agent="executor")
handler.prepare()
