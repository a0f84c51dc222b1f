"""A span per HTTP request a function answers (kind SERVER), in the caller's trace.

An ASGI middleware around each function's app (`shared.api.app.create_base_app`), so the same code
serves Lambda (Mangum) and the local stack (uvicorn). The request's `traceparent` header — the
HTTP invoker's, or a frontend's — is the span's parent; without one the request begins a trace
(a user's `POST /chat`: the turn's). Named `<METHOD> <route>` (`POST /plans/{plan_id}/run`),
with HTTP's semantic attributes and, on Lambda, the invocation's (`faas.*`, from the Lambda
context Mangum passes). With tracing off it passes each request straight on.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from shared.observability import tracing


class TraceRequests:
    """ASGI middleware: each HTTP request in a SERVER span."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not tracing.enabled():
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        method = scope["method"]
        attributes = {
            "http.request.method": method,
            "url.path": scope["path"],
            "url.scheme": scope.get("scheme", "http"),
            **tracing.invocation(),
        }
        if "user-agent" in headers:
            attributes["user_agent.original"] = headers["user-agent"]
        with tracing.span(method, kind="server", attributes=attributes, parent=headers) as span:

            async def answered(message: Message) -> None:
                if message["type"] == "http.response.start":
                    span.set_attribute("http.response.status_code", message["status"])
                    if message["status"] >= 500:  # the conventions: a server's 5xx failed
                        span.set_attribute("error.type", str(message["status"]))
                await send(message)

            try:
                await self.app(scope, receive, answered)
            finally:
                route = getattr(scope.get("route"), "path", None)
                if route:
                    span.update_name(f"{method} {route}")
                    span.set_attribute("http.route", route)
