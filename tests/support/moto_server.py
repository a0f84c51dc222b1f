"""moto's AWS as a server on this machine, which Parley's functions reach over HTTP.

`moto_server()` runs moto's `ThreadedMotoServer` on 127.0.0.1 (a free port) in this process.
Sends go through `shared.queues.sqs_http`, which speaks SQS's HTTP API with `http.client`;
moto's in-process `mock_aws` intercepts only boto3's requests, so a server is what both reach:
the sender at the queue URLs the server hands out (they name it), boto3's clients through
`AWS_ENDPOINT_URL_SQS` (`environment`). The credentials are fake: no real account is ever
reachable.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

FAKE_AWS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "eu-central-1",
    "AWS_REGION": "eu-central-1",
}
NOT_INHERITED = ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS")
"""Settings of a developer's own AWS that must not reach a process talking to moto."""


@contextmanager
def moto_server() -> Iterator[str]:
    """moto's server, started; its endpoint (`http://127.0.0.1:<port>`). On exit its state
    is reset (moto keeps it per process) and it stops."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    try:
        yield endpoint
    finally:
        try:
            urllib.request.urlopen(  # the server above, on the loopback
                urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"), timeout=10
            ).close()
        finally:
            server.stop()


def environment(endpoint: str) -> dict[str, str]:
    """What a process's environment needs to use moto at `endpoint` (besides dropping
    `NOT_INHERITED`): the fake credentials and region, and the server as boto3's SQS."""
    return {**FAKE_AWS, "AWS_ENDPOINT_URL_SQS": endpoint}
