"""Key terms of the barrier: the active term encrypts, every term decrypts.

Each term keeps its ``AESGCM`` object, built once when the term is loaded,
because constructing one (the key schedule) per seal/open was a measurable
share of every request.
"""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = ["KeyTerm", "Keyring"]


@dataclass(frozen=True, slots=True)
class KeyTerm:
    term: int
    key: bytes
    install_time: str
    cipher: AESGCM = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "cipher", AESGCM(self.key))

    def __repr__(self) -> str:
        return f"KeyTerm(term={self.term}, install_time={self.install_time!r})"


@dataclass(frozen=True, slots=True)
class Keyring:
    """Immutable keyring; ``rotated`` returns a new one with one more term."""

    terms: tuple[KeyTerm, ...] = field(default_factory=tuple)

    @classmethod
    def new(cls) -> Keyring:
        return cls((KeyTerm(1, os.urandom(32), _now()),))

    @property
    def active(self) -> KeyTerm:
        return self.terms[-1]

    def key_for(self, term: int) -> bytes | None:
        found = self.term(term)
        return found.key if found else None

    def term(self, term: int) -> KeyTerm | None:
        for candidate in reversed(self.terms):  # the active (newest) term is the usual one
            if candidate.term == term:
                return candidate
        return None

    def rotated(self) -> Keyring:
        return Keyring((*self.terms, KeyTerm(self.active.term + 1, os.urandom(32), _now())))

    def serialize(self) -> bytes:
        return json.dumps(
            {
                "version": 1,
                "terms": [
                    {
                        "term": t.term,
                        "key": base64.b64encode(t.key).decode(),
                        "install_time": t.install_time,
                    }
                    for t in self.terms
                ],
            }
        ).encode()

    @classmethod
    def deserialize(cls, raw: bytes) -> Keyring:
        doc = json.loads(raw)
        return cls(
            tuple(
                KeyTerm(int(t["term"]), base64.b64decode(t["key"]), str(t["install_time"]))
                for t in doc["terms"]
            )
        )

    def __repr__(self) -> str:
        return f"Keyring(active_term={self.active.term if self.terms else 0})"


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")
