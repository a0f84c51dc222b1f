"""AWS Lambda entry point of the `chat` function (function URL, payload v2)."""

from __future__ import annotations

from functions.chat.app import app
from shared.runtime.lambda_handler import LambdaHandler

handler = LambdaHandler(app)
handler.prepare()
