"""Raft replication of Coffer's encrypted storage (pysyncobj).

The only package allowed to import pysyncobj. It holds ciphertext only: keys
are storage paths and values arrive already encrypted by the barrier.
``RaftBackend`` implements ``node.physical.base.PhysicalBackend`` on top of a
pysyncobj replica; see ``consensus/DESIGN.md`` for how each of the library's
sharp edges (pysyncobj.md) is handled.
"""

from consensus.backend import RaftBackend
from consensus.config import Durability, RaftConfig, RaftConfigError
from consensus.membership import Server
from consensus.state import ChangeSet

__all__ = ["ChangeSet", "Durability", "RaftBackend", "RaftConfig", "RaftConfigError", "Server"]
