"""The transports that run plans and steps: in this process, over HTTP, through SQS."""
