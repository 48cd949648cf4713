"""Table formatting, Vault-style: the status table and logical responses."""

from __future__ import annotations

from typing import Any

import pytest

from cli.generate_root import status_rows
from cli.output import (
    MISSING,
    columns,
    field_text,
    format_value,
    grid,
    header_for_map,
    human_duration,
    pad_equal_signs,
    raw_field,
    secret_rows,
    table,
    ttl_value,
)
from cli.status import seal_status_rows

UNSEALED: dict[str, Any] = {
    "type": "shamir",
    "initialized": True,
    "sealed": False,
    "t": 3,
    "n": 5,
    "progress": 0,
    "nonce": "",
    "version": "0.1.0",
    "build_date": "2024-01-01T00:00:00Z",
    "migration": False,
    "cluster_name": "coffer-cluster-1",
    "cluster_id": "c0ffee",
    "recovery_seal": False,
    "storage_type": "raft",
}
SEALED = {**UNSEALED, "sealed": True, "progress": 1, "cluster_name": "", "cluster_id": ""}
LEADER = {"ha_enabled": True, "is_self": True, "leader_cluster_address": "https://n1:8201"}


def test_unsealed_status_table() -> None:
    assert table(seal_status_rows(UNSEALED, LEADER)) == "\n".join(
        [
            "Key             Value",
            "---             -----",
            "Seal Type       shamir",
            "Initialized     true",
            "Sealed          false",
            "Total Shares    5",
            "Threshold       3",
            "Version         0.1.0",
            "Build Date      2024-01-01T00:00:00Z",
            "Storage Type    raft",
            "Cluster Name    coffer-cluster-1",
            "Cluster ID      c0ffee",
            "HA Enabled      true",
            "HA Cluster      https://n1:8201",
            "HA Mode         active",
        ]
    )


def test_sealed_status_table_shows_progress_and_nonce() -> None:
    text = table(seal_status_rows(SEALED, {"ha_enabled": False}))
    lines = text.splitlines()
    assert "Unseal Progress    1/3" in lines
    assert "Unseal Nonce       n/a" in lines  # empty values print as n/a, as Vault
    assert "Sealed             true" in lines
    assert not any(line.startswith("Cluster") for line in lines)
    assert lines[-1] == "HA Enabled         false"


def test_status_without_leader_has_no_ha_rows() -> None:
    assert not any(k.startswith("HA") for k, _ in seal_status_rows(UNSEALED, None))


def test_standby_shows_active_node() -> None:
    leader = {"ha_enabled": True, "is_self": False, "leader_address": "https://n2:8200"}
    rows = dict(seal_status_rows(UNSEALED, leader))
    assert rows["HA Mode"] == "standby"
    assert rows["Active Node Address"] == "https://n2:8200"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (True, "true"),
        (None, "<nil>"),
        (3, "3"),
        (["a", 1], "[a 1]"),
        ({"b": 2, "a": [True]}, "map[a:[true] b:2]"),
    ],
)
def test_values_print_like_go(value: object, text: str) -> None:
    assert format_value(value) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (45, "45s"), (90, "1m30s"), (600, "10m"), (3601, "1h1s"), (2764800, "768h")],
)
def test_human_duration(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text


def test_secret_rows() -> None:
    rows = secret_rows({"lease_duration": 2764800, "data": {"b": "2", "a": "1"}})
    assert table(rows).splitlines() == [
        "Key                 Value",
        "---                 -----",
        "refresh_interval    768h",
        "a                   1",
        "b                   2",
    ]
    leased = dict(secret_rows({"lease_id": "x/1", "lease_duration": 60, "renewable": True}))
    assert leased == {"lease_id": "x/1", "lease_duration": "1m", "lease_renewable": True}


def test_generate_root_status_rows() -> None:
    text = columns(
        status_rows(
            {
                "nonce": "n-1",
                "started": True,
                "progress": 1,
                "required": 3,
                "complete": False,
                "otp": "abc",
                "otp_length": 28,
            }
        )
    )
    assert text.splitlines() == [
        "Nonce         n-1",
        "Started       true",
        "Progress      1/3",
        "Complete      false",
        "OTP           abc",
        "OTP Length    28",
    ]


def test_grid_aligns_any_number_of_columns() -> None:
    text = grid(("Path", "Type", "Description"), [["a/", "kv", ""], ["long/path/", "x", "d"]])
    assert text.splitlines() == [
        "Path          Type    Description",
        "----          ----    -----------",
        "a/            kv      n/a",
        "long/path/    x       d",
    ]


@pytest.mark.parametrize(
    ("title", "width", "text"),
    [
        ("Secret Path", 15, "= Secret Path ="),
        ("Secret Path", 16, "== Secret Path =="),  # odd counts round up
        ("Secret Path", 5, "== Secret Path =="),  # never fewer than two a side
    ],
)
def test_pad_equal_signs(title: str, width: int, text: str) -> None:
    assert pad_equal_signs(title, width) == text


def test_header_for_map_counts_nested_keys() -> None:
    assert header_for_map("Data", {"foo": "bar"}) == "=== Data ==="
    assert header_for_map("Data", {"a": {"longer_key": 1}}) == "======= Data ======="


@pytest.mark.parametrize(
    ("key", "value", "shown"),
    [
        ("ttl", 3600, "1h"),
        ("creation_ttl", 0, "0s"),
        ("period", 90.0, "1m30s"),
        ("token_period", 60, "1m"),
        ("ttl", "3600", "3600"),  # strings are left alone, as in Vault
        ("ttl", True, True),
        ("version", 3, 3),
    ],
)
def test_ttl_like_values(key: str, value: object, shown: object) -> None:
    assert ttl_value(key, value) == shown


def test_token_duration_of_a_root_token_is_infinite() -> None:
    rows = dict(secret_rows({"auth": {"client_token": "root", "lease_duration": 0}}))
    assert rows["token_duration"] == "∞"
    assert human_duration(-60) == "-1m"


def test_raw_field_lookup_order() -> None:
    secret: dict[str, object] = {
        "lease_duration": 60,
        "data": {"token": "from-data", "k": None},
        "auth": {"client_token": "from-auth", "accessor": "acc"},
        "request_id": "r",
    }
    assert raw_field(secret, "token") == "from-auth"
    assert raw_field(secret, "token_accessor") == "acc"
    assert raw_field(secret, "request_id") == "r"
    assert raw_field(secret, "k") is MISSING
    assert raw_field(secret, "auth") is MISSING
    wrapped = {"wrap_info": {"token": "w", "ttl": 30}, "data": None}
    assert raw_field(wrapped, "wrapping_token") == "w"
    assert raw_field(wrapped, "wrapping_token_ttl") == 30
    assert raw_field({"lease_duration": 60, "data": {}}, "refresh_interval") == 60
    assert field_text(["a", "b"], as_json=False) == "[a b]"
    assert field_text(["a", "b"], as_json=True) == '["a", "b"]'
    assert field_text("raw text", as_json=True) == "raw text"
