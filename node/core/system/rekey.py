"""``sys/rekey/*`` and ``sys/rekey-recovery-key/*``: new shares for the operators.

Unauthenticated, as in the reference: a quorum of the current shares is the
authority. ``sys/rekey`` replaces the unseal keys of a Shamir seal;
``sys/rekey-recovery-key`` the recovery keys of an HSM seal. Each refuses
the other seal with a 400 saying which endpoint applies. PGP encryption of
the new shares (``pgp_keys``, ``backup``) is refused: the shares are
returned in the clear, as with ``pgp_keys`` omitted in the reference.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from node.framework import Field, FieldData, FieldType, Path
from node.logical.request import Operation, Request
from node.logical.response import Response
from node.seal.keys import decode_key
from node.seal.rekey import RekeyOperation
from sdk.errors import InvalidRequestError

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["RekeyPaths"]

_INIT_FIELDS = {
    "secret_shares": Field(FieldType.INT, "Number of new shares.", 0, minimum=0),
    "secret_threshold": Field(FieldType.INT, "Shares needed to rebuild the key.", 0, minimum=0),
    "require_verification": Field(
        FieldType.BOOL, "Install the new key only once a quorum of new shares is entered.", False
    ),
    "pgp_keys": Field(FieldType.STRING_LIST, "Not supported."),
    "backup": Field(FieldType.BOOL, "Not supported (needs pgp_keys).", False),
}
_KEY_FIELDS = {
    # Not ``required``: the same rows are read (GET verify) without a body.
    "key": Field(FieldType.STRING, "One key share (required to update).", ""),
    "nonce": Field(FieldType.STRING, "Nonce of the operation (required to update).", ""),
}

#: (path prefix, whether it rekeys recovery keys)
_TARGETS = (("rekey", False), ("rekey-recovery-key", True))


class RekeyPaths:
    def __init__(self, core: Core) -> None:
        self._core = core

    def paths(self) -> list[Path]:
        rows: list[Path] = []
        for prefix, recovery in _TARGETS:
            noun = "recovery keys" if recovery else "unseal keys"
            rows += [
                Path(
                    f"{prefix}/init",
                    operations={
                        Operation.READ: self._status,
                        Operation.UPDATE: self._start,
                        Operation.DELETE: self._cancel,
                    },
                    fields=_INIT_FIELDS,
                    unauthenticated=True,
                    summary=f"Start, read or cancel a rekey of the {noun}.",
                ),
                Path(
                    f"{prefix}/update",
                    operations={Operation.UPDATE: self._update},
                    fields=_KEY_FIELDS,
                    unauthenticated=True,
                    summary=f"Enter one current share towards new {noun}.",
                ),
                Path(
                    f"{prefix}/verify",
                    operations={
                        Operation.READ: self._verify_status,
                        Operation.UPDATE: self._verify,
                        Operation.DELETE: self._verify_cancel,
                    },
                    fields=_KEY_FIELDS,
                    unauthenticated=True,
                    summary=f"Prove the new {noun} before they replace the old ones.",
                ),
            ]
        return rows

    def _operation(self, request: Request) -> RekeyOperation:
        """The rekey of this seal's shares, if the endpoint fits the seal."""
        seal = self._core.lifecycle.seal
        recovery = request.path.startswith("rekey-recovery-key/")
        if recovery and not seal.recovery:
            raise InvalidRequestError(
                f"recovery rekeying is not supported with seal type {seal.type}: "
                "use sys/rekey to rekey the unseal keys"
            )
        if not recovery and seal.recovery:
            raise InvalidRequestError(
                f"seal type {seal.type} unseals itself and has no unseal keys to rekey: "
                "use sys/rekey-recovery-key to rekey the recovery keys"
            )
        return self._core.lifecycle.rekey

    async def _status(self, request: Request, data: FieldData) -> Response:
        return Response(raw=await self._operation(request).status())

    async def _start(self, request: Request, data: FieldData) -> Response:
        operation = self._operation(request)
        if data.get("pgp_keys") or data.get("backup"):
            raise InvalidRequestError(
                "pgp_keys and backup are not supported: PGP encryption of keys is not available"
            )
        status = await operation.start(
            data.get("secret_shares"),
            data.get("secret_threshold"),
            require_verification=data.get("require_verification"),
        )
        return Response(raw=status)

    async def _cancel(self, request: Request, data: FieldData) -> None:
        self._operation(request).cancel()

    async def _update(self, request: Request, data: FieldData) -> Response:
        operation = self._operation(request)
        share = decode_key(data.get("key"))
        return Response(raw=await operation.update(share, data.get("nonce")))

    async def _verify_status(self, request: Request, data: FieldData) -> Response:
        return Response(raw=self._operation(request).verify_status())

    async def _verify(self, request: Request, data: FieldData) -> Response:
        operation = self._operation(request)
        share = decode_key(data.get("key"))
        return Response(raw=await operation.verify(share, data.get("nonce")))

    async def _verify_cancel(self, request: Request, data: FieldData) -> Response:
        return Response(raw=self._operation(request).verify_cancel())
