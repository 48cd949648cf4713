"""Clustering on Raft storage: the core's side of ``consensus``.

``consensus`` replicates ciphertext; this package decides what a node *is*
(active, standby, performance standby, removed), opens the replica only once
the unseal keys prove the node belongs to the cluster, lets new nodes join
through a challenge only a key holder can answer, keeps every node's caches
in step with applied entries, and publishes where each node serves its API.
It imports neither aiohttp nor pysyncobj: ``api.server`` hands it a
:class:`~node.cluster.ports.RaftDriver` (from ``consensus.driver``) and an
outgoing HTTP client. See ``docs/clustering.md``.

The core sits above this package and is seen only through
:class:`~node.cluster.ports.HostCore` (``DESIGN.md`` here). Submodules are
imported directly (``node.cluster.cluster`` ...), so importing one loads only
what it needs.
"""
