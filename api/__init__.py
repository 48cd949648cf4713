"""Coffer's HTTP edge (aiohttp).

The only package that imports aiohttp. It turns HTTP into immutable
``node.logical.Request`` values and ``Response`` values back into the JSON
envelope, owns the single error-to-status table, and serves the endpoints that
must work while sealed (init, seal-status, unseal, health, leader).
"""
