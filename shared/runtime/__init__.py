"""The Lambda runtime: one handler per function, SnapStart's hooks, the queue consumer."""
