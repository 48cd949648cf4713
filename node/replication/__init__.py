"""Cross-cluster replication: performance and DR secondaries above Raft (DESIGN.md)."""
