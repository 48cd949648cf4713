"""The provider origin rule and config validation of the idp method."""

from __future__ import annotations

from typing import Any

import pytest

from node.auth.common.token_settings import token_fields
from node.auth.idp.config import IdpConfig, config_fields, origin
from node.framework import FieldData
from sdk.errors import InvalidRequestError


def fields(**raw: Any) -> FieldData:
    return FieldData(config_fields(), raw)


@pytest.mark.parametrize(
    ("org", "base_url", "expected"),
    [
        ("acme", "", "https://acme.okta.com"),
        ("acme", "oktapreview.com", "https://acme.oktapreview.com"),
        ("dev-123", "idp.example.org:8443", "https://dev-123.idp.example.org:8443"),
        ("acme", "http://127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("acme", "https://idp.internal/", "https://idp.internal"),
        ("ignored", "https://idp.internal/tenant", "https://idp.internal/tenant"),
    ],
)
def test_origin(org: str, base_url: str, expected: str) -> None:
    assert origin(org, base_url) == expected
    assert IdpConfig(org_name=org, base_url=base_url).origin == expected


def test_update_keeps_unspecified_values() -> None:
    first = IdpConfig(org_name="").updated(fields(org_name="acme", api_token="t", token_ttl="1h"))
    assert (first.org_name, first.api_token, first.token.ttl) == ("acme", "t", 3600)
    second = first.updated(fields(bypass_idp_mfa=True))
    assert (second.org_name, second.api_token, second.token.ttl) == ("acme", "t", 3600)
    assert second.bypass_idp_mfa
    assert second.warnings()
    assert not first.warnings()


def test_public_omits_the_api_token_and_shows_defaults() -> None:
    shown = IdpConfig(org_name="").updated(fields(org_name="acme", api_token="secret")).public()
    assert "api_token" not in shown
    assert "secret" not in repr(shown)
    assert shown == {
        "org_name": "acme",
        "base_url": "",
        "bypass_idp_mfa": False,
        "token_bound_cidrs": [],
        "token_explicit_max_ttl": 0,
        "token_max_ttl": 0,
        "token_no_default_policy": False,
        "token_num_uses": 0,
        "token_period": 0,
        "token_policies": [],
        "token_ttl": 0,
        "token_type": "default",
    }
    assert set(shown) - {"org_name", "base_url", "bypass_idp_mfa"} == set(token_fields())


def test_json_round_trip() -> None:
    config = IdpConfig(org_name="").updated(
        fields(org_name="acme", api_token="t", token_policies="a,b", token_bound_cidrs="10.0.0.0/8")
    )
    assert IdpConfig.from_json(config.to_json()) == config


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ({}, "org_name is missing"),
        ({"org_name": "  "}, "org_name is missing"),
        ({"org_name": "acme/evil"}, "invalid org_name"),
        ({"org_name": "a@b"}, "invalid org_name"),
        ({"org_name": "acme", "base_url": "evil.com/path"}, "base_url"),
        ({"org_name": "acme", "base_url": "ftp://x.org"}, "base_url"),
        ({"org_name": "acme", "base_url": "https://user:pw@x.org"}, "base_url"),
        ({"org_name": "acme", "base_url": "https://x.org?a=1"}, "base_url"),
        ({"org_name": "acme", "base_url": "https://x.org:99999"}, "base_url"),
        ({"org_name": "acme", "base_url": "https://"}, "base_url"),
        ({"org_name": "acme", "token_type": "odd"}, "token_type"),
        ({"org_name": "acme", "token_bound_cidrs": "nope"}, "CIDR"),
    ],
)
def test_invalid_configs_are_refused(raw: dict[str, Any], fragment: str) -> None:
    with pytest.raises(InvalidRequestError, match=fragment):
        IdpConfig(org_name="").updated(fields(**raw))


def test_a_verbatim_origin_accepts_any_org_name() -> None:
    config = IdpConfig(org_name="").updated(
        fields(org_name="My Org", base_url="http://127.0.0.1:1")
    )
    assert config.origin == "http://127.0.0.1:1"
