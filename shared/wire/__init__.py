"""The wire models: request and response bodies, and the events' JSON Schema."""
