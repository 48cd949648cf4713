"""The encryption barrier between the core and untrusted physical storage.

Every value is sealed with AES-256-GCM under the active key term, with a
random 96-bit nonce and the storage path as associated data, so a ciphertext
moved to another key fails to open. The keyring is itself encrypted by the
root key, which the seal protects.
"""

from node.barrier.aead import open_sealed, seal_value
from node.barrier.barrier import Barrier, StoredValue
from node.barrier.keyring import Keyring, KeyTerm
from node.barrier.view import BarrierView, Storage

__all__ = [
    "Barrier",
    "BarrierView",
    "KeyTerm",
    "Keyring",
    "Storage",
    "StoredValue",
    "open_sealed",
    "seal_value",
]
