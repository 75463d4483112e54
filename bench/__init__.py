"""Benchmark suite: agentlog against the sqlite3+json floor, raw eventsourcing and peers."""
