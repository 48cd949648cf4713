"""The shared JSON codec: orjson's speed, the standard library's results."""

from __future__ import annotations

import dataclasses
import datetime
import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdk import jsoncodec


@pytest.mark.parametrize(
    "value",
    [
        {"a": 1, "b": [1.5, None, True], "c": {"d": "é ✓"}},
        {"big": 2**70, "neg": -(2**65)},
        {"surrogate": "\ud800"},
        {1: "int key"},
        [],
        "text",
    ],
)
def test_dumps_reads_back_as_the_standard_library_reads_it(value: object) -> None:
    encoded = jsoncodec.dumps(value)
    assert json.loads(encoded) == json.loads(json.dumps(value))


def test_dumps_is_compact() -> None:
    assert jsoncodec.dumps({"a": [1, 2], "b": "c"}) == b'{"a":[1,2],"b":"c"}'


@pytest.mark.parametrize("value", [object(), {1, 2}])
def test_dumps_refuses_what_json_cannot_hold(value: object) -> None:
    with pytest.raises(TypeError):
        jsoncodec.dumps(value)


def test_dumps_refuses_dataclasses_and_datetimes_as_json_does() -> None:
    @dataclasses.dataclass
    class Point:
        x: int

    for value in (Point(1), datetime.datetime(2026, 1, 1)):
        with pytest.raises(TypeError):
            jsoncodec.dumps({"v": value})


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": 123456789012345678901234567890}',
        b'{"a": "\\ud800"}',
        b'{"a": [1, {"b": null}]}',
        '{"a": "x"}'.encode("utf-16"),
    ],
)
def test_loads_matches_the_standard_library(raw: bytes) -> None:
    assert jsoncodec.loads(raw) == json.loads(raw)


def test_loads_keeps_integers_beyond_64_bits_exact() -> None:
    assert jsoncodec.loads(b'{"n": 18446744073709551617}') == {"n": 18446744073709551617}


@pytest.mark.parametrize("raw", [b'{"a": 1e400}', b'{"a": -1e99999}', b'{"a": NaN}', b"[Infinity]"])
def test_loads_refuses_numbers_json_cannot_write_back(raw: bytes) -> None:
    with pytest.raises(ValueError):
        jsoncodec.loads(raw)


def test_loads_refuses_malformed_input() -> None:
    with pytest.raises(ValueError):
        jsoncodec.loads(b'{"a": ')


_DIGITS_OR_NOT = st.lists(
    st.one_of(
        st.sampled_from([b"0", b"5", b"9", b"/", b":", b"a", b"\xb9", b"\x00"]),
        st.binary(max_size=3),
    ),
    max_size=60,
).map(b"".join)


@given(st.one_of(st.binary(max_size=80), _DIGITS_OR_NOT))
def test_the_digit_run_check_answers_as_the_regex(raw: bytes) -> None:
    expected = re.search(rb"[0-9]{19}", raw) is not None
    assert jsoncodec.has_long_digit_run(raw) is expected


@pytest.mark.parametrize("length", [0, 18, 19, 20])
def test_the_digit_run_check_at_the_bound(length: int) -> None:
    raw = b'{"n":' + b"7" * length + b"}"
    assert jsoncodec.has_long_digit_run(raw) is (length >= 19)
    assert jsoncodec.has_long_digit_run(b"1" * length) is (length >= 19)
