"""SQS as a transport: what a message says, and what sends it.

`queue_messages` (what a message says: ids only), `senders` (what sends them: `sqs_http`,
SQS's API over `http.client` signed by `shared.aws.sigv4`, or boto3). Sends with Lambda's
credentials never import boto3. The invoker that uses them is `shared.dispatch.sqs_invoker`,
a function's handler for its queue `shared.runtime.queue_consumer`, and the dead letters are
the sweeper's (`shared.usecases.dead_letters`).
"""
