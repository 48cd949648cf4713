"""Raft replication of Coffer's encrypted storage (pysyncobj, vendored).

The only package that knows pysyncobj exists: a pinned, changed copy lives
in ``consensus/_vendor/pysyncobj`` (changes listed in DESIGN.md). It holds
ciphertext only: keys are storage paths and values arrive already encrypted
by the barrier.
``RaftBackend`` implements ``sdk.physical.PhysicalBackend`` on top of a
pysyncobj replica; see ``consensus/DESIGN.md`` for how each of the library's
sharp edges (pysyncobj.md) is handled.
"""

from consensus.backend import RaftBackend
from consensus.config import Durability, RaftConfig, RaftConfigError
from consensus.membership import Server
from consensus.state import ChangeSet

__all__ = ["ChangeSet", "Durability", "RaftBackend", "RaftConfig", "RaftConfigError", "Server"]
