"""TLS settings, loaded once per process (loading the CA certificates takes 20–60 ms, which
`LambdaHandler.prepare` spends at init where a request would need it).

Two contexts, one per kind of client:

* `tls_context` — for the connections Parley opens with the standard library: over
  `http.client` (`shared.aws.stdlib_http`), SQS sends, Secrets Manager at init and the
  credentials endpoint; over `urllib`, the fetch of a project's signing keys
  (`shared.auth.access_tokens`). Importing nothing but `ssl`, it keeps the chat function's send path
  free of any HTTP library.
* `http_client_tls_context` — for every `httpx2` client: the model client's
  (`shared.llm._openai_wire.build_client`), Realtime broadcasts and calls to other functions
  (`Services.http`). httpx2's own defaults: `SSL_CERT_FILE` / `SSL_CERT_DIR`, else the
  system's certificates (the platform's trust store on macOS and Windows). Sharing it means
  the CA certificates are loaded once for all of them.
"""

from __future__ import annotations

import ssl
from functools import lru_cache


@lru_cache(maxsize=1)
def tls_context() -> ssl.SSLContext:
    """The system's CA certificates and Python's default TLS settings."""
    return ssl.create_default_context()


@lru_cache(maxsize=1)
def http_client_tls_context() -> ssl.SSLContext:
    """httpx2's default TLS settings, for every httpx2 client of the process."""
    import httpx2  # only for its clients

    return httpx2.create_ssl_context()
