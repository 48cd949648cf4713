"""Key-value version 2: versioned secrets with check-and-set.

The path table is split by concern (``paths_*``); all of them share one
``KVStore``, whose retried, revision-checked transactions keep version numbers
unique under concurrent writers.
"""

from __future__ import annotations

from node.barrier.view import BarrierView
from node.engines.kv.paths_config import ConfigPaths
from node.engines.kv.paths_data import DataPaths
from node.engines.kv.paths_metadata import MetadataPaths
from node.engines.kv.paths_versions import VersionPaths
from node.engines.kv.store import KVStore
from node.framework import FrameworkBackend
from node.logical.request import Operation, Request
from node.logical.response import Response
from sdk.errors import UnsupportedPathError

__all__ = ["ROOT_WARNING", "KVv2Backend", "invalid_path_warning"]

ROOT_WARNING = "Non-listing operations on the root of a K/V v2 mount are not supported."
_ROOTS = frozenset({"data", "metadata", "delete", "undelete", "destroy", "subkeys"})
_CLI_COMMANDS = {
    Operation.CREATE: "put",
    Operation.UPDATE: "put",
    Operation.PATCH: "patch",
    Operation.READ: "get",
    Operation.LIST: "list",
    Operation.DELETE: "delete",
}


def invalid_path_warning(operation: Operation) -> str:
    """The reference's hint for clients that use KV v1 paths on a v2 mount."""
    command = _CLI_COMMANDS.get(operation, "get")
    return (
        "Invalid path for a versioned K/V secrets engine. See the API docs for the appropriate "
        f"API endpoints to use. If using the Coffer CLI, use 'coffer kv {command}' for this "
        "operation."
    )


class KVv2Backend(FrameworkBackend):
    type = "kv"
    #: The secrets themselves; seal-wrapped under an HSM seal, as the reference's KV v2.
    seal_wrap_storage: tuple[str, ...] = ("versions/",)
    help_text = (
        "The key-value (version 2) engine keeps a history of versions for each secret: "
        "data/ reads and writes them, metadata/ configures and lists keys, "
        "delete/, undelete/ and destroy/ act on versions, subkeys/ shows a secret's shape."
    )

    def __init__(self, view: BarrierView) -> None:
        store = KVStore(view)
        super().__init__(
            [
                *ConfigPaths(store).paths(),
                *DataPaths(store).paths(),
                *MetadataPaths(store).paths(),
                *VersionPaths(store).paths(),
            ]
        )

    async def handle(self, request: Request) -> Response | None:
        """Paths outside the table answer 404 with a hint instead of a bare error,
        as KV v1-style requests on a v2 mount are a common client mistake."""
        if request.path.rstrip("/") in _ROOTS and request.operation is not Operation.LIST:
            return Response(status=404, warnings=[ROOT_WARNING])
        try:
            self._find(request.path)
        except UnsupportedPathError:
            return Response(status=404, warnings=[invalid_path_warning(request.operation)])
        return await super().handle(request)
