"""TLS settings for the connections Parley opens with the standard library: SQS sends
(`shared.queues.sqs_http`) and the fetch of a project's signing keys (`shared.auth`)."""

from __future__ import annotations

import ssl
from functools import lru_cache


@lru_cache(maxsize=1)
def tls_context() -> ssl.SSLContext:
    """The system's CA certificates and Python's default TLS settings, loaded once per process:
    the loading takes 20–40 ms, which `LambdaHandler.prepare` spends at init when a request
    would need it."""
    return ssl.create_default_context()
