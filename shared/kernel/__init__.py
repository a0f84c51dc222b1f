"""The kernel: errors, settings, usage and small helpers (ids, text, TLS, background tasks,
admission, lazy exports). Imports nothing of Parley."""
