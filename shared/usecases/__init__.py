"""The use cases the functions serve: sending, sessions, approvals, plan views, transcripts,
dashboards, the sweeper."""
