"""DR operation tokens: what authorises the DR operations on a DR secondary.

A DR secondary serves no client requests, so its operators cannot use client
tokens; the operations that change its role take a ``dr_operation_token``
instead (:data:`DR_OPERATION_PATHS`: promote, update-primary, disable,
reindex, merkle-check, operation-token/delete). Two kinds are accepted, as in
the reference:

1. **Generated on this secondary** from a quorum of the primary's key shares
   (the secondary holds the primary's seal after enable), through the
   generate-root OTP flow with the DR strategy
   (``sys/replication/dr/secondary/generate-operation-token/*``). It is
   ``hvs.`` + 24 base62 characters, a root token's length, so the OTP length
   and the encoding are generate-root's. It is batch-style in that it is no
   client token at all: not in the token store, no policies, lease, renewal
   or children; it authorises every DR operation and nothing else. Only its
   SHA-256 is stored, under :data:`DR_TOKEN_PREFIX` in the barrier (so the
   secondary cluster's standbys accept it after a failover). It has no TTL, as
   in the reference: it lives until ``operation-token/delete``.
   **Replication must treat** :data:`DR_TOKEN_PREFIX` **as cluster-local**:
   never streamed to a secondary, never deleted by a sync from the primary.
2. **A batch token created on the primary** (the reference's "batch DR
   operation token", no key holders needed): an operator writes a policy that
   grants ``update`` on the DR operation paths and a token role with
   ``token_type=batch`` (and ``orphan=true``, ``renewable=false``) allowing it,
   then ``auth/token/create/<role>`` on the primary. A DR secondary holds the
   primary's token store (batch key, policies, parents), so it decodes the
   token itself; it is accepted for a path when it is live (TTL, parent) and
   its policies grant ``update`` on that path. No role or policy is built in:
   names are the operator's, as in the reference (docs/replication.md).

The one check the replication endpoints call::

    await verify_dr_operation_token(core, token, "sys/replication/dr/secondary/promote")

(or :func:`require_dr_operation_token`, which answers 400/403 itself), and
:func:`require_dr_secondary` is the gate every DR-secondary-only endpoint
shares. :attr:`Core.replication_mode` (a callable ``kind -> mode``, bound to
``Core.replication.mode_of``; :func:`replication_disabled` for tests without
replication) is the one seam through which these read the replication state.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from node.barrier.view import BarrierView
from node.base62 import random_base62
from node.logical.request import Operation
from node.tokens.ids import SERVICE_TOKEN_PREFIX, TOKEN_LENGTH
from sdk.errors import CofferError, InvalidRequestError, PermissionDeniedError

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = [
    "DR_OPERATION_PATHS",
    "DR_TOKEN_PREFIX",
    "DrOperationTokens",
    "ReplicationMode",
    "replication_disabled",
    "require_dr_operation_token",
    "require_dr_secondary",
    "verify_dr_operation_token",
]

#: The operations a DR operation token authorises (paths relative to the root namespace).
DR_OPERATION_PATHS = frozenset(
    f"sys/replication/dr/secondary/{name}"
    for name in (
        "promote",
        "update-primary",
        "disable",
        "reindex",
        "merkle-check",
        "operation-token/delete",
    )
)

#: Barrier prefix of the generated tokens' hashes: cluster-local (never replicated).
DR_TOKEN_PREFIX = "core/dr-operation-token/"

#: ``kind`` ("dr" or "performance") -> "disabled" | "primary" | "secondary" | "bootstrapping".
ReplicationMode = Callable[[str], str]


def replication_disabled(kind: str) -> str:
    """The seam's default: no replication of any kind (replaced by ``node/replication``)."""
    return "disabled"


def require_dr_secondary(core: Core) -> None:
    """The gate of the DR-secondary-only endpoints."""
    if core.replication_mode("dr") != "secondary":
        raise InvalidRequestError("this cluster is not a DR secondary")


def _digest(token: str) -> str:
    # The tokens are 143 random bits: a plain hash cannot be reversed or guessed.
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


class DrOperationTokens:
    """Mints, checks and deletes DR operation tokens (both kinds)."""

    def __init__(self, core: Core) -> None:
        self._core = core
        self._view = BarrierView(core.barrier, DR_TOKEN_PREFIX)

    async def mint(self) -> str:
        """A new generated token (the DR strategy's mint; the caller encodes it)."""
        token = SERVICE_TOKEN_PREFIX + random_base62(TOKEN_LENGTH - len(SERVICE_TOKEN_PREFIX))
        await self._view.put_json(_digest(token), {"creation_time": time.time()})
        return token

    async def is_generated(self, token: str) -> bool:
        if len(token) != TOKEN_LENGTH or not token.startswith(SERVICE_TOKEN_PREFIX):
            return False
        return await self._view.get(_digest(token)) is not None

    async def delete(self, token: str) -> bool:
        """Delete a generated token; False when it is not one (batch tokens cannot be)."""
        if not await self.is_generated(token):
            return False
        await self._view.delete(_digest(token))
        return True

    async def verify(self, token: str, path: str) -> bool:
        """May ``token`` authorise the DR operation at ``path``?"""
        if not isinstance(token, str) or not token or path not in DR_OPERATION_PATHS:
            return False
        if await self.is_generated(token):
            return True
        return await self._batch_grants(token, path)

    async def _batch_grants(self, token: str, path: str) -> bool:
        core = self._core
        if not core.tokens.batch.is_batch(token):
            return False  # a service token, even root, is a client token: refused here
        entry = await core.tokens.lookup(token)
        if entry is None or entry.type != "batch":
            return False
        try:
            acl = await core.access.acl_for(entry)
        except CofferError:
            return False  # e.g. its namespace is gone
        return acl.allow(Operation.UPDATE, path).allowed


async def verify_dr_operation_token(core: Core, token: str, path: str) -> bool:
    """May ``token`` authorise the DR operation at ``path`` (one of
    :data:`DR_OPERATION_PATHS`) on this node? See the module docstring."""
    return await core.dr_operation_tokens.verify(token, path)


async def require_dr_operation_token(core: Core, token: object, path: str) -> str:
    """The DR operation token of a request, or 400 when missing and 403 when it does
    not authorise ``path``; the message never quotes the token."""
    if not isinstance(token, str) or not token:
        raise InvalidRequestError("missing dr_operation_token")
    if not await verify_dr_operation_token(core, token, path):
        raise PermissionDeniedError("permission denied: invalid DR operation token")
    return token
