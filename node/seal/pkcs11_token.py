"""Blocking access to one PKCS#11 token: find it, log in, find or make keys, encrypt.

Every public method blocks (the library calls into the HSM) and must run in a
worker thread; a lock serialises them because a PKCS#11 session is not safe for
concurrent operations. A lost session (token removed, library re-initialised)
is dropped and reopened once by the next call.

Errors are sorted by what the operator must do:

* ``HsmSettingError`` — a setting is wrong (library path, PIN, key missing with
  ``generate_key = "false"``): retrying cannot help, and retrying a wrong PIN
  could lock the token. The message names the setting.
* ``HsmUnavailableError`` — the token is not there (yet) or stopped answering:
  the caller retries.
* ``BlobIntegrityError`` — a stored blob fails authentication: it was altered,
  or made by another key with the same label.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import pkcs11
from pkcs11 import Attribute, KeyType, Mechanism, ObjectClass
from pkcs11 import exceptions as p11

from node.seal.pkcs11_settings import (
    CKM_AES_CBC_PAD,
    CKM_AES_GCM,
    Pkcs11Settings,
    SealSettingsError,
    mechanism_name,
)
from sdk.errors import CofferError

__all__ = [
    "BlobIntegrityError",
    "HsmCiphertext",
    "HsmSettingError",
    "HsmUnavailableError",
    "Pkcs11Token",
]

_T = TypeVar("_T")

#: How many times each library was re-initialised in this process. Session and key
#: handles from before a re-initialisation may be reused by the library for other
#: objects, so a token whose generation is stale forgets them without using them.
_generations: dict[str, int] = {}
_generations_lock = threading.Lock()


def _generation(path: str) -> int:
    with _generations_lock:
        return _generations.get(path, 0)


def _reinitialize(lib: Any, path: str) -> None:
    with _generations_lock:
        _generations[path] = _generations.get(path, 0) + 1
        try:
            lib.reinitialize()
        except p11.PKCS11Error:
            pkcs11.unload(path)


GCM_NONCE_BYTES = 12
CBC_IV_BYTES = 16
AES_KEY_BITS = 256
HMAC_KEY_BITS = 256


class HsmSettingError(SealSettingsError):
    """The HSM refused a setting; fixing the configuration is the only way out."""


class HsmUnavailableError(CofferError):
    """The HSM or its token cannot be reached now; try again later."""

    status = 503


class BlobIntegrityError(CofferError):
    """A stored blob does not authenticate under the key its header names."""

    status = 500


#: Errors meaning the session or the token went away: reconnect, or report unavailable.
_LOST = (
    p11.SessionHandleInvalid,
    p11.SessionClosed,
    p11.DeviceRemoved,
    p11.DeviceError,
    p11.TokenNotPresent,
    p11.TokenNotRecognised,
    p11.GeneralError,
    p11.SlotIDInvalid,
)
_BAD_PIN = (p11.PinIncorrect, p11.PinInvalid, p11.PinLenRange, p11.PinExpired, p11.PinLocked)


@dataclass(frozen=True, slots=True)
class HsmCiphertext:
    """What decrypting needs besides the key itself; stored beside the ciphertext."""

    mechanism: int
    key_label: str
    iv: bytes
    ciphertext: bytes
    hmac: bytes = b""
    hmac_mechanism: int = 0
    hmac_key_label: str = ""


def _aes_template() -> dict[Attribute, Any]:
    # Non-extractable and sensitive: the key never leaves the HSM, even wrapped.
    return {
        Attribute.TOKEN: True,
        Attribute.PRIVATE: True,
        Attribute.SENSITIVE: True,
        Attribute.EXTRACTABLE: False,
        Attribute.ENCRYPT: True,
        Attribute.DECRYPT: True,
        Attribute.WRAP: False,
        Attribute.UNWRAP: False,
    }


def _hmac_template() -> dict[Attribute, Any]:
    return {
        Attribute.TOKEN: True,
        Attribute.PRIVATE: True,
        Attribute.SENSITIVE: True,
        Attribute.EXTRACTABLE: False,
        Attribute.SIGN: True,
        Attribute.VERIFY: True,
    }


def _mac_input(aad: bytes, iv: bytes, ciphertext: bytes) -> bytes:
    """Length-prefixed, so no two (aad, iv, ciphertext) triples give the same input."""
    return len(aad).to_bytes(8, "big") + aad + iv + ciphertext


class Pkcs11Token:
    """The configured token and its keys; one logged-in session, reopened when lost."""

    def __init__(self, settings: Pkcs11Settings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._session: Any = None
        self._keys: dict[tuple[str, KeyType], Any] = {}
        self._generation = -1

    # -- connecting ------------------------------------------------------------------

    def connect(self) -> None:
        """Open the session and make sure the current keys exist (generating if allowed)."""
        with self._lock:
            self._open()

    def close(self) -> None:
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        session, self._session = self._session, None
        self._keys.clear()
        # A handle from before a re-initialisation may name someone else's session now.
        if session is not None and self._generation == _generation(self.settings.lib):
            with contextlib.suppress(p11.PKCS11Error):  # already gone with the token
                session.close()

    def _open(self) -> None:
        if self._session is not None and self._generation != _generation(self.settings.lib):
            self._drop()
        if self._session is not None:
            return
        settings = self.settings
        token = self._find_token()
        self._generation = _generation(settings.lib)
        try:
            session = self._login(token)
        except _BAD_PIN as exc:
            raise HsmSettingError(
                f'seal "pkcs11": "pin": the token ({settings.token_description}) refused the '
                f"PIN ({type(exc).__name__})"
            ) from None
        except p11.PKCS11Error as exc:
            raise HsmUnavailableError(
                f"cannot open a session on {settings.token_description}: {type(exc).__name__}"
            ) from None
        self._session = session
        try:
            create = settings.generate_key
            self._key(settings.key_label, KeyType.AES, create=create)
            if settings.uses_hmac:
                self._key(settings.hmac_key_label, KeyType.GENERIC_SECRET, create=create)
        except BaseException:
            self._drop()
            raise

    def _login(self, token: Any) -> Any:
        rw = self.settings.generate_key
        try:
            return token.open(rw=rw, user_pin=self.settings.pin)
        except p11.UserAlreadyLoggedIn:
            # Another session of this process logged in: the login is per application.
            return token.open(rw=rw)

    def _load_library(self) -> Any:
        path = self.settings.lib
        if not os.path.isfile(path):
            raise HsmSettingError(f'seal "pkcs11": "lib": no such file: {path}')
        try:
            return pkcs11.lib(path)
        except p11.PKCS11Error as exc:
            if type(exc) is p11.PKCS11Error:  # dlopen failed: not a PKCS#11 library
                raise HsmSettingError(f'seal "pkcs11": "lib": cannot load {path}: {exc}') from None
            raise HsmUnavailableError(
                f"the PKCS#11 library {path} failed to initialise: {type(exc).__name__}"
            ) from None

    def _find_token(self) -> Any:
        """The configured token; the slot list is rescanned once, as tokens can appear."""
        for attempt in (1, 2):
            lib = self._load_library()
            try:
                return self._token_in(lib)
            except (p11.NoSuchToken, p11.TokenNotPresent, p11.SlotIDInvalid):
                if attempt == 2:
                    raise HsmUnavailableError(
                        f"no token with {self.settings.token_description} in {self.settings.lib} "
                        f'(seal "pkcs11" "{self._token_setting()}")'
                    ) from None
                _reinitialize(lib, self.settings.lib)
            except p11.MultipleTokensReturned:
                raise HsmSettingError(
                    f'seal "pkcs11": "token_label": more than one token is labelled '
                    f'"{self.settings.token_label}"; use "slot"'
                ) from None
            except p11.PKCS11Error as exc:
                raise HsmUnavailableError(
                    f"cannot list the tokens of {self.settings.lib}: {type(exc).__name__}"
                ) from None
        raise AssertionError("unreachable")

    def _token_setting(self) -> str:
        return "token_label" if self.settings.token_label else "slot"

    def _token_in(self, lib: Any) -> Any:
        if self.settings.token_label:
            return lib.get_token(token_label=self.settings.token_label)
        for slot in lib.get_slots(token_present=True):
            if slot.slot_id == self.settings.slot:
                return slot.get_token()
        raise p11.NoSuchToken()

    def _key(self, label: str, key_type: KeyType, *, create: bool = False) -> Any:
        cached = self._keys.get((label, key_type))
        if cached is not None:
            return cached
        try:
            key = self._session.get_key(
                object_class=ObjectClass.SECRET_KEY, key_type=key_type, label=label
            )
        except p11.NoSuchKey:
            if not create:
                raise HsmSettingError(self._missing_key(label, key_type)) from None
            key = self._generate(label, key_type)
        except p11.MultipleObjectsReturned:
            raise HsmSettingError(
                f'seal "pkcs11": more than one {key_type.name} key is labelled "{label}"'
            ) from None
        self._keys[(label, key_type)] = key
        return key

    def _missing_key(self, label: str, key_type: KeyType) -> str:
        setting = "key_label" if key_type == KeyType.AES else "hmac_key_label"
        if label in (self.settings.key_label, self.settings.hmac_key_label):
            return (
                f'seal "pkcs11": "{setting}": no {key_type.name} key labelled "{label}" on '
                f'{self.settings.token_description}, and "generate_key" is false'
            )
        return (
            f'the {key_type.name} key "{label}" that encrypted a stored value is no longer on '
            f"{self.settings.token_description} (keep old keys after a key_label rotation)"
        )

    def _generate(self, label: str, key_type: KeyType) -> Any:
        if key_type == KeyType.AES:
            return self._session.generate_key(
                KeyType.AES, AES_KEY_BITS, label=label, store=True, template=_aes_template()
            )
        template = _hmac_template()
        return self._session.generate_key(
            KeyType.GENERIC_SECRET, HMAC_KEY_BITS, label=label, store=True, template=template
        )

    # -- operations ------------------------------------------------------------------

    def _run(self, operation: Callable[[], _T]) -> _T:
        """``operation`` with an open session; a lost session is reopened once."""
        with self._lock:
            for attempt in (1, 2):
                self._open()
                try:
                    return operation()
                except _LOST as exc:
                    self._drop()
                    if attempt == 2:
                        raise HsmUnavailableError(
                            f"the HSM stopped answering ({type(exc).__name__})"
                        ) from None
                except p11.PKCS11Error as exc:
                    raise HsmUnavailableError(
                        f"the HSM refused the operation ({type(exc).__name__})"
                    ) from None
        raise AssertionError("unreachable")

    def encrypt(self, plaintext: bytes, aad: bytes) -> HsmCiphertext:
        settings = self.settings

        def run() -> HsmCiphertext:
            key = self._key(settings.key_label, KeyType.AES)
            if settings.mechanism == CKM_AES_GCM:
                nonce = self._session.generate_random(GCM_NONCE_BYTES * 8)
                sealed = key.encrypt(
                    plaintext,
                    mechanism=Mechanism.AES_GCM,
                    mechanism_param=pkcs11.GCMParams(nonce, aad),
                )
                return HsmCiphertext(CKM_AES_GCM, settings.key_label, nonce, sealed)
            iv = self._session.generate_random(CBC_IV_BYTES * 8)
            sealed = key.encrypt(plaintext, mechanism=Mechanism.AES_CBC_PAD, mechanism_param=iv)
            mac_key = self._key(settings.hmac_key_label, KeyType.GENERIC_SECRET)
            mac = mac_key.sign(_mac_input(aad, iv, sealed), mechanism=Mechanism.SHA256_HMAC)
            return HsmCiphertext(
                CKM_AES_CBC_PAD,
                settings.key_label,
                iv,
                sealed,
                mac,
                settings.hmac_mechanism,
                settings.hmac_key_label,
            )

        return self._run(run)

    def decrypt(self, blob: HsmCiphertext, aad: bytes) -> bytes:
        """Decrypt with the key named in ``blob`` (not necessarily the current one)."""

        def run() -> bytes:
            key = self._key(blob.key_label, KeyType.AES)
            if blob.mechanism == CKM_AES_GCM:
                try:
                    return bytes(
                        key.decrypt(
                            blob.ciphertext,
                            mechanism=Mechanism.AES_GCM,
                            mechanism_param=pkcs11.GCMParams(blob.iv, aad),
                        )
                    )
                except (p11.EncryptedDataInvalid, p11.EncryptedDataLenRange, p11.GeneralError):
                    # SoftHSM2 answers CKR_GENERAL_ERROR to a failed GCM tag check.
                    if not self._alive():
                        raise
                    raise BlobIntegrityError(self._tampered(blob)) from None
            if blob.mechanism == CKM_AES_CBC_PAD:
                return self._decrypt_cbc(key, blob, aad)
            raise BlobIntegrityError(
                f"a stored value names an unsupported mechanism {mechanism_name(blob.mechanism)}"
            )

        return self._run(run)

    def _decrypt_cbc(self, key: Any, blob: HsmCiphertext, aad: bytes) -> bytes:
        if not blob.hmac or not blob.hmac_key_label:
            raise BlobIntegrityError(self._tampered(blob))
        mac_key = self._key(blob.hmac_key_label, KeyType.GENERIC_SECRET)
        verified = mac_key.verify(
            _mac_input(aad, blob.iv, blob.ciphertext), blob.hmac, mechanism=Mechanism.SHA256_HMAC
        )
        if not verified:  # MAC first: nothing unauthenticated reaches the CBC decryption
            raise BlobIntegrityError(self._tampered(blob))
        return bytes(
            key.decrypt(blob.ciphertext, mechanism=Mechanism.AES_CBC_PAD, mechanism_param=blob.iv)
        )

    def _alive(self) -> bool:
        """Whether the session still works (telling a bad tag from a dead token)."""
        try:
            self._session.generate_random(8)
        except p11.PKCS11Error:
            return False
        return True

    @staticmethod
    def _tampered(blob: HsmCiphertext) -> str:
        return (
            f'a stored value encrypted by the HSM key "{blob.key_label}" does not authenticate: '
            "it was altered, or that label now names another key"
        )

    def key_attributes(self, label: str) -> dict[str, bool]:
        """``extractable`` and ``sensitive`` of the AES key ``label`` (for tests and checks)."""

        def run() -> dict[str, bool]:
            key = self._key(label, KeyType.AES)
            return {
                "extractable": bool(key[Attribute.EXTRACTABLE]),
                "sensitive": bool(key[Attribute.SENSITIVE]),
            }

        return self._run(run)
