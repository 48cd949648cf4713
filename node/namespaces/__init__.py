"""Namespaces: isolated tenants, each with its own mounts, policies, tokens and identity.

A namespace is a path (``""`` for root, ``team-a/``, ``team-a/dev/``) and a
short random id that names its storage prefix (``namespaces/<id>/``), so a
namespace's data never shares keys with another's.
"""

from node.namespaces.model import ROOT, ROOT_ID, Namespace, NamespaceTree

__all__ = ["ROOT", "ROOT_ID", "Namespace", "NamespaceTree"]
