"""The AWS transport: SQS messages between the functions, their consumers, dead letters.

`messages` (what a message says: ids only), `sqs` (sending them: `SqsInvoker`), `senders`
(what sends them: `sqs_http`, SQS's API over `http.client` signed by `shared.aws.sigv4`,
or boto3),
`consumer` (a function's Lambda handler for its queue), `dead_letters` (messages that kept
failing). Sends with Lambda's credentials never import boto3; the consumers and the sweeper
import it when they first use it (the Lambda runtime provides it).
"""
