"""`realtime.messages` and Broadcast from Database: the table, its partitions, replay, delivery."""
