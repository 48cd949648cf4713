"""Names of the engine types that can be mounted (no imports of engines here)."""

from __future__ import annotations

from node.logical.mount import MountEntry

__all__ = ["AUTH_TYPES", "ENGINE_TYPES", "PLUGGABLE", "kv_version"]

ENGINE_TYPES = ("kv", "kv-v1", "kv-v2")
#: Auth methods by the import path of their ``Factory`` (``(BackendConfig) -> Backend``),
#: imported when first mounted.
PLUGGABLE: dict[str, str] = {
    "userpass": "node.auth.userpass.backend:factory",
    "idp": "node.auth.idp.backend:factory",
}
#: Auth methods that can be enabled with ``sys/auth`` (``token`` exists once, at ``token/``).
AUTH_TYPES: tuple[str, ...] = ("userpass", "idp")


def kv_version(entry: MountEntry) -> str:
    """``kv-v2`` and ``kv`` with ``options.version = "2"`` are version 2."""
    if entry.type == "kv-v2":
        return "2"
    if entry.type == "kv-v1":
        return "1"
    return entry.options.get("version", "1") or "1"
