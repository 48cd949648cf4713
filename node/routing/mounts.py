"""Mount entries, re-exported from their leaf module ``node.logical.mount``.

Kept so existing imports (the ``sys/`` paths, tests) keep working; new code
imports ``node.logical.mount``.
"""

from node.logical.mount import MountEntry, new_mount, normalise_path

__all__ = ["MountEntry", "new_mount", "normalise_path"]
