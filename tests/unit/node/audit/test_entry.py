"""The entry's hashing rules and options, on entries built from real request values."""

from __future__ import annotations

import hashlib
import hmac
import xml.etree.ElementTree as ET
from dataclasses import replace

from node.audit.entry import AuditInput, request_entry, response_entry
from node.audit.formats import render
from node.audit.options import FormatOptions
from node.audit.salt import Salt
from node.logical.request import Operation, Request
from node.logical.response import Auth, Response, WrapInfo
from node.tokens.entry import TokenEntry

SALT = Salt("pepper")
TOKEN = TokenEntry(
    key="k",
    accessor="acc-1",
    policies=["default", "dev"],
    display_name="userpass-alice",
    creation_time=1_700_000_000.0,
    meta={"username": "alice"},
    entity_id="ent-1",
    creation_ttl=3600,
)
REQUEST = Request(
    Operation.LIST,
    "secret/metadata/",
    {"password": "hunter2", "n": 3, "nested": [{"x": "y"}, True]},
    id="req-1",
    client_token="s.token",
    remote_addr="10.0.0.1",
    wrap_ttl=60,
)
AUDIT = AuditInput(
    REQUEST,
    "secret/metadata/",
    "root",
    "",
    operation="list",
    token=TOKEN,
    identity_policies=["group-pol"],
    mount_point="secret/",
    mount_type="kv",
    mount_accessor="kv_1",
)


def test_salt_is_the_reference_identified_hmac() -> None:
    expected = hmac.new(b"pepper", b"hunter2", hashlib.sha256).hexdigest()
    assert SALT.hmac("hunter2") == "hmac-sha256:" + expected
    assert Salt("other").hmac("hunter2") != SALT.hmac("hunter2")
    assert "pepper" not in repr(SALT)


def test_request_entry_layout_and_hashing() -> None:
    entry = request_entry(AUDIT, SALT.hmac, FormatOptions())
    assert list(entry) == ["time", "type", "auth", "request"]
    assert entry["time"].endswith("Z") and "T" in entry["time"]
    assert entry["auth"] == {
        "client_token": SALT.hmac("s.token"),
        "accessor": SALT.hmac("acc-1"),
        "display_name": "userpass-alice",
        "policies": ["default", "dev", "group-pol"],
        "token_policies": ["default", "dev"],
        "identity_policies": ["group-pol"],
        "metadata": {"username": "alice"},
        "entity_id": "ent-1",
        "token_type": "service",
        "token_ttl": 3600,
        "token_issue_time": "2023-11-14T22:13:20Z",
    }
    assert entry["request"] == {
        "id": "req-1",
        "operation": "list",
        "mount_point": "secret/",
        "mount_type": "kv",
        "mount_accessor": "kv_1",
        "client_token": SALT.hmac("s.token"),
        "client_token_accessor": SALT.hmac("acc-1"),
        "namespace": {"id": "root"},
        "path": "secret/metadata/",
        # Values hashed, keys and non-strings kept.
        "data": {"password": SALT.hmac("hunter2"), "n": 3, "nested": [{"x": SALT.hmac("y")}, True]},
        "remote_address": "10.0.0.1",
        "wrap_ttl": 60,
    }
    assert REQUEST.data["password"] == "hunter2"  # the request itself is untouched


def test_hmac_accessor_false_and_log_raw() -> None:
    plain_accessor = request_entry(AUDIT, SALT.hmac, FormatOptions(hmac_accessor=False))
    assert plain_accessor["auth"]["accessor"] == "acc-1"
    assert plain_accessor["request"]["client_token_accessor"] == "acc-1"
    assert plain_accessor["auth"]["client_token"] == SALT.hmac("s.token")
    raw = request_entry(AUDIT, SALT.hmac, FormatOptions(log_raw=True))
    assert raw["auth"]["client_token"] == "s.token"
    assert raw["request"]["data"]["password"] == "hunter2"


def test_response_entry_hashes_new_tokens_and_wrapping_and_elides_lists() -> None:
    response = Response(
        data={"keys": ["a", "b", "c"], "key_info": {"a": {}}},
        auth=Auth("s.new", "acc-new", ["default"], ["default"], metadata={"username": "bob"}),
        wrap_info=WrapInfo("s.wrap", "acc-wrap", 300, "2024-01-01T00:00:00Z", "secret/x", "acc-in"),
        lease_id="lease/1",
        warnings=["careful"],
    )
    entry = response_entry(AUDIT, response, SALT.hmac, FormatOptions(elide_list_responses=True))
    assert list(entry) == ["time", "type", "auth", "request", "response"]
    body = entry["response"]
    assert body["auth"]["client_token"] == SALT.hmac("s.new")
    assert body["auth"]["accessor"] == SALT.hmac("acc-new")
    assert body["auth"]["metadata"] == {"username": "bob"}
    assert body["data"] == {"keys": 3, "key_info": 1}
    assert body["wrap_info"] == {
        "ttl": 300,
        "token": SALT.hmac("s.wrap"),
        "accessor": SALT.hmac("acc-wrap"),
        "creation_time": "2024-01-01T00:00:00Z",
        "creation_path": "secret/x",
        "wrapped_accessor": SALT.hmac("acc-in"),
    }
    assert body["secret"] == {"lease_id": "lease/1"}
    assert body["warnings"] == ["careful"]
    kept = response_entry(AUDIT, response, SALT.hmac, FormatOptions())
    assert kept["response"]["data"]["keys"] == [SALT.hmac(k) for k in "abc"]


def test_a_denied_request_without_a_token_has_an_empty_auth_and_its_error() -> None:
    anonymous = AuditInput(
        Request(Operation.READ, "secret/data/x", client_token="bad"), "secret/data/x"
    )
    entry = response_entry(anonymous, None, SALT.hmac, FormatOptions(), "permission denied")
    assert entry["auth"] == {}
    assert entry["response"] == {}
    assert entry["error"] == "permission denied"
    assert entry["request"]["client_token"] == SALT.hmac("bad")


def test_prefix_and_jsonx() -> None:
    entry = request_entry(AUDIT, SALT.hmac, FormatOptions())
    line = render(entry, "json", "coffer-audit: ")
    assert line.startswith(b"coffer-audit: {") and line.endswith(b"}\n")
    xml = render(entry, "jsonx")
    assert xml.count(b"\n") == 1
    root = ET.fromstring(xml.decode().strip())
    ns = "{http://www.ibm.com/xmlns/prod/2009/jsonx}"
    assert root.tag == ns + "object"
    fields = {child.get("name"): child for child in root}
    assert fields["type"].text == "request"
    request = {child.get("name"): child for child in fields["request"]}
    assert request["wrap_ttl"].tag == ns + "number" and request["wrap_ttl"].text == "60"
    data = {child.get("name"): child for child in request["data"]}
    assert data["password"].text == SALT.hmac("hunter2")
    assert data["nested"].tag == ns + "array"


def test_a_request_relayed_by_a_standby_names_it_and_its_answer_says_forwarded() -> None:
    relayed = AuditInput(
        replace(REQUEST, forwarded_from="10.0.0.2:51234"), "secret/metadata/", operation="list"
    )
    request = request_entry(relayed, SALT.hmac, FormatOptions())
    assert list(request) == ["time", "type", "auth", "request", "forwarded_from"]
    assert request["forwarded_from"] == "10.0.0.2:51234"
    answer = response_entry(relayed, Response(data={"keys": ["a"]}), SALT.hmac, FormatOptions())
    assert answer["forwarded"] is True
    assert "forwarded_from" not in answer
    # A request a client sent here directly carries neither mark.
    assert "forwarded_from" not in request_entry(AUDIT, SALT.hmac, FormatOptions())
    assert "forwarded" not in response_entry(AUDIT, None, SALT.hmac, FormatOptions())


def test_a_request_this_node_handed_on_says_forwarded_and_why() -> None:
    handed_on = replace(AUDIT, forwarded=True)
    entry = response_entry(handed_on, None, SALT.hmac, FormatOptions(), "must go to the active")
    assert list(entry) == ["time", "type", "auth", "request", "response", "error", "forwarded"]
    assert entry["forwarded"] is True
    assert "forwarded_from" not in request_entry(handed_on, SALT.hmac, FormatOptions())
