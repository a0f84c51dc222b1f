"""AWS Lambda entry point of the `chat` function (function URL, payload v2)."""

from __future__ import annotations

from mangum import Mangum

from functions.chat.app import app

handler = Mangum(app, lifespan="off")
