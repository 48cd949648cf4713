"""The replicated command format: explicit JSON, versioned, strictly decoded."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from consensus.commands import (
    COMMAND_VERSION,
    MAX_COMMAND_BYTES,
    Applied,
    Batch,
    Command,
    CommandError,
    MemberChange,
    Mismatch,
    Rejected,
    Restore,
    Txn,
    _decode_exact,  # the reference the fast path must match
    _decode_op,
    _expect,
    _Inexact,
    decode_command,
    decode_result,
    encode_batch,
    encode_command,
    encode_result,
    is_canonical,
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


# -- own commands applied from the object (is_canonical) --------------------------------

_KEYS = st.text(st.characters(codec=None), max_size=10)
_EXPECTS = st.none() | st.booleans() | st.integers(min_value=-3, max_value=2**70)
_VALUES = st.binary(max_size=24) | st.binary(max_size=8).map(bytearray)
_OPS = st.one_of(
    st.builds(Put, _KEYS, _VALUES, _EXPECTS),
    st.builds(Delete, _KEYS, _EXPECTS),
    st.builds(Check, _KEYS, _EXPECTS),
)
_TXNS = st.builds(
    Txn, st.text(max_size=8), st.lists(_OPS, max_size=4).map(tuple) | st.lists(_OPS, max_size=2)
)
_COMMANDS = st.one_of(
    _TXNS,
    st.builds(
        Restore,
        st.text(max_size=8),
        st.lists(st.tuples(_KEYS, _VALUES), max_size=3).map(tuple),
    ),
    st.builds(MemberChange, st.text(max_size=8), _KEYS, st.none() | _KEYS),
)


def _typed(value: object) -> object:
    """``value`` with every type spelled out, so equal-but-different types differ."""
    if isinstance(value, tuple | list):
        return (type(value).__name__, tuple(_typed(item) for item in value))
    if hasattr(value, "__slots__") and not isinstance(value, str | bytes):
        fields = tuple(_typed(getattr(value, name)) for name in value.__slots__)
        return (type(value).__name__, fields)
    return (type(value).__name__, value)


@settings(max_examples=500, deadline=None)
@given(_COMMANDS)
def test_a_canonical_command_decodes_back_to_exactly_itself(command: Command) -> None:
    """A node applies its own entries from the objects it encoded (no decode), so
    whatever ``is_canonical`` accepts must decode to the same values and types
    on every other replica; what it refuses is simply decoded."""
    try:
        blob = encode_command(command)
    except (CommandError, TypeError, ValueError):
        return
    if not is_canonical(command):
        return
    assert _typed(decode_command(blob)) == _typed(command)


@settings(max_examples=300, deadline=None)
@given(st.lists(_TXNS, min_size=2, max_size=4))
def test_a_batch_of_canonical_commands_decodes_back_to_exactly_them(txns: list[Txn]) -> None:
    txns = [t for t in txns if is_canonical(t)]
    if len(txns) < 2:
        return
    blob = encode_batch([encode_command(t) for t in txns])
    assert _typed(decode_command(blob)) == _typed(Batch(tuple(txns)))


def test_is_canonical_refuses_what_would_not_decode_back() -> None:
    assert is_canonical(Txn("i", (Put("k", b"v"), Delete("d", 3), Check("c", 0))))
    assert not is_canonical(Txn("i", (Put("k", bytearray(b"v")),)))
    assert not is_canonical(Txn("i", (Put("k", b"v", True),)))
    assert not is_canonical(Txn("i", (Delete("k", -1),)))
    assert not is_canonical(Txn("i", [Put("k", b"v")]))  # type: ignore[arg-type]
    assert not is_canonical(Txn("i", (Check("k", None),)))  # type: ignore[arg-type]


# -- the fast decoding is the exact one ---------------------------------------------------

_NUMBERS = st.one_of(
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([2**64 - 1, 2**64, -(2**63) - 1, 1.0, 2.0, -0.0]),
)
_LEAVES = st.one_of(
    st.none(), st.booleans(), _NUMBERS, st.text(st.characters(codec=None), max_size=6)
)
_OP_OBJECTS = st.fixed_dictionaries(
    {"op": st.sampled_from(["put", "delete", "check", "nope"]), "key": _LEAVES | _KEYS},
    optional={"value": _LEAVES | st.binary(max_size=6).map(lambda b: base64.b64encode(b).decode()),
              "expect": _LEAVES},
)  # fmt: skip
_BODIES = st.fixed_dictionaries(
    {"v": st.sampled_from([1, 2, 1.0, 2**64, "1"]) | _NUMBERS, "id": _LEAVES},
    optional={
        "ops": st.lists(_OP_OBJECTS, max_size=3) | _LEAVES,
        "restore": st.lists(st.lists(_LEAVES, max_size=3), max_size=2),
        "member": st.fixed_dictionaries({"node_id": _LEAVES}, optional={"address": _LEAVES}),
    },
)
_EDGE_NUMBERS = st.sampled_from(
    [0, 5, 2**63 - 1, 2**63, 2**64 - 1, 2**64, 2**70, -1, 1.0, 5.0, 0.5]
)
_WELL_FORMED = st.builds(
    lambda version, kind, expect: {
        "v": version, "id": "x",
        "ops": [{"op": kind, "key": "k", "value": "AA==", "expect": expect}],
    },
    st.sampled_from([1, 1.0, 2**64 + 1]) | _EDGE_NUMBERS,
    st.sampled_from(["put", "delete", "check"]),
    _EDGE_NUMBERS | _NUMBERS | st.none(),
)  # fmt: skip
_BLOBS = st.one_of(
    _WELL_FORMED.map(lambda body: json.dumps(body).encode()),
    st.lists(_WELL_FORMED, min_size=1, max_size=3).map(
        lambda inner: json.dumps({"v": 2, "batch": inner}).encode()
    ),
    _BODIES.map(lambda body: json.dumps(body).encode()),
    st.lists(_BODIES, max_size=3).map(lambda inner: json.dumps({"v": 2, "batch": inner}).encode()),
    st.binary(max_size=40),
    st.sampled_from(
        [b'{"v":1,"id":"a","ops":[],"v":2}', b'{"v":1e400}', b"NaN", b"\xef\xbb\xbf{}"]
    ),
)


def _outcome(decode: Any, blob: bytes) -> object:
    try:
        return _typed(decode(blob))
    except CommandError as exc:
        return ("CommandError", str(exc))


@settings(max_examples=1500, deadline=None)
@given(_BLOBS)
def test_decoding_with_orjson_first_is_the_exact_decoding(blob: bytes) -> None:
    """Every replica must read an entry alike, whatever the version: the fast path
    (orjson, falling back where an integer would be inexact) gives exactly what
    the exact parser gives, values, types and error messages."""
    assert _outcome(decode_command, blob) == _outcome(_decode_exact, blob)


# -- the inline "put" path is the full one ------------------------------------------------


def _reference_decode_op(raw: object, exact: bool) -> object:
    """``_decode_op`` as it was before its inline path for puts (issue 16)."""
    if not isinstance(raw, dict):
        raise CommandError("op must be an object")
    kind = raw.get("op")
    key = raw.get("key")
    if not isinstance(key, str):
        raise CommandError("key must be a string")
    if kind == "put":
        expect = _expect(raw.get("expect"), required=False, exact=exact)
        value = raw.get("value")
        if not isinstance(value, str):
            raise CommandError("value must be a base64 string")
        try:
            return Put(key, base64.b64decode(value.encode("ascii"), validate=True), expect)
        except (binascii.Error, UnicodeEncodeError) as exc:
            raise CommandError("value is not valid base64") from exc
    return _decode_op(raw, exact)  # other kinds did not change


_B64ISH = st.text(st.sampled_from("AQz09+/=\n é\x00"), max_size=12)
_VALID_B64 = st.binary(max_size=9).map(lambda b: base64.b64encode(b).decode())
_PUTS = st.fixed_dictionaries(
    {"op": st.just("put")},
    optional={
        "key": _LEAVES | _KEYS,
        "value": _LEAVES | _B64ISH | _VALID_B64,
        "expect": _LEAVES | _EDGE_NUMBERS | st.just(True),
    },
)  # fmt: skip


def _op_outcome(decode: Any, raw: object, exact: bool) -> object:
    try:
        return _typed(decode(raw, exact))
    except CommandError as exc:
        return ("CommandError", str(exc))
    except _Inexact:
        return ("_Inexact",)


@settings(max_examples=1500, deadline=None)
@given(_PUTS | _OP_OBJECTS | _LEAVES, st.booleans())
def test_the_inline_put_path_decodes_as_the_full_one(raw: object, exact: bool) -> None:
    assert _op_outcome(_decode_op, raw, exact) == _op_outcome(_reference_decode_op, raw, exact)
