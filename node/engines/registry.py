"""Engine and auth-method types by name: every one is built by a ``Factory``.

The types here need nothing but their ``BackendConfig``. Auth methods are
named by the import path of their factory (``node.engines.types.PLUGGABLE``),
so adding a method does not touch this module's imports. The core's own
backends (``sys/``, ``auth/token/``, ``identity/``) are bound by the core
(``node.core.catalog``), which asks here for everything else.
"""

from __future__ import annotations

import importlib

from node.engines.cubbyhole import CubbyholeBackend
from node.engines.kv.v1 import KVv1Backend
from node.engines.kv.v2 import KVv2Backend
from node.engines.types import ENGINE_TYPES, PLUGGABLE, kv_version
from node.logical.backend import Backend, Factory
from node.logical.system_view import BackendConfig
from sdk.errors import InvalidRequestError

__all__ = ["factory_for"]


def _kv(config: BackendConfig) -> Backend:
    if kv_version(config.mount) == "2":
        return KVv2Backend(config.storage)
    return KVv1Backend(config.storage)


def _cubbyhole(config: BackendConfig) -> Backend:
    return CubbyholeBackend(config.storage)


def _imported(path: str) -> Factory:
    module_name, _, name = path.partition(":")
    found: Factory = vars(importlib.import_module(module_name))[name]
    return found


def factory_for(type_: str) -> Factory:
    """The factory of a mountable type; 400 for an unknown one."""
    if type_ in ENGINE_TYPES:
        return _kv
    if type_ == "cubbyhole":
        return _cubbyhole
    if type_ in PLUGGABLE:
        return _imported(PLUGGABLE[type_])
    raise InvalidRequestError(f"plugin not found in the catalog: {type_}")
