"""The built-in policies: ``root``, ``default`` and ``response-wrapping``.

``root`` and ``response-wrapping`` are never stored and cannot be changed;
``default`` is written to storage at first setup, may be edited, and cannot
be deleted (every token carries it unless created without it).
"""

from __future__ import annotations

from node.policy.model import Policy
from node.policy.parser import parse_policy

__all__ = [
    "DEFAULT",
    "DEFAULT_POLICY_NAME",
    "DEFAULT_POLICY_TEXT",
    "IMMUTABLE_POLICIES",
    "RESPONSE_WRAPPING",
    "RESPONSE_WRAPPING_POLICY_NAME",
    "ROOT",
    "ROOT_POLICY_NAME",
    "UNDELETABLE_POLICIES",
]

ROOT_POLICY_NAME = "root"
DEFAULT_POLICY_NAME = "default"
RESPONSE_WRAPPING_POLICY_NAME = "response-wrapping"

#: Cannot be written or deleted.
IMMUTABLE_POLICIES = frozenset({ROOT_POLICY_NAME, RESPONSE_WRAPPING_POLICY_NAME})
#: Cannot be deleted (``default`` can still be edited).
UNDELETABLE_POLICIES = IMMUTABLE_POLICIES | {DEFAULT_POLICY_NAME}

DEFAULT_POLICY_TEXT = """\
# Allow tokens to look up their own properties
path "auth/token/lookup-self" {
    capabilities = ["read"]
}

# Allow tokens to renew themselves
path "auth/token/renew-self" {
    capabilities = ["update"]
}

# Allow tokens to revoke themselves
path "auth/token/revoke-self" {
    capabilities = ["update"]
}

# Allow a token to look up its own capabilities on a path
path "sys/capabilities-self" {
    capabilities = ["update"]
}

# Allow a token to look up its own entity by id or name
path "identity/entity/id/{{identity.entity.id}}" {
  capabilities = ["read"]
}
path "identity/entity/name/{{identity.entity.name}}" {
  capabilities = ["read"]
}

# Allow a token to look up its resultant ACL from all policies. This is useful
# for UIs. It is an internal path because the format may change at any time
# based on how the internal ACL features and capabilities change.
path "sys/internal/ui/resultant-acl" {
    capabilities = ["read"]
}

# Allow a token to renew a lease via lease_id in the request body
path "sys/leases/renew" {
    capabilities = ["update"]
}

# Allow looking up lease properties. This requires knowing the lease ID ahead
# of time and does not divulge any sensitive information.
path "sys/leases/lookup" {
    capabilities = ["update"]
}

# Allow a token to manage its own cubbyhole
path "cubbyhole/*" {
    capabilities = ["create", "read", "update", "delete", "list"]
}

# Allow a token to wrap arbitrary values in a response-wrapping token
path "sys/wrapping/wrap" {
    capabilities = ["update"]
}

# Allow a token to look up the creation time and TTL of a given
# response-wrapping token
path "sys/wrapping/lookup" {
    capabilities = ["update"]
}

# Allow a token to unwrap a response-wrapping token. This is a convenience to
# avoid client token swapping since this is also part of the response wrapping
# policy.
path "sys/wrapping/unwrap" {
    capabilities = ["update"]
}

# Allow general purpose tools
path "sys/tools/hash" {
    capabilities = ["update"]
}
path "sys/tools/hash/*" {
    capabilities = ["update"]
}

# Allow a token to make requests to the Authorization Endpoint for OIDC providers.
path "identity/oidc/provider/+/authorize" {
    capabilities = ["read", "update"]
}
"""

_RESPONSE_WRAPPING_TEXT = """\
path "cubbyhole/response" {
    capabilities = ["create", "read"]
}

path "sys/wrapping/unwrap" {
    capabilities = ["update"]
}
"""

#: Grants everything; the ACL special-cases the name, so it has no rules.
ROOT = Policy(name=ROOT_POLICY_NAME, raw="")
DEFAULT = parse_policy(DEFAULT_POLICY_NAME, DEFAULT_POLICY_TEXT)
RESPONSE_WRAPPING = parse_policy(RESPONSE_WRAPPING_POLICY_NAME, _RESPONSE_WRAPPING_TEXT)
