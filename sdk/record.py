"""``@record``: a dataclass the type checker treats as frozen, built at the speed
of a plain one.

A frozen dataclass's ``__init__`` stores each field through
``object.__setattr__`` (its own ``__setattr__`` refuses): ~1.7 µs for the
16 fields of a ``Request`` against ~0.5 µs for a plain slotted one. Requests,
responses, stored values and transaction operations are built several times
on every request, and their frozen ``__init__``\\ s were ~5 % of a KV read
(docs/performance.md, "Nineteenth pass"). ``@record`` builds a plain slotted
dataclass with the hash a frozen one has, and tells ``mypy`` (PEP 681's
``frozen_default``) that its fields are read-only: an assignment to one is a
type error, which CI refuses (``tests/unit/sdk/test_record.py`` runs mypy to
show it), and changes are made with ``dataclasses.replace`` as before. Only
code outside the type-checked tree could change one at run time.

For records made once per process or per login, plain ``frozen=True`` stays
the better default: it also refuses at run time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar, dataclass_transform

__all__ = ["record"]

_T = TypeVar("_T")


@dataclass_transform(frozen_default=True)
def record(cls: type[_T]) -> type[_T]:
    """``@dataclass(frozen=True, slots=True)`` for the type checker; at run time
    the same class without the run-time refusal (and so without its cost)."""
    return dataclass(slots=True, unsafe_hash=True)(cls)
