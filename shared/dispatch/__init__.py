"""The transports that run plans and steps: in this process, over HTTP, through SQS.

Each is an `Invoker` (`shared.agents.ports`): `in_process`, `http_invoker`, `sqs_invoker`;
`transport` picks one per `INVOKER_TRANSPORT` and opens each invocation's publisher.
"""
