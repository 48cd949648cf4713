"""The interface the core uses, whichever seal protects the root key."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from node.seal.config import SealConfig
from node.seal.shamir_seal import InitResult

__all__ = ["AutoSeal", "Seal"]


class Seal(Protocol):
    #: ``shamir`` or ``pkcs11``: stored in the seal config, shown by ``seal-status``.
    type: str
    #: Whether the operators' shares are recovery keys (they authorise, never unseal).
    recovery: bool

    async def config(self) -> SealConfig | None: ...

    async def share_config(self) -> SealConfig | None:
        """Count and threshold of the shares operators hold (unseal or recovery keys)."""
        ...

    async def initialize(self, shares: int, threshold: int) -> InitResult: ...

    async def root_key_from_shares(self, parts: list[bytes]) -> bytes:
        """The root key, once a quorum of the operators' shares is proven; raises otherwise."""
        ...

    async def replace_share_secret(
        self, old_parts: list[bytes], secret: bytes, shares: int, threshold: int
    ) -> None:
        """Rekey: make ``secret`` what the operators' shares combine into."""
        ...

    async def adopt(self, root_key: bytes, secret: bytes, shares: int, threshold: int) -> None:
        """Seal migration: store ``root_key`` under this seal; the old shares' ``secret``
        becomes what this seal's operator shares combine into."""
        ...

    async def close(self) -> None: ...


@runtime_checkable
class AutoSeal(Seal, Protocol):
    """A seal that unseals by itself from a stored, externally protected root key."""

    async def connect(self) -> None: ...

    async def stored_root_key(self) -> bytes: ...

    async def rewrap_stored_keys(self) -> bool: ...

    async def encrypt(self, plaintext: bytes, path: str) -> bytes:
        """A blob of ``plaintext`` bound to ``path`` (seal wrap uses it for mounts' values)."""
        ...

    async def decrypt(self, raw: bytes, path: str) -> bytes: ...
