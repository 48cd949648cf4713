"""ACL policies: parsing, built-ins, storage, identity templates and evaluation.

This package owns everything between policy text and an allow/deny answer:
``parse_policy`` turns HCL/JSON into ``Policy`` values, ``PolicyStore``
persists them (and caches parsed policies and ACLs), ``render_templates``
specialises templated paths for one identity, and ``ACL`` answers
``allow``/``capabilities`` for a request. Token lookup, sudo-protected path
lists and the HTTP endpoints belong to the request pipeline, not here.
"""

from node.policy.acl import ACL, Decision, merge_rules
from node.policy.builtin import (
    DEFAULT_POLICY_NAME,
    DEFAULT_POLICY_TEXT,
    RESPONSE_WRAPPING_POLICY_NAME,
    ROOT_POLICY_NAME,
)
from node.policy.model import PathRule, Policy
from node.policy.parser import parse_policy
from node.policy.store import PolicyStore, normalize_name
from node.policy.templates import render_templates

__all__ = [
    "ACL",
    "DEFAULT_POLICY_NAME",
    "DEFAULT_POLICY_TEXT",
    "RESPONSE_WRAPPING_POLICY_NAME",
    "ROOT_POLICY_NAME",
    "Decision",
    "PathRule",
    "Policy",
    "PolicyStore",
    "merge_rules",
    "normalize_name",
    "parse_policy",
    "render_templates",
]
