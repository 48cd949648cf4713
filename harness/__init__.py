"""The test harness: launch Coffer servers and clusters, talk to them, wait on them.

Used by ``tests/``, ``chaos/``, ``bench/`` and ``deploy/clusterctl.py``; never by the
server (``api``, ``node``, ``consensus``: an import-linter contract) and not shipped
in the wheel or the image. See ``harness/DESIGN.md``.
"""
