"""Leaves the server's packages share: the storage interface, errors, JSON, Raft certificates.

See sdk/DESIGN.md. Imports nothing of node, consensus, api or cli.
"""
