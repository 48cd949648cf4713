"""Policy text -> Policy: HCL and JSON forms, legacy values, and every error class."""

from __future__ import annotations

import re

import pytest

from node.policy import parse_policy
from node.policy.model import PathRule
from sdk.errors import InvalidRequestError


def only_rule(text: str) -> PathRule:
    policy = parse_policy("dev", text)
    assert len(policy.rules) == 1
    return policy.rules[0]


def test_hcl_rule_with_every_setting() -> None:
    rule = only_rule(
        """
        path "/secret/data/*" {
          capabilities = ["create", "read", "update", "patch", "delete", "list", "sudo"]
          allowed_parameters = {
            "Name" = ["alice", "bob*"]
            "ttl"  = []
          }
          denied_parameters = { "admin" = ["root"] }
          required_parameters = ["Name", "ttl"]
          min_wrapping_ttl = "1m"
          max_wrapping_ttl = "1h30m"
          comment = "team secrets"
        }
        """
    )
    assert rule.path == "secret/data/*"  # leading "/" stripped
    assert rule.capabilities == {"create", "read", "update", "patch", "delete", "list", "sudo"}
    assert dict(rule.allowed_parameters) == {"name": ("alice", "bob*"), "ttl": ()}
    assert dict(rule.denied_parameters) == {"admin": ("root",)}
    assert rule.required_parameters == ("name", "ttl")
    assert (rule.min_wrapping_ttl, rule.max_wrapping_ttl) == (60, 5400)
    assert not rule.templated


def test_integer_durations_are_seconds() -> None:
    rule = only_rule(
        'path "a" { capabilities = ["read"]\n min_wrapping_ttl = 30\n max_wrapping_ttl = 90 }'
    )
    assert (rule.min_wrapping_ttl, rule.max_wrapping_ttl) == (30, 90)


def test_json_policy_dict_and_list_forms() -> None:
    as_dict = parse_policy(
        "j", '{"path": {"secret/*": {"capabilities": ["read"]}, "kv/x": {"policy": "write"}}}'
    )
    assert [(r.path, sorted(r.capabilities)) for r in as_dict.rules] == [
        ("secret/*", ["read"]),
        ("kv/x", ["create", "delete", "list", "read", "update"]),
    ]
    as_list = parse_policy(
        "j", '{"path": [{"a/*": {"capabilities": ["list"]}}, {"b": {"capabilities": ["read"]}}]}'
    )
    assert [(r.path, set(r.capabilities)) for r in as_list.rules] == [
        ("a/*", {"list"}),
        ("b", {"read"}),
    ]


def test_json_allows_mixed_value_lists() -> None:
    rule = only_rule('{"path": {"a": {"allowed_parameters": {"x": ["s", 1, true, null]}}}}')
    assert rule.allowed_parameters["x"] == ("s", 1, True, None)


def test_name_key_ignored_and_zero_paths_allowed() -> None:
    assert parse_policy("p", 'name = "whatever"').rules == ()
    assert parse_policy("p", "# nothing but a comment\n").rules == ()


def test_raw_text_kept_verbatim() -> None:
    text = 'path "a" {\n  capabilities = ["read"]\n}\n'
    policy = parse_policy("p", text)
    assert policy.raw == text
    assert policy.name == "p"


def test_enterprise_only_keys_accepted_and_ignored() -> None:
    rule = only_rule(
        'path "a" { capabilities = ["read"]\n mfa_methods = ["okta"]\n'
        ' control_group = { factor "x" { identity { approvals = 1 } } } }'
    )
    assert rule.capabilities == {"read"}


@pytest.mark.parametrize(
    ("legacy", "expected"),
    [
        ("read", {"read", "list"}),
        ("write", {"create", "read", "update", "delete", "list"}),
        ("sudo", {"create", "read", "update", "delete", "list", "sudo"}),
        ("deny", {"deny"}),
    ],
)
def test_legacy_policy_values(legacy: str, expected: set[str]) -> None:
    assert only_rule(f'path "a" {{ policy = "{legacy}" }}').capabilities == expected


def test_legacy_policy_adds_to_capabilities() -> None:
    rule = only_rule('path "a" { policy = "read"\n capabilities = ["patch"] }')
    assert rule.capabilities == {"read", "list", "patch"}


def test_deny_overrides_the_rest_of_its_rule() -> None:
    rule = only_rule(
        'path "a" { capabilities = ["read", "deny"]\n allowed_parameters = { x = [] }\n'
        " max_wrapping_ttl = 60 }"
    )
    assert rule.capabilities == {"deny"}
    assert not rule.allowed_parameters
    assert rule.max_wrapping_ttl == 0


def test_parameter_keys_lowercased_and_colliding_keys_merge() -> None:
    rule = only_rule('{"path": {"a": {"allowed_parameters": {"K": ["x"], "k": ["y"], "J": "z"}}}}')
    assert dict(rule.allowed_parameters) == {"k": ("x", "y"), "j": ("z",)}
    rule = only_rule('{"path": {"a": {"denied_parameters": {"K": ["x"], "k": []}}}}')
    assert dict(rule.denied_parameters) == {"k": ()}


def test_repeated_path_blocks_are_all_kept() -> None:
    policy = parse_policy(
        "p", 'path "a/*" { capabilities = ["read"] }\npath "a/*" { capabilities = ["list"] }'
    )
    assert [set(r.capabilities) for r in policy.rules] == [{"read"}, {"list"}]


def test_templated_paths_are_valid_patterns() -> None:
    rule = only_rule(
        'path "secret/{{ identity.entity.aliases.auth_userpass_1.metadata.team }}/*" '
        '{ capabilities = ["read"] }'
    )
    assert rule.templated
    assert rule.path == "secret/{{ identity.entity.aliases.auth_userpass_1.metadata.team }}/*"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            'path "secret/*" { capabilities = ["raed"] }',
            'failed to parse policy "dev": path "secret/*": invalid capability "raed"',
        ),
        (
            'path "a*b" { capabilities = ["read"] }',
            'failed to parse policy "dev": path "a*b": "*" is only allowed at the end',
        ),
        (
            'path "a/+*" { capabilities = ["read"] }',
            'failed to parse policy "dev": path "a/+*": invalid use of wildcards '
            '("+*" is forbidden)',
        ),
        (
            'paths "a" { capabilities = ["read"] }',
            'failed to parse policy "dev": invalid key "paths"',
        ),
        (
            'path "a" { capability = ["read"] }',
            'failed to parse policy "dev": path "a": invalid key "capability"',
        ),
        (
            'path "a" { capabilities = ["read"]\n min_wrapping_ttl = "soon" }',
            'failed to parse policy "dev": path "a": min_wrapping_ttl: invalid duration \'soon\'',
        ),
        (
            'path "a" { capabilities = ["read"]\n max_wrapping_ttl = "-5s" }',
            'failed to parse policy "dev": path "a": max_wrapping_ttl: must not be negative',
        ),
        (
            'path "a" { capabilities = ["read"]\n min_wrapping_ttl = "1h"\n'
            ' max_wrapping_ttl = "1m" }',
            'failed to parse policy "dev": path "a": max_wrapping_ttl cannot be less than '
            "min_wrapping_ttl",
        ),
        (
            'path "a" { policy = "writ" }',
            'failed to parse policy "dev": path "a": invalid policy "writ"',
        ),
        (
            'path "a" { capabilities = "read" }',
            'failed to parse policy "dev": path "a": "capabilities" must be a list of strings',
        ),
        (
            'path "a" { capabilities = ["read"]\n capabilities = ["list"] }',
            'failed to parse policy "dev": path "a": duplicate key "capabilities"',
        ),
        (
            'path "a" { allowed_parameters = ["x"] }',
            'failed to parse policy "dev": path "a": "allowed_parameters" must be a map',
        ),
        (
            'path = "a"',
            'failed to parse policy "dev": "path" must be a block',
        ),
        (
            'path "a" "b" { capabilities = ["read"] }',
            'failed to parse policy "dev": path "a": invalid key "b"',
        ),
        (
            'path "x/{{identity.entity.idd}}" { capabilities = ["read"] }',
            'failed to parse policy "dev": path "x/{{identity.entity.idd}}": failed to validate '
            "policy templating: invalid template {{identity.entity.idd}}",
        ),
        (
            'path "x/{{identity.entity.id" { capabilities = ["read"] }',
            "unbalanced templating characters",
        ),
        ("", 'failed to parse policy "dev": policy text is empty'),
        ("  \n\t", 'failed to parse policy "dev": policy text is empty'),
        ("[1, 2]", 'failed to parse policy "dev": line 1, column 1: unexpected LEFTBRACKET'),
        ('"just a string"', 'failed to parse policy "dev": '),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(InvalidRequestError) as info:
        parse_policy("dev", text)
    assert message in str(info.value)
    assert info.value.status == 400


def test_broken_hcl_reports_the_location() -> None:
    text = 'path "a" {\n  capabilities = ["read"\n}\n'
    with pytest.raises(
        InvalidRequestError, match=r'policy "dev": line 3, column 1: unexpected RIGHTBRACE'
    ):
        parse_policy("dev", text)


def test_unterminated_string_reports_the_location() -> None:
    with pytest.raises(InvalidRequestError, match=re.escape("line 2, column 12: EOF before")):
        parse_policy("dev", 'path "a" {}\npath "b { }')


def test_unexpected_end_of_input_reports_the_line() -> None:
    with pytest.raises(InvalidRequestError, match="line 3: Unexpected end of file"):
        parse_policy("dev", 'path "a" {\n  capabilities = ["read"]\n')


def test_broken_json_reports_the_location() -> None:
    with pytest.raises(InvalidRequestError, match=r"invalid JSON: .*line 1 column \d+"):
        parse_policy("dev", '{"path": {"a": {"capabilities": ["read"],}}}')


def test_json_top_level_must_be_an_object() -> None:
    with pytest.raises(InvalidRequestError, match='"path" must be a block'):
        parse_policy("dev", '{"path": "secret/*"}')
