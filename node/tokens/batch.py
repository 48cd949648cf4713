"""Batch tokens: the entry itself, encrypted, is the token; nothing is stored.

That is what makes them cheap: no storage write on creation and no lookup
read on use. The price (as in the reference) is that they cannot be revoked
individually, renewed, or have children.
"""

from __future__ import annotations

import base64
import binascii
import json
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from node.barrier.view import BarrierView
from node.tokens.entry import TokenEntry
from node.tokens.ids import BATCH_TOKEN_PREFIX, namespace_suffix, suffix_for, with_namespace
from sdk.errors import RevisionMismatchError
from sdk.physical import Put

__all__ = ["BATCH_PREFIX", "BatchCodec"]

BATCH_PREFIX = BATCH_TOKEN_PREFIX
_AAD = b"coffer-batch-token-v1"


class BatchCodec:
    def __init__(self, view: BarrierView) -> None:
        self._view = view
        self._key: bytes | None = None

    def forget(self) -> None:
        self._key = None

    def is_batch(self, token_id: str) -> bool:
        return token_id.startswith(BATCH_PREFIX)

    async def _key_bytes(self) -> bytes:
        if self._key is None:
            found = await self._view.get("batch-key")
            if found is None:
                key = os.urandom(32)
                try:
                    await self._view.commit([Put("batch-key", key, expect=0)])
                except RevisionMismatchError:
                    return await self._key_bytes()
                self._key = key
            else:
                self._key = found.value
        return self._key

    async def encode(self, entry: TokenEntry) -> str:
        nonce = os.urandom(12)
        plain = json.dumps(entry.to_json(), separators=(",", ":")).encode()
        sealed = nonce + AESGCM(await self._key_bytes()).encrypt(nonce, plain, _AAD)
        body = base64.urlsafe_b64encode(sealed).decode().rstrip("=")
        # The base64url alphabet has no '.', so the namespace suffix stays separable.
        return with_namespace(BATCH_PREFIX + body, entry.namespace_id)

    async def decode(self, token_id: str) -> TokenEntry | None:
        suffix = namespace_suffix(token_id)
        body = token_id[len(BATCH_PREFIX) :].removesuffix(f".{suffix}" if suffix else "")
        try:
            sealed = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
            plain = AESGCM(await self._key_bytes()).decrypt(sealed[:12], sealed[12:], _AAD)
            entry = TokenEntry.from_json(json.loads(plain))
        except (binascii.Error, ValueError, InvalidTag, TypeError):
            return None
        # The suffix is outside the sealed part: it must name the sealed namespace
        # (none at all is a token minted before suffixes: still good).
        return entry if suffix in ("", suffix_for(entry.namespace_id)) else None
