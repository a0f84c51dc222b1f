"""AWS without boto3, for what the functions do on every cold start or first request.

`sigv4` signs a request (standard library only), `credentials` finds what it is signed with
(Lambda's environment, or SnapStart's credentials endpoint), `secrets` reads the stage's
Secrets Manager secret at init, and `stdlib_http` is the standard library's HTTP they (and SQS
sends, `shared.queues.sqs_http`) go over. boto3 costs a cold start ~0.2 s to import and build
a client; these cost a few milliseconds (`bench.cold_start`).
"""
