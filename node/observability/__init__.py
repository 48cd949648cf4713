"""Structured logs and Prometheus metrics; neither ever carries a secret."""
