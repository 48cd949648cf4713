"""The stored form of a value encrypted by the HSM (the reference's ``BlobInfo``).

JSON rather than the reference's protobuf, with the same fields: the
ciphertext, its IV or nonce, the HMAC for CBC, and ``key_info`` naming the
mechanisms and key labels. The labels are what let a new ``key_label`` rotate
the key while older blobs still decrypt with the key they name.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from node.seal.pkcs11_token import BlobIntegrityError, HsmCiphertext

__all__ = ["decode_blob", "encode_blob"]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def encode_blob(blob: HsmCiphertext) -> bytes:
    key_info: dict[str, Any] = {"mechanism": blob.mechanism, "key_id": blob.key_label}
    if blob.hmac:
        key_info["hmac_mechanism"] = blob.hmac_mechanism
        key_info["hmac_key_id"] = blob.hmac_key_label
    doc: dict[str, Any] = {
        "ciphertext": _b64(blob.ciphertext),
        "iv": _b64(blob.iv),
        "key_info": key_info,
    }
    if blob.hmac:
        doc["hmac"] = _b64(blob.hmac)
    return json.dumps(doc, sort_keys=True).encode()


def decode_blob(raw: bytes) -> HsmCiphertext:
    try:
        doc = json.loads(raw)
        info = doc["key_info"]
        return HsmCiphertext(
            mechanism=int(info["mechanism"]),
            key_label=str(info["key_id"]),
            iv=base64.b64decode(doc["iv"], validate=True),
            ciphertext=base64.b64decode(doc["ciphertext"], validate=True),
            hmac=base64.b64decode(doc.get("hmac", ""), validate=True),
            hmac_mechanism=int(info.get("hmac_mechanism", 0)),
            hmac_key_label=str(info.get("hmac_key_id", "")),
        )
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise BlobIntegrityError(f"a stored HSM blob is malformed: {exc}") from None
