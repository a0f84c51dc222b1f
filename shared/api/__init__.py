"""The HTTP layer: the app factory, problem+json, auth dependencies."""
