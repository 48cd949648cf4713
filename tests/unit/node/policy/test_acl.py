"""ACL evaluation: precedence, merging across policies, parameters, wrapping, templates."""

from __future__ import annotations

from typing import Any

import pytest

from node.logical.request import Operation
from node.policy import ACL, Policy, parse_policy, render_templates
from sdk.errors import PermissionDeniedError


def acl(*texts: str) -> ACL:
    return ACL([parse_policy(f"p{i}", text) for i, text in enumerate(texts)])


def rule(path: str, *caps: str, extra: str = "") -> str:
    quoted = ", ".join(f'"{c}"' for c in caps)
    return f'path "{path}" {{\n  capabilities = [{quoted}]\n  {extra}\n}}\n'


# --- precedence -------------------------------------------------------------


def test_exact_rule_beats_glob() -> None:
    a = acl(rule("secret/*", "read") + rule("secret/foo", "update"))
    assert a.capabilities("secret/foo") == ["update"]
    assert a.capabilities("secret/food") == ["read"]
    assert a.capabilities("secret/foo/bar") == ["read"]


def test_only_the_winning_rule_applies() -> None:
    a = acl(rule("secret/*", "read", "list") + rule("secret/foo*", "update"))
    assert a.capabilities("secret/foo/x") == ["update"]
    assert not a.allow("read", "secret/foo/x").allowed
    assert a.allow("read", "secret/bar").allowed


def test_longest_prefix_wins() -> None:
    a = acl(rule("*", "read") + rule("se*", "list") + rule("secret/a*", "delete"))
    assert a.capabilities("secret/abc") == ["delete"]
    assert a.capabilities("secret/b") == ["list"]
    assert a.capabilities("other") == ["read"]


def test_plus_segment_vs_glob_at_same_position() -> None:
    # Same first-wildcard position; the one that is not a prefix glob wins.
    a = acl(rule("secret/*", "read") + rule("secret/+/bar", "update"))
    assert a.capabilities("secret/x/bar") == ["update"]
    assert a.capabilities("secret/x/baz") == ["read"]
    assert acl(rule("secret/*", "read") + rule("secret/+", "list")).capabilities("secret/foo") == [
        "list"
    ]


def test_later_first_wildcard_wins() -> None:
    a = acl(rule("a/+/c/*", "read") + rule("a/b/*", "update"))
    assert a.capabilities("a/b/c/d") == ["update"]
    assert a.capabilities("a/x/c/d") == ["read"]


def test_fewer_plus_segments_win() -> None:
    a = acl(rule("a/+/+/d", "read") + rule("a/+/c/d", "update"))
    assert a.capabilities("a/x/c/d") == ["update"]
    assert a.capabilities("a/x/y/d") == ["read"]


def test_longer_pattern_wins() -> None:
    a = acl(rule("a/+/b*", "read") + rule("a/+/bar*", "update"))
    assert a.capabilities("a/x/bar1") == ["update"]
    assert a.capabilities("a/x/baz") == ["read"]
    # Longer but lexicographically smaller ("$" < "+"): length decides first.
    a = acl(rule("a/+/+/s", "read") + rule("a/+/$long/+", "update"))
    assert a.capabilities("a/x/$long/s") == ["update"]


def test_lexicographically_greater_wins_the_last_tie() -> None:
    a = acl(rule("+/+/b", "update") + rule("+/a/+", "read"))
    assert a.capabilities("x/a/b") == ["read"]  # "+/a/+" > "+/+/b"


def test_plus_matches_exactly_one_segment() -> None:
    a = acl(rule("secret/+/bar", "read"))
    assert a.capabilities("secret/x/bar") == ["read"]
    for path in ("secret/bar", "secret/x/y/bar", "secret/x/bar/z", "secret/x/barn"):
        assert a.capabilities(path) == ["deny"], path


def test_plus_with_trailing_glob() -> None:
    a = acl(rule("secret/+/ba*", "read"))
    assert a.capabilities("secret/x/bar/baz") == ["read"]
    assert a.capabilities("secret/x/foo") == ["deny"]


def test_leading_slash_on_request_path_is_ignored() -> None:
    assert acl(rule("secret/foo", "read")).allow("read", "/secret/foo").allowed


def test_list_matches_rule_without_trailing_slash() -> None:
    a = acl(rule("secret/foo", "list") + rule("kv/+", "list"))
    assert a.allow(Operation.LIST, "secret/foo/").allowed
    assert a.allow("list", "kv/x/").allowed
    assert not a.allow("read", "secret/foo/").allowed
    assert a.allow("read", "secret/foo/", is_list=True).reason.endswith('not grant "read"')


def test_list_prefers_rule_with_trailing_slash() -> None:
    a = acl(rule("secret/foo", "list") + rule("secret/foo/", "read"))
    assert not a.allow("list", "secret/foo/").allowed


def test_no_rule_means_deny() -> None:
    a = acl(rule("secret/*", "read"))
    assert a.capabilities("other/x") == ["deny"]
    decision = a.allow("read", "other/x")
    assert decision.allowed is False
    assert decision.capabilities == ("deny",)


def test_rule_with_no_capabilities_reports_deny() -> None:
    assert acl('path "a" { capabilities = [] }').capabilities("a") == ["deny"]


# --- several policies ---------------------------------------------------------


def test_same_pattern_in_several_policies_unions_capabilities() -> None:
    a = acl(rule("secret/*", "read"), rule("secret/*", "list", "update"))
    assert a.capabilities("secret/x") == ["list", "read", "update"]


def test_repeated_block_in_one_policy_merges() -> None:
    a = acl(rule("secret/*", "read") + rule("secret/*", "create"))
    assert a.capabilities("secret/x") == ["create", "read"]


@pytest.mark.parametrize("deny_first", [True, False])
def test_deny_in_any_policy_wins(deny_first: bool) -> None:
    texts = [rule("secret/*", "deny"), rule("secret/*", "read", "sudo")]
    a = acl(*(texts if deny_first else reversed(texts)))
    assert a.capabilities("secret/x") == ["deny"]
    (merged,) = a.rules
    assert merged.capabilities == {"deny"}
    decision = a.allow("read", "secret/x")
    assert (decision.allowed, decision.sudo) == (False, False)
    assert "denied by rule" in decision.reason


def test_deny_rule_overrides_broader_grant() -> None:
    a = acl(rule("secret/*", "read"), rule("secret/admin", "deny"))
    assert not a.allow("read", "secret/admin").allowed
    assert a.allow("read", "secret/other").allowed


def test_wrapping_ttls_take_smaller_nonzero_and_params_merge() -> None:
    a = acl(
        rule("p", "update", extra='max_wrapping_ttl = "1h"\nallowed_parameters = { x = ["a"] }'),
        rule(
            "p",
            "update",
            extra='max_wrapping_ttl = "10m"\nmin_wrapping_ttl = 30\n'
            'allowed_parameters = { x = ["b"], y = [] }\nrequired_parameters = ["x"]',
        ),
        rule("p", "update", extra='allowed_parameters = { y = ["only"] }'),
    )
    (merged,) = a.rules
    assert (merged.min_wrapping_ttl, merged.max_wrapping_ttl) == (30, 600)
    assert sorted(merged.allowed_parameters["x"]) == ["a", "b"]
    assert merged.allowed_parameters["y"] == ()  # [] (any value) wins
    assert merged.required_parameters == ("x",)
    assert a.allow("update", "p", {"x": "b", "y": "anything"}, wrap_ttl=60).allowed
    assert not a.allow("update", "p", {"x": "c"}, wrap_ttl=60).allowed


def test_policy_without_parameter_limits_does_not_lift_anothers() -> None:
    a = acl(rule("p", "update", extra='allowed_parameters = { x = ["a"] }'), rule("p", "update"))
    assert not a.allow("update", "p", {"x": "z"}).allowed


# --- root, help, operations ---------------------------------------------------


def test_root_allows_everything() -> None:
    for root in (ACL.root(), ACL([Policy(name="root", raw="")]), ACL.root()):
        assert root.is_root
        assert root.capabilities("any/path") == ["root"]
        decision = root.allow("delete", "sys/seal", {"x": 1}, wrap_ttl=0)
        assert (decision.allowed, decision.sudo, decision.capabilities) == (True, True, ("root",))


def test_help_is_always_allowed() -> None:
    assert acl(rule("secret/*", "deny")).allow(Operation.HELP, "secret/x").allowed


@pytest.mark.parametrize("operation", ["renew", "revoke", "rollback"])
def test_lease_operations_need_update(operation: str) -> None:
    assert acl(rule("sys/leases/*", "update")).allow(operation, "sys/leases/x").allowed
    assert not acl(rule("sys/leases/*", "read")).allow(operation, "sys/leases/x").allowed


@pytest.mark.parametrize("operation", list(Operation))
def test_each_operation_needs_its_capability(operation: Operation) -> None:
    if operation in (Operation.HELP, Operation.HEADER):
        return
    granted = acl(rule("p", operation.value)).allow(operation, "p")
    others = [c for c in ("create", "read", "update", "patch", "delete", "list") if c != operation]
    refused = acl(rule("p", *others)).allow(operation, "p")
    assert (granted.allowed, refused.allowed) == (True, False)


def test_header_operation_is_not_covered() -> None:
    assert not acl(rule("p", "read", "update")).allow(Operation.HEADER, "p").allowed


def test_sudo_flag_reports_the_rule() -> None:
    a = acl(rule("sys/audit/*", "update", "sudo") + rule("sys/mounts/*", "update"))
    assert a.allow("update", "sys/audit/x").sudo is True
    assert a.allow("update", "sys/mounts/x").sudo is False
    assert a.allow("read", "sys/audit/x").capabilities == ("sudo", "update")


# --- parameters -----------------------------------------------------------------


def allowed(extra: str, data: dict[str, Any], operation: str = "update") -> bool:
    return (
        acl(rule("p", "read", "update", "create", "patch", "delete", extra=extra))
        .allow(operation, "p", data)
        .allowed
    )


def test_allowed_parameters_only_listed_keys_pass() -> None:
    extra = 'allowed_parameters = { name = [], ttl = ["1h"] }'
    assert allowed(extra, {"name": "x", "ttl": "1h"})
    assert allowed(extra, {"NAME": "x"})  # keys compared lower-cased
    assert not allowed(extra, {"other": "x"})
    assert not allowed(extra, {"ttl": "2h"})
    assert allowed(extra, {})  # an empty body passes


def test_allowed_parameters_star_key() -> None:
    assert allowed('allowed_parameters = { "*" = [] }', {"anything": 1})
    extra = 'allowed_parameters = { "*" = [], ttl = ["1h"] }'
    assert allowed(extra, {"anything": 1, "ttl": "1h"})
    assert not allowed(extra, {"anything": 1, "ttl": "2h"})


@pytest.mark.parametrize(
    ("pattern", "value", "ok"),
    [
        ("dev-*", "dev-42", True),
        ("dev-*", "prod-42", False),
        ("*-dev", "team-dev", True),
        ("*-dev", "team-prod", False),
        ("*mid*", "a-mid-b", True),
        ("*mid*", "a-b", False),
        ("*", "anything", False),  # a lone "*" is literal
        ("*", "*", True),
        ("exact", "exact", True),
        ("exact", "exactly", False),
    ],
)
def test_allowed_string_globs(pattern: str, value: str, ok: bool) -> None:
    assert allowed(f'allowed_parameters = {{ x = ["{pattern}"] }}', {"x": value}) is ok


def test_non_string_values_must_be_deep_equal() -> None:
    policy = (
        '{"path": {"p": {"capabilities": ["update"], "allowed_parameters": '
        '{"n": [1, 2.5], "flag": [true], "obj": [{"a": [1]}]}}}}'
    )
    a = acl(policy)
    assert a.allow("update", "p", {"n": 1}).allowed
    assert a.allow("update", "p", {"n": 2.5}).allowed
    assert not a.allow("update", "p", {"n": "1"}).allowed
    assert not a.allow("update", "p", {"n": True}).allowed  # True is not 1
    assert a.allow("update", "p", {"flag": True}).allowed
    assert not a.allow("update", "p", {"flag": 1}).allowed
    assert a.allow("update", "p", {"obj": {"a": [1]}}).allowed
    assert not a.allow("update", "p", {"obj": {"a": [2]}}).allowed


def test_list_values_each_element_must_be_allowed() -> None:
    extra = 'allowed_parameters = { policies = ["dev", "ops-*"] }'
    assert allowed(extra, {"policies": ["dev", "ops-1"]})
    assert not allowed(extra, {"policies": ["dev", "admin"]})
    assert allowed(extra, {"policies": "dev,ops-2"})  # comma-separated form
    assert not allowed(extra, {"policies": "dev,admin"})


def test_denied_parameters() -> None:
    extra = 'denied_parameters = { policies = ["root"], secret = [] }'
    assert allowed(extra, {"policies": ["dev"]})
    assert not allowed(extra, {"policies": ["dev", "root"]})
    assert not allowed(extra, {"policies": "dev, root"})
    assert not allowed(extra, {"policies": "ROOT"})  # policy names are case-insensitive
    assert not allowed(extra, {"Secret": "anything"})  # [] denies any value
    assert allowed(extra, {"other": 1})


def test_denied_star_denies_any_body() -> None:
    extra = 'denied_parameters = { "*" = [] }'
    assert not allowed(extra, {"x": 1})
    assert allowed(extra, {})


def test_denied_wins_over_allowed() -> None:
    extra = 'allowed_parameters = { x = [] }\ndenied_parameters = { x = ["bad"] }'
    assert allowed(extra, {"x": "good"})
    assert not allowed(extra, {"x": "bad"})


def test_required_parameters() -> None:
    extra = 'required_parameters = ["Name"]'
    assert allowed(extra, {"name": "x"})
    assert allowed(extra, {"NAME": "x", "other": 1})
    assert not allowed(extra, {"other": 1})
    # As the reference: required keys are checked before an empty body is let through.
    assert not allowed(extra, {})
    assert (
        "missing required parameter"
        in acl(rule("p", "update", extra=extra)).allow("update", "p", {}).reason
    )


def test_parameters_checked_for_read_but_not_delete_or_list() -> None:
    extra = 'denied_parameters = { "*" = [] }'
    assert not allowed(extra, {"x": 1}, operation="read")
    assert not allowed(extra, {"x": 1}, operation="create")
    assert not allowed(extra, {"x": 1}, operation="patch")
    assert allowed(extra, {"x": 1}, operation="delete")
    a = acl(rule("p", "list", extra=extra))
    assert a.allow("list", "p", {"x": 1}).allowed


# --- response wrapping ------------------------------------------------------------


def test_max_wrapping_ttl() -> None:
    a = acl(rule("p", "read", extra='max_wrapping_ttl = "1h"'))
    assert not a.allow("read", "p").allowed  # must be wrapped
    assert not a.allow("read", "p", wrap_ttl=3601).allowed
    assert a.allow("read", "p", wrap_ttl=3600).allowed
    assert a.allow("read", "p", wrap_ttl=1).allowed


def test_min_wrapping_ttl() -> None:
    a = acl(rule("p", "read", extra='min_wrapping_ttl = "1m"'))
    assert not a.allow("read", "p").allowed
    assert not a.allow("read", "p", wrap_ttl=59).allowed
    assert a.allow("read", "p", wrap_ttl=60).allowed
    assert a.allow("read", "p", wrap_ttl=86400).allowed


# --- templates --------------------------------------------------------------------

TEMPLATED = (
    rule("secret/{{identity.entity.name}}/*", "read", "list")
    + rule("groups/{{ identity.groups.names.admins.id }}", "update")
    + rule("alias/{{identity.entity.aliases.auth_userpass_1.metadata.team}}", "create")
    + rule("plain/*", "read")
)
IDENTITY = {
    "identity.entity.name": "alice",
    "identity.groups.names.admins.id": "g-123",
    "identity.entity.aliases.auth_userpass_1.metadata.team": "ops",
}


def test_templates_resolved() -> None:
    policy = render_templates(parse_policy("t", TEMPLATED), IDENTITY)
    assert not policy.templated
    a = ACL([policy])
    assert a.capabilities("secret/alice/x") == ["list", "read"]
    assert a.capabilities("secret/bob/x") == ["deny"]
    assert a.capabilities("groups/g-123") == ["update"]
    assert a.capabilities("alias/ops") == ["create"]


def test_unresolvable_templates_drop_their_rules() -> None:
    partial = {"identity.entity.name": "alice"}
    a = ACL([render_templates(parse_policy("t", TEMPLATED), partial)])
    assert [r.path for r in a.rules] == ["secret/alice/*", "plain/*"]
    none = render_templates(parse_policy("t", TEMPLATED), None)
    assert [r.path for r in none.rules] == ["plain/*"]
    empty = render_templates(parse_policy("t", TEMPLATED), {"identity.entity.name": ""})
    assert [r.path for r in empty.rules] == ["plain/*"]


def test_unrendered_templated_rules_never_match() -> None:
    a = ACL([parse_policy("t", TEMPLATED)])
    assert a.capabilities("secret/{{identity.entity.name}}/x") == ["deny"]
    assert a.capabilities("plain/x") == ["read"]


@pytest.mark.parametrize("value", ["*", "a*", "+", "a/b"])
def test_template_values_that_change_the_pattern_fail_closed(value: str) -> None:
    policy = parse_policy("t", TEMPLATED)
    with pytest.raises(PermissionDeniedError, match="identity value for"):
        render_templates(policy, {**IDENTITY, "identity.entity.name": value})


def test_template_slashes_and_wildcards_can_be_allowed() -> None:
    policy = parse_policy("t", TEMPLATED)
    rendered = render_templates(
        policy, {**IDENTITY, "identity.entity.name": "team/alice"}, allow_slashes=True
    )
    assert ACL([rendered]).capabilities("secret/team/alice/x") == ["list", "read"]
    rendered = render_templates(
        policy, {**IDENTITY, "identity.entity.name": "al*"}, allow_wildcards=True
    )
    assert "secret/al*/*" in [r.path for r in rendered.rules]
