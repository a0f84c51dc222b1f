"""Code shared by Parley's three functions, in layers; each imports only from those below it.

From the top: `runtime` (the Lambda handler, SnapStart, the queue consumer), `api` (FastAPI:
the app factory, problem+json, auth dependencies), `services` (the composition root),
`usecases` (sending, sessions, approvals, plan views, transcripts, dashboards, the sweeper),
`dispatch` (the transports that run plans and steps), `agents` (the planner and the
executor), `wire` (request, response and event shapes), `tools` / `queues` / `auth`,
`llm` / `aws`, `db`, `events`, `observability` and the `kernel` (errors, settings, usage,
small helpers). `pyproject.toml`'s import contracts hold the order and keep it free of
circles.
"""
