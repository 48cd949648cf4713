"""Benchmarks: an asynchronous load generator, targets, workloads and the docs writer.

Speed is measured here and reported in ``docs/performance.md``; no test asserts it.
"""
