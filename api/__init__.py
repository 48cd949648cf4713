"""Coffer's HTTP edge (aiohttp).

The only package that imports aiohttp. It turns HTTP into immutable
``node.logical.Request`` values and ``Response`` values back into the JSON
envelope, owns the single error-to-status table, and serves the endpoints that
must work while sealed (init, seal-status, unseal, health, leader).
"""

from api.http_parser_choice import choose_pure_python_parser

# Before any module of this package imports aiohttp (see api/http_parser_choice.py).
choose_pure_python_parser()
