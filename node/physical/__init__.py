"""Physical storage: untrusted bytes under the barrier.

Backends see only ciphertext. They implement ``PhysicalBackend``: get, put,
delete, list one level of a prefix, and ``commit`` — an atomic multi-key
transaction whose per-key revision checks let read-modify-write logic run
without locks held across awaits.
"""

from node.physical.base import (
    Check,
    Delete,
    Entry,
    PhysicalBackend,
    Put,
    TxnOp,
    children_of,
    validate_key,
)

__all__ = [
    "Check",
    "Delete",
    "Entry",
    "PhysicalBackend",
    "Put",
    "TxnOp",
    "children_of",
    "validate_key",
]
