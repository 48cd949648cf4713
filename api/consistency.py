"""The consistency headers, as the forwarding middleware applies them.

* Every reply of the active node carries the index its request reached:
  ``X-Coffer-Index`` (a plain integer, as before) and the reference's opaque
  state in ``X-Vault-Index`` and ``X-Service-Index`` (``node.cluster.consistency``).
* A request that sends one back (any of the three names, several values
  allowed) is answered only by a node whose replica has applied that index.
  A performance standby waits briefly for it; if it does not arrive, it
  forwards the request to the active node (``X-Vault-Inconsistent:
  forward-active-node``) or answers 412 (``fail``, the default). The active
  node itself waits, then answers 412.
* ``X-Vault-Forward: active-node`` sends a read to the active node always.
"""

from __future__ import annotations

import time

from aiohttp import web

from api.translate import header
from node.cluster.cluster import Cluster
from node.cluster.consistency import (
    Inconsistent,
    encode_state,
    parse_inconsistent,
    required_index,
)
from node.cluster.errors import IndexNotReachedError
from sdk.errors import CofferError

__all__ = [
    "INDEX_HEADER",
    "StateMemo",
    "add_index_headers",
    "local_read_allowed",
    "require_index",
    "wants_active_node",
]

INDEX_HEADER = "X-Coffer-Index"
_STATE_HEADERS = ("X-Service-Index", "X-Vault-Index")
#: How long a node waits for a requested index before it gives up (412).
INDEX_WAIT = 2.0
#: How long a performance standby waits before it forwards instead.
FORWARD_WAIT = 0.5


_INDEX_HEADERS = (*_STATE_HEADERS, INDEX_HEADER)


def _required(request: web.Request, cluster: Cluster) -> int | None:
    headers = request.headers
    present = [name for name in _INDEX_HEADERS if name in headers]
    if not present:
        return None  # most requests: three lookups, no value lists
    values = [v for name in present for v in headers.getall(name)]
    return required_index(values, cluster.index_key, cluster.core.cluster_id)


async def _reached(cluster: Cluster, index: int, timeout: float) -> bool:
    """Whether this replica applied ``index`` (and its caches digested it) in time."""
    replica = cluster.replica
    if replica is None:
        return False
    deadline = time.monotonic() + timeout
    try:
        await replica.wait_for_index(index, timeout)
        await cluster.invalidator.settled(index, max(deadline - time.monotonic(), 0.05))
    except (CofferError, TimeoutError):
        return False
    return True


async def require_index(request: web.Request, cluster: Cluster) -> None:
    """On the active node: wait for a requested index, or refuse with 412."""
    index = _required(request, cluster)
    if index is not None and not await _reached(cluster, index, INDEX_WAIT):
        raise IndexNotReachedError()


async def local_read_allowed(request: web.Request, cluster: Cluster) -> bool:
    """On a performance standby: True to serve here, False to forward; 412 for ``fail``."""
    index = _required(request, cluster)
    if index is None:
        return True
    mode = parse_inconsistent(header(request, "Inconsistent"))
    wait = FORWARD_WAIT if mode is Inconsistent.FORWARD else INDEX_WAIT
    if await _reached(cluster, index, wait):
        return True
    if mode is Inconsistent.FAIL:
        raise IndexNotReachedError()
    return False


def wants_active_node(request: web.Request) -> bool:
    return header(request, "Forward").strip().lower() == "active-node"


class StateMemo:
    """The index states encoded lately, by index, for one key and cluster.

    Replies that leave close together carry one of a few applied indexes (a
    committed batch shares one, and the next batch's replies interleave with
    it), and an HMAC per reply was ~3 % of a write on the active node. A hit
    needs the same key and cluster (any other empties the memo) and index, so
    it returns exactly what :func:`encode_state` would.
    """

    __slots__ = ("_cluster_id", "_key", "_states")

    #: Indexes remembered; the oldest goes first.
    SIZE = 16

    def __init__(self) -> None:
        self._key: bytes | None = None
        self._cluster_id = ""
        self._states: dict[int, str] = {}

    def encode(self, key: bytes, cluster_id: str, index: int) -> str:
        states = self._states
        if key != self._key or cluster_id != self._cluster_id:
            states.clear()
            self._key, self._cluster_id = key, cluster_id
        else:
            found = states.get(index)
            if found is not None:
                return found
        state = states[index] = encode_state(key, cluster_id, index)
        if len(states) > self.SIZE:
            del states[next(iter(states))]
        return state


_STATES = StateMemo()


def add_index_headers(response: web.StreamResponse, cluster: Cluster) -> None:
    replica = cluster.replica
    if replica is None:
        return
    index = replica.applied_index()
    headers = response.headers
    headers[INDEX_HEADER] = str(index)
    key, cluster_id = cluster.index_key, cluster.core.cluster_id
    if key is not None and cluster_id:
        state = _STATES.encode(key, cluster_id, index)
        for name in _STATE_HEADERS:
            headers[name] = state
