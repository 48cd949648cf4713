"""The ``seal "pkcs11"`` settings: stanza values, overridden by the environment.

Each setting also comes from ``COFFER_HSM_<NAME>`` (or Vault's ``VAULT_HSM_<NAME>``),
and the environment wins over the file, as in Vault, so a PIN never has to be
written into a config file. Every error names the setting it is about.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sdk.errors import CofferError

__all__ = [
    "CKM_AES_CBC_PAD",
    "CKM_AES_GCM",
    "CKM_SHA256_HMAC",
    "ENV_PREFIXES",
    "SEAL_TYPE_ENV",
    "Pkcs11Settings",
    "SealSettingsError",
    "is_disabled",
    "mechanism_name",
    "resolve_settings",
]

CKM_AES_CBC_PAD = 0x1085
CKM_AES_GCM = 0x1087
CKM_SHA256_HMAC = 0x0251

#: The reference's other mechanisms, refused by name rather than as unknown numbers.
_UNSUPPORTED = {0x1082: "AES_CBC", 0x0009: "RSA_PKCS_OAEP", 0x0001: "RSA_PKCS"}
_NAMES = {CKM_AES_GCM: "AES_GCM", CKM_AES_CBC_PAD: "AES_CBC_PAD", CKM_SHA256_HMAC: "SHA256_HMAC"}

ENV_PREFIXES = ("COFFER_HSM_", "VAULT_HSM_")
#: ``COFFER_SEAL_TYPE=pkcs11`` (or ``VAULT_SEAL_TYPE``) selects the seal without a stanza.
SEAL_TYPE_ENV = ("COFFER_SEAL_TYPE", "VAULT_SEAL_TYPE")

_KEYS = (
    "lib",
    "slot",
    "token_label",
    "pin",
    "key_label",
    "hmac_key_label",
    "generate_key",
    "mechanism",
    "hmac_mechanism",
    "disabled",
)


class SealSettingsError(CofferError):
    """A ``seal "pkcs11"`` setting is missing or invalid: the server cannot start."""

    status = 500


@dataclass(frozen=True, slots=True, repr=False)
class Pkcs11Settings:
    lib: str
    key_label: str
    pin: str
    slot: int | None = None
    token_label: str = ""
    hmac_key_label: str = ""
    generate_key: bool = False
    mechanism: int = CKM_AES_GCM
    hmac_mechanism: int = CKM_SHA256_HMAC
    disabled: bool = False

    @property
    def uses_hmac(self) -> bool:
        """CBC has no integrity of its own: it is encrypt-then-MAC with the HMAC key."""
        return self.mechanism == CKM_AES_CBC_PAD

    @property
    def token_description(self) -> str:
        if self.token_label:
            return f'token_label "{self.token_label}"'
        return f"slot {self.slot}"

    def __repr__(self) -> str:  # the PIN never reaches a log or a traceback
        return (
            f"Pkcs11Settings(lib={self.lib!r}, {self.token_description}, "
            f"key_label={self.key_label!r}, hmac_key_label={self.hmac_key_label!r}, "
            f"mechanism={mechanism_name(self.mechanism)}, generate_key={self.generate_key})"
        )


def mechanism_name(value: int) -> str:
    return _NAMES.get(value) or _UNSUPPORTED.get(value) or hex(value)


def _env(environ: Mapping[str, str], key: str) -> str | None:
    for prefix in ENV_PREFIXES:
        value = environ.get(prefix + key.upper())
        if value is not None:
            return value
    return None


def _where(key: str) -> str:
    return f'seal "pkcs11": "{key}" (or COFFER_HSM_{key.upper()})'


def _bool(key: str, text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no", ""):
        return False
    raise SealSettingsError(f'{_where(key)}: expected "true" or "false", got {text!r}')


def _number(key: str, text: str) -> int:
    try:
        return int(text.strip(), 0)
    except ValueError:
        raise SealSettingsError(
            f"{_where(key)}: expected a number such as 0x1087, got {text!r}"
        ) from None


def _mechanism(text: str | None) -> int:
    if text is None or not text.strip():
        return CKM_AES_GCM
    value = _number("mechanism", text)
    if value in _UNSUPPORTED:
        raise SealSettingsError(
            f"{_where('mechanism')}: {hex(value)} ({_UNSUPPORTED[value]}) is not supported; "
            f"use {hex(CKM_AES_GCM)} (AES_GCM) or {hex(CKM_AES_CBC_PAD)} (AES_CBC_PAD with HMAC)"
        )
    if value not in (CKM_AES_GCM, CKM_AES_CBC_PAD):
        raise SealSettingsError(f"{_where('mechanism')}: unknown mechanism {hex(value)}")
    return value


def is_disabled(options: Mapping[str, str], environ: Mapping[str, str]) -> bool:
    """``disabled = "true"``: the stanza is kept (for a later migration) but not used."""
    found = _env(environ, "disabled")
    return _bool("disabled", found if found is not None else options.get("disabled", "false"))


def resolve_settings(options: Mapping[str, str], environ: Mapping[str, str]) -> Pkcs11Settings:
    """The stanza's ``options`` overridden by ``environ``, checked."""
    values: dict[str, str] = {}
    for key in _KEYS:
        found = _env(environ, key)
        if found is None:
            found = options.get(key)
        if found is not None:
            values[key] = found
    for key in ("lib", "key_label", "pin"):
        if not values.get(key, "").strip():
            raise SealSettingsError(f"{_where(key)} is required")
    slot = values.get("slot", "").strip()
    token_label = values.get("token_label", "")
    if not slot and not token_label:
        raise SealSettingsError(
            'seal "pkcs11": one of "slot" or "token_label" is required '
            "(or COFFER_HSM_SLOT / COFFER_HSM_TOKEN_LABEL)"
        )
    slot_number = _number("slot", slot) if slot else None
    if slot_number is not None and slot_number < 0:
        raise SealSettingsError(f"{_where('slot')}: must not be negative")
    mechanism = _mechanism(values.get("mechanism"))
    hmac_text = values.get("hmac_mechanism", "").strip()
    hmac_mechanism = _number("hmac_mechanism", hmac_text) if hmac_text else CKM_SHA256_HMAC
    if hmac_mechanism != CKM_SHA256_HMAC:
        raise SealSettingsError(
            f"{_where('hmac_mechanism')}: only {hex(CKM_SHA256_HMAC)} (SHA256_HMAC) is supported"
        )
    hmac_key_label = values.get("hmac_key_label", "")
    if mechanism == CKM_AES_CBC_PAD and not hmac_key_label.strip():
        raise SealSettingsError(
            f"{_where('hmac_key_label')} is required with mechanism "
            f"{hex(CKM_AES_CBC_PAD)} (AES_CBC_PAD is encrypt-then-MAC)"
        )
    return Pkcs11Settings(
        lib=values["lib"],
        key_label=values["key_label"],
        pin=values["pin"],
        slot=slot_number,
        token_label=token_label,
        hmac_key_label=hmac_key_label,
        generate_key=_bool("generate_key", values.get("generate_key", "false")),
        mechanism=mechanism,
        hmac_mechanism=hmac_mechanism,
        disabled=is_disabled(options, environ),
    )
