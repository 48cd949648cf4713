"""Builds the physical backend named by the ``storage`` stanza."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from node.physical.file import FileBackend
from node.physical.inmem import InmemBackend
from sdk.errors import InvalidRequestError
from sdk.physical import PhysicalBackend

__all__ = ["open_backend"]


def open_backend(kind: str, options: Mapping[str, Any]) -> PhysicalBackend:
    """Open storage of type ``kind``; the Raft type is opened by ``consensus``."""
    if kind == "inmem":
        return InmemBackend()
    if kind == "file":
        return FileBackend(str(options["path"]))
    raise InvalidRequestError(f"unknown storage type {kind!r}")
