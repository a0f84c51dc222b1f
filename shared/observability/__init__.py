"""Logs and traces: how a function says what it did."""
