"""The replicated command format: explicit JSON, versioned, strictly decoded."""

from __future__ import annotations

import json

import pytest

from consensus.commands import (
    COMMAND_VERSION,
    MAX_COMMAND_BYTES,
    Applied,
    CommandError,
    MemberChange,
    Mismatch,
    Rejected,
    Restore,
    Txn,
    decode_command,
    decode_result,
    encode_command,
    encode_result,
    new_command_id,
)
from sdk.physical import Check, Delete, Put


def test_txn_round_trips_every_op_and_any_bytes() -> None:
    command = Txn(
        new_command_id(),
        (
            Put("a/b", bytes(range(256)), expect=None),
            Put("new", b"", expect=0),
            Delete("gone", expect=7),
            Delete("maybe"),
            Check("guard", 3),
            Put("ünïcødé/🔑", b"\x00\xff"),
        ),
    )

    assert decode_command(encode_command(command)) == command


def test_restore_and_member_round_trip() -> None:
    restore = Restore(new_command_id(), (("a", b"1"), ("b/c", b"\x00")))
    member = MemberChange(new_command_id(), "node-4", "10.0.0.4:8201")
    forget = MemberChange(new_command_id(), "node-4", None)

    for command in (restore, member, forget):
        assert decode_command(encode_command(command)) == command


def test_encoding_is_plain_json_with_base64_values() -> None:
    blob = encode_command(Txn("id-1", (Put("k", b"ciphertext", expect=2),)))

    assert json.loads(blob) == {
        "v": COMMAND_VERSION,
        "id": "id-1",
        "ops": [{"op": "put", "key": "k", "value": "Y2lwaGVydGV4dA==", "expect": 2}],
    }
    assert b"ciphertext" not in blob


def test_a_lone_surrogate_key_still_round_trips() -> None:
    command = Txn("id", (Put("bad\udcffkey", b"v"),))

    assert decode_command(encode_command(command)) == command


@pytest.mark.parametrize("version", [0, 2, "1", None])
def test_other_versions_are_rejected(version: object) -> None:
    body = {"v": version, "id": "x", "ops": []}

    with pytest.raises(CommandError, match="version"):
        decode_command(json.dumps(body).encode())


@pytest.mark.parametrize(
    "body",
    [
        {"v": 1, "ops": []},
        {"v": 1, "id": 5, "ops": []},
        {"v": 1, "id": "x"},
        {"v": 1, "id": "x", "ops": [], "restore": []},
        {"v": 1, "id": "x", "ops": {}},
        {"v": 1, "id": "x", "ops": [{"op": "rename", "key": "a"}]},
        {"v": 1, "id": "x", "ops": [{"op": "put", "key": "a", "value": "!!"}]},
        {"v": 1, "id": "x", "ops": [{"op": "put", "key": "a", "value": "", "expect": -1}]},
        {"v": 1, "id": "x", "ops": [{"op": "put", "key": "a", "value": "", "expect": True}]},
        {"v": 1, "id": "x", "ops": [{"op": "check", "key": "a", "expect": None}]},
        {"v": 1, "id": "x", "ops": [{"op": "delete", "key": 3}]},
        {"v": 1, "id": "x", "restore": [["a"]]},
        {"v": 1, "id": "x", "member": "node"},
        [1, 2, 3],
    ],
)
def test_malformed_commands_are_rejected(body: object) -> None:
    with pytest.raises(CommandError):
        decode_command(json.dumps(body).encode())


def test_non_json_is_rejected_without_unpickling() -> None:
    with pytest.raises(CommandError):
        decode_command(b"\x80\x02cos\nsystem\nq\x00.")


def test_oversized_commands_are_refused_at_encoding() -> None:
    with pytest.raises(CommandError, match="exceeds"):
        encode_command(Txn("x", (Put("k", b"\x00" * MAX_COMMAND_BYTES),)))


@pytest.mark.parametrize(
    "result", [Applied(42), Mismatch("a/b", 3, 0), Rejected("invalid storage key '/'")]
)
def test_results_round_trip(result: Applied | Mismatch | Rejected) -> None:
    assert decode_result(encode_result(result)) == result


def test_malformed_results_are_errors() -> None:
    for blob in (b"[]", b'{"rev": "1"}', b'{"mismatch": [1, 2]}', b"nope"):
        with pytest.raises(CommandError):
            decode_result(blob)
