"""The `Invoker` over HTTP: chat → planner and planner → executor through their function URLs.

Calls carry the service-role key. Delivery is at least once: a request that fails to connect,
times out or gets a 5xx/429 is sent again (the targets are idempotent: `run_plan` resumes from
the tables, `run_executor_step` is keyed on step and attempt). Whatever happens, the caller
re-reads the tables afterwards, so a lost response loses nothing. The client is httpx2, as
everywhere in the functions (`Services.http`). With tracing on, each call is a CLIENT span
whose context the request carries (`traceparent` header): the callee continues the trace.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any
from uuid import UUID

import httpx2

from shared.agents.outcomes import PlanOutcome, StepOutcome
from shared.kernel.background import run_in_background
from shared.kernel.errors import (
    AppError,
    ConfigurationError,
    Conflict,
    NotFound,
    UpstreamUnavailable,
)
from shared.kernel.tls import http_client_tls_context
from shared.observability import tracing

log = logging.getLogger(__name__)

RETRYABLE = {429, 500, 502, 503, 504}


ANSWERED = {404: NotFound, 409: Conflict}


class HttpInvoker:
    """Runs plans on the planner function and steps on the executor function, over HTTP."""

    hands_off = False

    def __init__(
        self,
        *,
        planner_url: str | None,
        executor_url: str | None,
        service_key: str,
        attempts: int = 3,
        timeout_seconds: float = 900.0,
        retry_delay_seconds: float = 1.0,
        client: httpx2.AsyncClient | None = None,
    ) -> None:
        self._planner_url = planner_url.rstrip("/") if planner_url else None
        self._executor_url = executor_url.rstrip("/") if executor_url else None
        self._headers = {"Authorization": f"Bearer {service_key}"}
        self._attempts = attempts
        self._retry_delay = retry_delay_seconds
        self._client = client or httpx2.AsyncClient(
            timeout=httpx2.Timeout(timeout_seconds, connect=10.0), verify=http_client_tls_context()
        )

    async def run_plan(self, *, plan_id: UUID) -> PlanOutcome:
        body = await self._post(self._url("planner", self._planner_url, f"/plans/{plan_id}/run"))
        return PlanOutcome(
            plan_id=UUID(body["plan_id"]),
            session_id=UUID(body["session_id"]),
            status=body["status"],
            strategy=body["strategy"],
            answer=body["answer"],
            message_id=UUID(body["message_id"]) if body["message_id"] else None,
            error=body["error"],
            running_elsewhere=body.get("running_elsewhere", False),
            handed_off=body.get("handed_off", False),
        )

    async def run_step(self, *, step_id: UUID, attempt: int) -> StepOutcome:
        url = self._url("executor", self._executor_url, f"/steps/{step_id}/run")
        body = await self._post(url, json={"attempt": attempt})
        return StepOutcome(
            step_id=UUID(body["step_id"]),
            step_number=body["step_number"],
            status=body["status"],
            result=body["result"],
            error=body["error"],
            running_elsewhere=body.get("running_elsewhere", False),
        )

    async def start_step(self, *, plan_id: UUID, step_id: UUID, attempt: int) -> None:
        """Call the executor in the background (on a host that keeps running; on Lambda use
        the `sqs` transport, which hands steps to a queue)."""
        run_in_background(self.run_step(step_id=step_id, attempt=attempt), name=f"step {step_id}")

    async def stream_plan(self, *, plan_id: UUID) -> AsyncIterator[str]:
        """The planner's server-sent events for a run of the plan, as they arrive (one try)."""
        url = self._url("planner", self._planner_url, f"/plans/{plan_id}/run?stream=true")
        headers = self._headers | tracing.carrier()
        async with self._client.stream("POST", url, headers=headers) as response:
            if response.status_code >= 300:
                raise UpstreamUnavailable(f"the planner answered HTTP {response.status_code}")
            async for chunk in response.aiter_text():
                yield chunk

    def _url(self, function: str, base: str | None, path: str) -> str:
        if base is None:
            setting = f"{function.upper()}_FUNCTION_URL"
            raise ConfigurationError(
                f"INVOKER_TRANSPORT=http needs {setting}: the {function} function's URL"
            )
        return base + path

    async def _post(self, url: str, json: dict[str, Any] | None = None) -> dict[str, Any]:
        attributes = {"http.request.method": "POST", "url.full": url}
        with tracing.span("POST", kind="client", attributes=attributes):
            return await self._post_retried(url, json)

    async def _post_retried(self, url: str, json: dict[str, Any] | None) -> dict[str, Any]:
        failure = ""
        headers = self._headers | tracing.carrier()  # the callee's span continues the trace
        for attempt in range(1, self._attempts + 1):
            try:
                response = await self._client.post(url, json=json or {}, headers=headers)
            except httpx2.HTTPError as exc:
                failure = f"{type(exc).__name__}"
            else:
                if response.status_code < 300:
                    body: dict[str, Any] = response.json()
                    return body
                failure = f"HTTP {response.status_code}: {response.text[:300]}"
                if response.status_code not in RETRYABLE:
                    raise _answered(response) from None
            log.warning("call to %s failed (%s), attempt %d", url, failure, attempt)
            if attempt < self._attempts:
                await asyncio.sleep(self._retry_delay * 2 ** (attempt - 1))
        raise UpstreamUnavailable(f"{url} could not be run: {failure}")


def _answered(response: httpx2.Response) -> AppError:
    """The error another function answered with, as ours (its problem+json detail kept)."""
    try:
        detail = str(response.json().get("detail", response.text))
    except ValueError:
        detail = response.text[:300]
    if response.status_code in (401, 403):
        return ConfigurationError(
            f"another Parley function refused the service key ({detail}): check that "
            "SUPABASE_SERVICE_ROLE_KEY and SUPABASE_JWT_SECRET match across functions"
        )
    return ANSWERED.get(response.status_code, UpstreamUnavailable)(detail)
