"""Typed request fields: durations, ints, bools and lists, as the reference accepts them."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from node.framework.fields import (
    MAX_DURATION_SECONDS,
    Field,
    FieldData,
    FieldType,
    convert,
    parse_duration,
)
from sdk.errors import InvalidRequestError

# -- parse_duration -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("1h30m", 5400),
        ("10s", 10),
        ("768h", 768 * 3600),
        ("1.5h", 5400),
        ("90m", 5400),
        ("1m30s", 90),
        ("2d", 172800),
        ("1d12h", 129600),
        ("1500ms", 1),
        ("999ms", 0),
        ("0s", 0),
        (" 45s ", 45),
        ("-30s", -30),
        (300, 300),
        (0, 0),
        ("300", 300),
        ("  300 ", 300),
        ("-5", -5),
        (60.0, 60),
    ],
)
def test_parse_duration_accepts(value: Any, seconds: int) -> None:
    result = parse_duration(value)

    assert result == seconds
    assert type(result) is int


@pytest.mark.parametrize(
    "value",
    [
        "abc",
        "5x",
        "",
        "   ",
        "h",
        "1h 30m",
        "1.5",
        "10s5",
        "s10",
        "1h-30m",
        "5 s",
        "1e3s",
        1.5,
        True,
        False,
        None,
        [],
        {"s": 1},
    ],
)
def test_parse_duration_rejects(value: Any) -> None:
    with pytest.raises(InvalidRequestError):
        parse_duration(value)


def test_parse_duration_error_names_the_field() -> None:
    with pytest.raises(InvalidRequestError, match="ttl"):
        parse_duration("soon", "ttl")


def test_duration_field_through_field_data() -> None:
    schema = {"ttl": Field(FieldType.DURATION), "max_ttl": Field(FieldType.DURATION, default=60)}

    data = FieldData(schema, {"ttl": "1h30m"})

    assert data.get("ttl") == 5400
    assert data.get("max_ttl") == 60
    with pytest.raises(InvalidRequestError, match="ttl"):
        FieldData(schema, {"ttl": True})


# -- scalar conversions -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(5, 5), (-3, -3), (0, 0), ("42", 42), (" 7 ", 7), ("-8", -8), (3.0, 3)],
)
def test_int_field_accepts(raw: Any, expected: int) -> None:
    value = FieldData({"n": Field(FieldType.INT)}, {"n": raw}).get("n")

    assert value == expected
    assert type(value) is int


@pytest.mark.parametrize("raw", ["abc", "1.5", "", "1e3", 2.5, True, False, [1], {"n": 1}])
def test_int_field_rejects(raw: Any) -> None:
    with pytest.raises(InvalidRequestError, match=r"^n: "):
        FieldData({"n": Field(FieldType.INT)}, {"n": raw})


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (True, True),
        (False, False),
        ("true", True),
        ("TRUE", True),
        ("t", True),
        ("1", True),
        ("false", False),
        ("False", False),
        ("f", False),
        ("0", False),
        ("", False),
        (1, True),
        (0, False),
    ],
)
def test_bool_field_accepts(raw: Any, expected: bool) -> None:
    value = FieldData({"b": Field(FieldType.BOOL)}, {"b": raw}).get("b")

    assert value is expected


@pytest.mark.parametrize("raw", ["yes", "no", "2", 2, -1, 1.0, [], {}])
def test_bool_field_rejects(raw: Any) -> None:
    with pytest.raises(InvalidRequestError):
        FieldData({"b": Field(FieldType.BOOL)}, {"b": raw})


@pytest.mark.parametrize(("raw", "expected"), [("text", "text"), (5, "5"), (1.5, "1.5")])
def test_string_field_accepts(raw: Any, expected: str) -> None:
    assert FieldData({"s": Field(FieldType.STRING)}, {"s": raw}).get("s") == expected


@pytest.mark.parametrize("raw", [True, ["a"], {"a": 1}])
def test_string_field_rejects(raw: Any) -> None:
    with pytest.raises(InvalidRequestError):
        FieldData({"s": Field(FieldType.STRING)}, {"s": raw})


def test_map_field() -> None:
    schema = {"m": Field(FieldType.MAP)}

    assert FieldData(schema, {"m": {"k": "v"}}).get("m") == {"k": "v"}
    with pytest.raises(InvalidRequestError):
        FieldData(schema, {"m": "k=v"})


# -- lists --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (["a", "b"], ["a", "b"]),
        ([" a ", "b"], [" a ", "b"]),
        ([], []),
        ("a,b", ["a,b"]),
        ("single", ["single"]),
    ],
)
def test_string_list_field(raw: Any, expected: list[str]) -> None:
    assert FieldData({"l": Field(FieldType.STRING_LIST)}, {"l": raw}).get("l") == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("a,b,c", ["a", "b", "c"]),
        ("a, b ,  c", ["a", "b", "c"]),
        ("a,,b,", ["a", "b"]),
        ("single", ["single"]),
        ("", []),
        ([" a ", "b"], ["a", "b"]),
        (["a,b"], ["a,b"]),
    ],
)
def test_comma_string_list_field(raw: Any, expected: list[str]) -> None:
    assert FieldData({"l": Field(FieldType.COMMA_STRING_LIST)}, {"l": raw}).get("l") == expected


@pytest.mark.parametrize("kind", [FieldType.STRING_LIST, FieldType.COMMA_STRING_LIST])
@pytest.mark.parametrize("raw", [[1, 2], ["a", None], 5, {"a": "b"}, True])
def test_string_lists_reject_non_strings(kind: FieldType, raw: Any) -> None:
    with pytest.raises(InvalidRequestError):
        FieldData({"l": Field(kind)}, {"l": raw})


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1,2,3", [1, 2, 3]),
        ("1, 2,,3", [1, 2, 3]),
        ([1, "2", 3.0], [1, 2, 3]),
        (7, [7]),
        ("7", [7]),
        ([], []),
    ],
)
def test_int_list_field(raw: Any, expected: list[int]) -> None:
    assert FieldData({"l": Field(FieldType.INT_LIST)}, {"l": raw}).get("l") == expected


@pytest.mark.parametrize("raw", ["1,x", ["1", "two"], [True], "1.5"])
def test_int_list_field_rejects(raw: Any) -> None:
    with pytest.raises(InvalidRequestError):
        FieldData({"l": Field(FieldType.INT_LIST)}, {"l": raw})


# -- FieldData bookkeeping ----------------------------------------------------------------


def test_defaults_given_and_unknown() -> None:
    schema = {
        "name": Field(FieldType.STRING, default="anon"),
        "count": Field(FieldType.INT, default=1),
        "flag": Field(FieldType.BOOL),
    }

    data = FieldData(schema, {"count": "3", "zeta": 1, "alpha": 2, "flag": None})

    assert data.get("count") == 3
    assert data.given("count")
    assert data.get("name") == "anon"
    assert not data.given("name")
    assert data.get("flag") is None
    assert not data.given("flag")  # an explicit null counts as not given
    assert data.unknown == ["alpha", "zeta"]


def test_required_field() -> None:
    schema = {"id": Field(FieldType.STRING, required=True)}

    assert FieldData(schema, {"id": "x"}).get("id") == "x"
    with pytest.raises(InvalidRequestError, match="id"):
        FieldData(schema, {})
    with pytest.raises(InvalidRequestError, match="id"):
        FieldData(schema, {"id": None})


def test_openapi_schema() -> None:
    field = Field(FieldType.DURATION, description="lease TTL", default="1h")

    assert field.openapi() == {
        "type": "string",
        "format": "duration",
        "description": "lease TTL",
        "default": "1h",
    }
    assert Field(FieldType.INT_LIST).openapi() == {
        "type": "array",
        "items": {"type": "integer", "minimum": -(2**63), "maximum": 2**63 - 1},
    }
    assert Field(FieldType.INT, minimum=0, maximum=5).openapi() == {
        "type": "integer",
        "minimum": 0,
        "maximum": 5,
    }


@pytest.mark.parametrize(
    ("field", "value"),
    [
        (Field(FieldType.INT), 1e300),
        (Field(FieldType.INT), 2**63),
        (Field(FieldType.INT), -(2**63) - 1),
        (Field(FieldType.INT, minimum=0), -1),
        (Field(FieldType.INT, maximum=10), "11"),
        (Field(FieldType.INT_LIST), [1, 2**64]),
        (Field(FieldType.DURATION), 1e300),
        (Field(FieldType.DURATION), "9" * 30 + "h"),
        (Field(FieldType.DURATION), "9" * 400 + "h"),
        (Field(FieldType.DURATION), -(2**40)),
    ],
)
def test_numbers_out_of_range_are_refused_naming_the_field(field: Field, value: object) -> None:
    with pytest.raises(InvalidRequestError, match=r"^num: ") as caught:
        convert(field, value, "num")
    assert len(str(caught.value)) < 200  # a huge input is not echoed whole


def test_the_bounds_themselves_are_accepted() -> None:
    assert convert(Field(FieldType.INT), 2**63 - 1, "n") == 2**63 - 1
    assert convert(Field(FieldType.INT), -(2**63), "n") == -(2**63)
    assert convert(Field(FieldType.DURATION), MAX_DURATION_SECONDS, "n") == MAX_DURATION_SECONDS
    assert parse_duration(f"{MAX_DURATION_SECONDS}s") == MAX_DURATION_SECONDS


@given(
    st.dictionaries(
        st.sampled_from(["s", "m", "n", "extra", "zz", "a"]),
        st.none() | st.text(max_size=4) | st.integers() | st.dictionaries(st.text(), st.text()),
        max_size=6,
    )
)
def test_fields_are_what_converting_each_given_one_gives(raw: dict[str, Any]) -> None:
    """The inlined string and object cases agree with ``convert``; unknown names
    are listed sorted."""
    schema = {
        "s": Field(FieldType.STRING),
        "m": Field(FieldType.MAP),
        "n": Field(FieldType.INT, default=7),
    }
    expected: dict[str, Any] = {}
    try:
        for name, field in schema.items():
            if raw.get(name) is not None:
                expected[name] = convert(field, raw[name], name)
    except InvalidRequestError:
        with pytest.raises(InvalidRequestError):
            FieldData(schema, raw)
        return
    data = FieldData(schema, raw)
    for name, field in schema.items():
        assert data.given(name) is (name in expected)
        assert data.get(name) == expected.get(name, field.default)
    assert data.unknown == sorted(set(raw) - set(schema))
