"""Raft replication of Coffer's encrypted storage (pysyncobj).

The only package allowed to import pysyncobj. It holds ciphertext only. The
Raft physical backend arrives with the cluster work; until then this package
is intentionally empty so the layering is fixed from the start.
"""
