"""AWS Lambda entry point of the `agent_executor` function: its function URL and its SQS
queue ("run step")."""

from __future__ import annotations

from functions.agent_executor.app import app
from shared.lambda_entry import LambdaHandler, load_model_client

load_model_client()  # every invocation of this function calls a model: pay for it at init

handler = LambdaHandler(app, queue=True)
handler.prepare()
