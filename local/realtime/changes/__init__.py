"""Change capture (postgres_changes): install, LISTEN, route."""
