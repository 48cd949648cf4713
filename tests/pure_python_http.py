"""pytest plugin (``-p tests.pure_python_http`` in pyproject's ``addopts``): selects
aiohttp's pure-Python HTTP parser before pytest-aiohttp imports aiohttp, as the
server process does (api/http_parser_choice.py)."""

from __future__ import annotations

import os

os.environ.setdefault("AIOHTTP_NO_EXTENSIONS", "1")
