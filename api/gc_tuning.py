"""The cyclic garbage collector's settings for a server process.

CPython starts a young (generation 0) collection after 700 net allocations of
container objects. A write on Raft storage keeps its request's objects alive
across its commit wait, so at 32 concurrent writers ~1,000 of them are always
in flight: the default threshold ran a young collection every ~10 writes, each
one walking the in-flight requests and promoting them, and the promoted objects
then paid for middle and full collections over the whole heap (the modules and
the stored state included). That was ~9 % of the active node's CPU per write
(docs/performance.md, "Sixth pass"). Reference counting frees almost every
object of a request anyway; the collector is only there for cycles.

So a server process:

* collects young objects by the ``YOUNG`` (most die before a collection, so
  each costs about what it finds alive: the requests in flight);
* moves what exists once it is listening (modules, classes, the app and the
  core) to the permanent generation with ``gc.freeze``: those objects live as
  long as the process, and no full collection walks them again.

Cycles are still found, later: a young collection every ~20,000 net
allocations, a full one after ``MIDDLE * OLD`` young ones at most.
"""

from __future__ import annotations

import gc

__all__ = ["MIDDLE", "OLD", "YOUNG", "freeze_startup_objects", "set_thresholds"]

#: Net container allocations between young collections (CPython's default: 700).
YOUNG = 20_000
#: Young collections between middle ones (default 10).
MIDDLE = 20
#: Middle collections between full ones (default 10; CPython also waits until a
#: quarter of the long-lived objects are new).
OLD = 50


def set_thresholds() -> None:
    """Before the server starts: collect by the ``YOUNG``, not by the 700."""
    gc.set_threshold(YOUNG, MIDDLE, OLD)


def freeze_startup_objects() -> None:
    """Once listening: what exists now lives as long as the process; stop walking it."""
    gc.collect()
    gc.freeze()
