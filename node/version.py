"""The server's version: a leaf fact with no imports.

It lives apart from ``node.core`` so that the engines, the framework and the
API can name it at module level without importing the core (which imports
them) and without hiding an import inside a function to dodge the cycle.
"""

from __future__ import annotations

__all__ = ["VERSION"]

VERSION = "0.1.0"
