"""The wire models: the request and response bodies of the three functions, and the events'
JSON Schema (`event_schema`). Pydantic, free of HTTP: the API, the events and the use cases
share them."""
