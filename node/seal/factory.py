"""Which seal a server runs: the ``seal`` stanza, or ``COFFER_SEAL_TYPE`` without one."""

from __future__ import annotations

from collections.abc import Mapping

from node.seal.base import Seal
from node.seal.pkcs11_seal import Pkcs11Seal
from node.seal.pkcs11_settings import (
    SEAL_TYPE_ENV,
    SealSettingsError,
    is_disabled,
    resolve_settings,
)
from node.seal.shamir_seal import ShamirSeal
from sdk.physical import PhysicalBackend

__all__ = ["migration_source", "open_seal"]


def open_seal(
    kind: str | None,
    options: Mapping[str, str],
    physical: PhysicalBackend,
    environ: Mapping[str, str],
) -> Seal:
    """The seal in force; nothing is contacted yet (the HSM is reached on first use).

    A ``disabled = "true"`` stanza is the old seal of a migration: Shamir is in force.
    """
    if kind is None:
        kind = next((environ[n] for n in SEAL_TYPE_ENV if environ.get(n)), "shamir")
        options = {}
    kind = kind.strip().lower()
    if kind == "shamir":
        return ShamirSeal(physical)
    if kind != "pkcs11":
        raise SealSettingsError(f"unknown seal type {kind!r} (supported: shamir, pkcs11)")
    if is_disabled(options, environ):
        return ShamirSeal(physical)
    return Pkcs11Seal(physical, resolve_settings(options, environ))


def migration_source(
    kind: str | None,
    options: Mapping[str, str],
    physical: PhysicalBackend,
    environ: Mapping[str, str],
) -> Seal | None:
    """The seal a store may be migrated *from* under this configuration (Vault's rules).

    A ``seal "pkcs11"`` stanza in force can take over a Shamir store; the same stanza
    with ``disabled = "true"`` names the HSM a store is migrated back to Shamir from.
    Whether a migration is under way is decided by the stored seal config.
    """
    if kind is None:
        kind = next((environ[n] for n in SEAL_TYPE_ENV if environ.get(n)), "shamir")
        options = {}
    if kind.strip().lower() != "pkcs11":
        return None
    if is_disabled(options, environ):
        return Pkcs11Seal(physical, resolve_settings(options, environ))
    return ShamirSeal(physical)
