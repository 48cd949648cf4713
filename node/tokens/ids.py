"""Random identifiers in the reference's shapes.

A token or accessor minted in a namespace other than root ends with
``.<namespace id>`` (``hvs.<24 random>.<nsid>``, ``<24 random>.<nsid>``), as in
the reference: any node can tell which tenant a token belongs to from the
string alone, before any storage read. Root-namespace values carry no suffix,
so tokens minted before namespaces existed keep their shape.
"""

from __future__ import annotations

from node.base62 import random_base62
from node.namespaces.model import ROOT_ID

__all__ = [
    "BATCH_TOKEN_PREFIX",
    "SERVICE_TOKEN_PREFIX",
    "TOKEN_LENGTH",
    "namespace_suffix",
    "new_accessor",
    "new_token_id",
    "suffix_for",
    "with_namespace",
]

SERVICE_TOKEN_PREFIX = "hvs."
BATCH_TOKEN_PREFIX = "hvb."
#: Length of a root-namespace service token; the generate-root one-time password matches it.
TOKEN_LENGTH = len(SERVICE_TOKEN_PREFIX) + 24
#: Prefixes stripped before looking for a namespace suffix (current and legacy shapes).
_TYPE_PREFIXES = (SERVICE_TOKEN_PREFIX, BATCH_TOKEN_PREFIX, "hvr.", "s.", "b.", "r.")


def suffix_for(namespace_id: str) -> str:
    """The suffix values minted in ``namespace_id`` carry ("" for root)."""
    return "" if namespace_id in ("", ROOT_ID) else namespace_id


def with_namespace(value: str, namespace_id: str) -> str:
    """``value`` as minted in the namespace ``namespace_id`` (unchanged for root)."""
    suffix = suffix_for(namespace_id)
    return f"{value}.{suffix}" if suffix else value


def namespace_suffix(value: str) -> str:
    """The namespace id a token or accessor names ("" when it names none: root or legacy)."""
    for prefix in _TYPE_PREFIXES:
        if value.startswith(prefix):
            value = value[len(prefix) :]
            break
    _, dot, suffix = value.rpartition(".")
    return suffix if dot else ""


def new_token_id(namespace_id: str = ROOT_ID) -> str:
    body = random_base62(TOKEN_LENGTH - len(SERVICE_TOKEN_PREFIX))
    return with_namespace(SERVICE_TOKEN_PREFIX + body, namespace_id)


def new_accessor(namespace_id: str = ROOT_ID) -> str:
    return with_namespace(random_base62(24), namespace_id)
