"""The PKCS#11 seal against a real SoftHSM2 token: settings, blobs, keys, recovery keys."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import pytest

from node.physical.inmem import InmemBackend
from node.seal.factory import open_seal
from node.seal.hsm_blob import decode_blob, encode_blob
from node.seal.pkcs11_seal import RECOVERY_KEY_PATH, Pkcs11Seal
from node.seal.pkcs11_settings import (
    CKM_AES_CBC_PAD,
    CKM_AES_GCM,
    SealSettingsError,
    resolve_settings,
)
from node.seal.pkcs11_token import BlobIntegrityError, HsmSettingError, HsmUnavailableError
from node.seal.shamir_seal import ROOT_KEY_PATH, ShamirSeal
from sdk.errors import InvalidRequestError
from tests.hsm.softhsm import PIN, SoftHsm

BASE = {"lib": "/l.so", "token_label": "t", "pin": "p", "key_label": "k"}


def seal_for(options: dict[str, str], physical: InmemBackend | None = None) -> Pkcs11Seal:
    return Pkcs11Seal(physical or InmemBackend(), resolve_settings(options, {}))


def flip(data: bytes, index: int = -1) -> bytes:
    changed = bytearray(data)
    changed[index] ^= 0x01
    return bytes(changed)


# -- settings: stanza, environment, errors naming the setting ----------------------------


def test_environment_overrides_the_stanza_in_both_spellings() -> None:
    settings = resolve_settings(
        BASE,
        {"COFFER_HSM_PIN": "from-env", "VAULT_HSM_KEY_LABEL": "vault-k", "VAULT_HSM_PIN": "lost"},
    )
    assert settings.pin == "from-env"  # COFFER_ wins over VAULT_
    assert settings.key_label == "vault-k"
    assert settings.mechanism == CKM_AES_GCM
    assert "from-env" not in repr(settings)


def test_every_setting_has_an_environment_variable() -> None:
    environ = {
        "COFFER_HSM_LIB": "/env.so",
        "COFFER_HSM_SLOT": "7",
        "COFFER_HSM_PIN": "1",
        "COFFER_HSM_KEY_LABEL": "k2",
        "COFFER_HSM_HMAC_KEY_LABEL": "h2",
        "COFFER_HSM_GENERATE_KEY": "true",
        "COFFER_HSM_MECHANISM": "0x1085",
        "COFFER_HSM_HMAC_MECHANISM": "0x0251",
        "COFFER_HSM_TOKEN_LABEL": "tok",
    }
    settings = resolve_settings({}, environ)
    assert (settings.lib, settings.slot, settings.token_label) == ("/env.so", 7, "tok")
    assert (settings.key_label, settings.hmac_key_label) == ("k2", "h2")
    assert settings.generate_key and settings.mechanism == CKM_AES_CBC_PAD
    assert settings.uses_hmac


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({**BASE, "lib": ""}, '"lib" (or COFFER_HSM_LIB) is required'),
        ({k: v for k, v in BASE.items() if k != "pin"}, '"pin" (or COFFER_HSM_PIN) is required'),
        ({**BASE, "key_label": " "}, '"key_label"'),
        ({k: v for k, v in BASE.items() if k != "token_label"}, '"slot" or "token_label"'),
        ({**BASE, "mechanism": "0x1085"}, '"hmac_key_label"'),
        ({**BASE, "mechanism": "0x0009"}, "RSA_PKCS_OAEP"),
        ({**BASE, "mechanism": "gcm"}, '"mechanism"'),
        ({**BASE, "hmac_mechanism": "0x0250"}, '"hmac_mechanism"'),
        ({**BASE, "generate_key": "perhaps"}, '"generate_key"'),
    ],
)
def test_bad_settings_name_the_setting(options: dict[str, str], needle: str) -> None:
    with pytest.raises(SealSettingsError) as caught:
        resolve_settings(options, {})
    assert needle in str(caught.value)


def test_seal_type_selection() -> None:
    physical = InmemBackend()
    assert isinstance(open_seal(None, {}, physical, {}), ShamirSeal)
    # VAULT_SEAL_TYPE=pkcs11 activates the seal from the environment alone.
    env = {"VAULT_SEAL_TYPE": "pkcs11", **{f"VAULT_HSM_{k.upper()}": v for k, v in BASE.items()}}
    assert isinstance(open_seal(None, {}, physical, env), Pkcs11Seal)
    # A disabled stanza (the old seal of a migration) leaves Shamir in force.
    disabled = open_seal("pkcs11", {"disabled": "true"}, physical, {})
    assert isinstance(disabled, ShamirSeal)
    with pytest.raises(SealSettingsError):
        open_seal("awskms", {}, physical, {})


# -- encryption on a real token --------------------------------------------------------------


async def test_gcm_round_trip_records_the_key_label(softhsm: SoftHsm) -> None:
    seal = seal_for(softhsm.options(softhsm.init_token()))
    raw = await seal.encrypt(b"the root key, say", "core/x")
    doc = json.loads(raw)
    assert doc["key_info"] == {"mechanism": CKM_AES_GCM, "key_id": "coffer-root-key"}
    assert b"the root key" not in raw and "hmac" not in doc
    assert await seal.decrypt(raw, "core/x") == b"the root key, say"
    # A fresh nonce per encryption.
    assert json.loads(await seal.encrypt(b"the root key, say", "core/x"))["iv"] != doc["iv"]
    await seal.close()


async def test_cbc_with_hmac_round_trip(softhsm: SoftHsm) -> None:
    options = softhsm.options(
        softhsm.init_token(), mechanism="0x1085", hmac_key_label="coffer-hmac-key"
    )
    seal = seal_for(options)
    raw = await seal.encrypt(b"x" * 100, "core/y")
    blob = decode_blob(raw)
    assert blob.mechanism == CKM_AES_CBC_PAD and len(blob.iv) == 16
    assert blob.hmac_key_label == "coffer-hmac-key" and len(blob.hmac) == 32
    assert await seal.decrypt(raw, "core/y") == b"x" * 100
    await seal.close()


@pytest.mark.parametrize("mechanism", ["0x1087", "0x1085"])
async def test_tampering_is_detected(softhsm: SoftHsm, mechanism: str) -> None:
    options = softhsm.options(softhsm.init_token(), mechanism=mechanism, hmac_key_label="h")
    seal = seal_for(options)
    raw = await seal.encrypt(b"secret material", "core/z")
    blob = decode_blob(raw)
    altered = [
        encode_blob(replace(blob, ciphertext=flip(blob.ciphertext))),
        encode_blob(replace(blob, iv=flip(blob.iv, 0))),
    ]
    if blob.hmac:
        altered.append(encode_blob(replace(blob, hmac=flip(blob.hmac))))
    for bad in altered:
        with pytest.raises(BlobIntegrityError):
            await seal.decrypt(bad, "core/z")
    # Bound to its path: the same blob moved elsewhere does not open.
    with pytest.raises(BlobIntegrityError):
        await seal.decrypt(raw, "core/elsewhere")
    with pytest.raises(BlobIntegrityError):
        await seal.decrypt(b"not json", "core/z")
    # The untouched blob still opens: the failures did not break the session.
    assert await seal.decrypt(raw, "core/z") == b"secret material"
    await seal.close()


async def test_rotation_by_a_new_key_label_keeps_old_blobs_readable(softhsm: SoftHsm) -> None:
    token = softhsm.init_token()
    old = seal_for(softhsm.options(token, key_label="key-2025"))
    old_blob = await old.encrypt(b"written before the rotation", "core/r")
    await old.close()

    new = seal_for(softhsm.options(token, key_label="key-2026"))
    new_blob = await new.encrypt(b"written after", "core/r")
    assert decode_blob(new_blob).key_label == "key-2026"
    assert decode_blob(old_blob).key_label == "key-2025"
    assert await new.decrypt(old_blob, "core/r") == b"written before the rotation"
    assert await new.decrypt(new_blob, "core/r") == b"written after"
    # The two labels are two different keys.
    forged = encode_blob(replace(decode_blob(new_blob), key_label="key-2025"))
    with pytest.raises(BlobIntegrityError):
        await new.decrypt(forged, "core/r")
    await new.close()


async def test_generated_keys_are_not_extractable(softhsm: SoftHsm) -> None:
    seal = seal_for(softhsm.options(softhsm.init_token(), key_label="fresh"))
    await seal.connect()
    attributes = await asyncio.to_thread(seal.token.key_attributes, "fresh")
    assert attributes == {"extractable": False, "sensitive": True}
    await seal.close()


# -- start-up errors: the setting is named -----------------------------------------------------


async def test_missing_key_without_generate_key(softhsm: SoftHsm) -> None:
    seal = seal_for(softhsm.options(softhsm.init_token(), generate_key="false"))
    with pytest.raises(HsmSettingError, match='"key_label": no AES key labelled "coffer-root-key"'):
        await seal.connect()


async def test_wrong_pin(softhsm: SoftHsm) -> None:
    seal = seal_for({**softhsm.options(softhsm.init_token()), "pin": PIN + "x"})
    with pytest.raises(HsmSettingError, match=r'"pin": the token .* refused the PIN'):
        await seal.connect()


async def test_unknown_token_is_unavailable_not_fatal(softhsm: SoftHsm) -> None:
    seal = seal_for(softhsm.options("no-such-token"))
    with pytest.raises(HsmUnavailableError, match='token_label "no-such-token"'):
        await seal.connect()


async def test_missing_library(softhsm: SoftHsm) -> None:
    seal = seal_for({**softhsm.options("t"), "lib": "/nonexistent/libpkcs11.so"})
    with pytest.raises(HsmSettingError, match='"lib": no such file'):
        await seal.connect()


# -- the seal: init, stored root key, recovery keys ------------------------------------------


async def test_init_stores_the_root_key_encrypted_and_hands_out_recovery_keys(
    softhsm: SoftHsm,
) -> None:
    physical = InmemBackend()
    seal = seal_for(softhsm.options(softhsm.init_token()), physical)
    result = await seal.initialize(5, 3)
    assert len(result.shares) == 5
    stored = (await physical.get(ROOT_KEY_PATH)).value  # type: ignore[union-attr]
    assert result.root_key not in stored
    assert await seal.stored_root_key() == result.root_key
    config, recovery = await seal.config(), await seal.share_config()
    assert config is not None and (config.type, config.secret_shares) == ("pkcs11", 1)
    assert recovery is not None and (recovery.secret_shares, recovery.secret_threshold) == (5, 3)
    assert await physical.get(RECOVERY_KEY_PATH) is not None

    # Any three recovery shares prove authority and give the root key back from the HSM.
    assert await seal.root_key_from_shares(result.shares[1:4]) == result.root_key
    other = await seal_for(softhsm.options(softhsm.init_token())).initialize(5, 3)
    with pytest.raises(InvalidRequestError, match="invalid recovery key"):
        await seal.root_key_from_shares(other.shares[:3])
    await seal.close()


async def test_rewrap_moves_the_stored_keys_to_the_current_label(softhsm: SoftHsm) -> None:
    physical, token = InmemBackend(), softhsm.init_token()
    old = seal_for(softhsm.options(token, key_label="old"), physical)
    result = await old.initialize(1, 1)
    await old.close()
    new = seal_for(softhsm.options(token, key_label="new"), physical)
    assert await new.stored_root_key() == result.root_key  # the old key still opens it
    assert await new.rewrap_stored_keys() is True
    for path in (ROOT_KEY_PATH, RECOVERY_KEY_PATH):
        assert decode_blob((await physical.get(path)).value).key_label == "new"  # type: ignore[union-attr]
    assert await new.rewrap_stored_keys() is False
    assert await new.root_key_from_shares(result.shares) == result.root_key
    await new.close()
