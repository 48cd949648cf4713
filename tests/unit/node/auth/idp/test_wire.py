"""Parsing of the provider's authn, error and group answers, and Link headers."""

from __future__ import annotations

import json
from typing import Any

import pytest

from node.auth.idp.wire import (
    TOTP_FACTOR,
    MalformedReply,
    next_link,
    parse_authn,
    parse_error,
    parse_groups,
    same_origin,
)


def dumps(value: Any) -> bytes:
    return json.dumps(value).encode()


def test_success() -> None:
    result = parse_authn(
        dumps(
            {
                "status": "SUCCESS",
                "sessionToken": "x",
                "_embedded": {"user": {"id": "00u1", "profile": {"login": "a"}}},
            }
        )
    )
    assert (result.status, result.user_id, result.state_token, result.factors) == (
        "SUCCESS",
        "00u1",
        "",
        [],
    )


def test_mfa_required_picks_the_totp_factor_preferring_the_providers_own() -> None:
    result = parse_authn(
        dumps(
            {
                "status": "MFA_REQUIRED",
                "stateToken": "st",
                "_embedded": {
                    "user": {"id": "00u1"},
                    "factors": [
                        {"id": "f1", "factorType": "push", "provider": "OKTA"},
                        {"id": "f2", "factorType": TOTP_FACTOR, "provider": "GOOGLE"},
                        {"id": "f3", "factorType": TOTP_FACTOR, "provider": "OKTA"},
                    ],
                },
            }
        )
    )
    factor = result.totp_factor()
    assert factor is not None and factor.id == "f3"
    assert result.state_token == "st"
    no_totp = parse_authn(
        dumps({"status": "MFA_REQUIRED", "_embedded": {"factors": [{"factorType": "push"}]}})
    )
    assert no_totp.totp_factor() is None


def test_minimal_statuses_parse() -> None:
    assert parse_authn(b'{"status": "LOCKED_OUT", "expiresAt": null}').status == "LOCKED_OUT"
    challenge = parse_authn(b'{"status": "MFA_CHALLENGE", "factorResult": "REJECTED"}')
    assert challenge.factor_result == "REJECTED"


@pytest.mark.parametrize(
    "body",
    [
        b"<html>oops</html>",
        b"\xff\xfe",
        b"",
        b"[]",
        b'"SUCCESS"',
        b"{}",
        b'{"status": 5}',
        b'{"status": "SUCCESS", "_embedded": []}',
        b'{"status": "SUCCESS", "_embedded": {"user": "me"}}',
        b'{"status": "SUCCESS", "_embedded": {"user": {"id": 7}}}',
        b'{"status": "MFA_REQUIRED", "_embedded": {"factors": {}}}',
        b'{"status": "MFA_REQUIRED", "_embedded": {"factors": ["x"]}}',
    ],
)
def test_malformed_authn_answers(body: bytes) -> None:
    with pytest.raises(MalformedReply):
        parse_authn(body)


def test_error_bodies() -> None:
    error = parse_error(
        dumps({"errorCode": "E0000004", "errorSummary": "Authentication failed", "errorCauses": []})
    )
    assert error is not None
    assert error.describe() == "Authentication failed (code=E0000004)"
    with_cause = parse_error(
        dumps(
            {
                "errorCode": "E0000068",
                "errorSummary": "Invalid Passcode/Answer",
                "errorCauses": [{"errorSummary": "Your passcode doesn't match"}, "junk"],
            }
        )
    )
    assert with_cause is not None
    assert with_cause.describe() == (
        "Invalid Passcode/Answer (Your passcode doesn't match) (code=E0000068)"
    )
    for junk in (b"nope", b"[]", b'{"errorCode": 4}', b'{"errorSummary": "x"}', b'{"a": 1}'):
        assert parse_error(junk) is None


def test_groups() -> None:
    body = dumps(
        [
            {"id": "00g1", "profile": {"name": "Everyone"}},
            {"id": "00g2", "profile": {"name": "Admins", "description": "x"}},
        ]
    )
    assert parse_groups(body) == ["Everyone", "Admins"]
    assert parse_groups(b"[]") == []
    for junk in (b"{}", b"nope", b"[1]", b'[{"profile": {}}]', b'[{"profile": "x"}]'):
        with pytest.raises(MalformedReply):
            parse_groups(junk)


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("", None),
        ('<https://a.okta.com/x?limit=2>; rel="self"', None),
        (
            '<https://a.okta.com/x?limit=2>; rel="self", '
            '<https://a.okta.com/x?after=2&limit=2>; rel="next"',
            "https://a.okta.com/x?after=2&limit=2",
        ),
        ("</x?after=5>; rel=next", "https://a.okta.com/x?after=5"),
        ('<https://a.okta.com/n>; type="a"; rel="prev next"', "https://a.okta.com/n"),
        ('<https://a.okta.com/n>; REL="Next"', "https://a.okta.com/n"),
    ],
)
def test_next_link(header: str, expected: str | None) -> None:
    assert next_link(header, "https://a.okta.com/x") == expected


def test_same_origin() -> None:
    assert same_origin("https://a.okta.com/x?y", "https://a.okta.com")
    assert same_origin("https://a.okta.com:443/x", "https://a.okta.com")
    assert same_origin("http://127.0.0.1:81/x", "http://127.0.0.1:81")
    assert not same_origin("http://a.okta.com/x", "https://a.okta.com")
    assert not same_origin("https://evil.com/x", "https://a.okta.com")
    assert not same_origin("https://a.okta.com.evil.com/x", "https://a.okta.com")
    assert not same_origin("http://127.0.0.1:82/x", "http://127.0.0.1:81")
    assert not same_origin("http://127.0.0.1:bad/x", "http://127.0.0.1:81")
