"""Keep API keys out of the logs: uvicorn logs websocket paths with their query strings."""

from __future__ import annotations

import logging
import re

_APIKEY = re.compile(r"(apikey=)[^&\s\"']+", re.IGNORECASE)


class RedactApiKeys(logging.Filter):
    """Rewrites `apikey=<token>` in a record's message to `apikey=REDACTED`."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = _APIKEY.sub(r"\1REDACTED", message)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True


def redact_uvicorn_logs() -> None:
    """Install the filter on uvicorn's loggers (idempotent)."""
    for name in ("uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactApiKeys) for f in logger.filters):
            logger.addFilter(RedactApiKeys())
