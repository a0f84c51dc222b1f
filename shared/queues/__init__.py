"""The AWS transport: SQS messages between the functions, their consumers, dead letters.

`messages` (what a message says: ids only), `sqs` (sending them: `SqsInvoker`), `consumer`
(a function's Lambda handler for its queue), `dead_letters` (messages that kept failing).
boto3 is imported only when a queue is first used: the Lambda runtime provides it.
"""
