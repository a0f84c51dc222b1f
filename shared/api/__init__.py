"""The HTTP layer the three functions share: the app factory, problem+json, auth dependencies."""
