"""The use cases the functions serve, free of HTTP: sending a message, a user's sessions,
deciding approvals, plan views, transcripts, the daily dashboards, the sweeper (with the dead
letters and retention it runs)."""
