"""Pydantic wire models: what the functions accept and return."""
