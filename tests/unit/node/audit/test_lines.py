"""The audit line parser: what the formatter writes reads back; anything else is refused cleanly."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from node.audit.entry import AuditInput, request_entry, response_entry
from node.audit.formats import render
from node.audit.lines import AuditLineError, parse_line, parse_log
from node.audit.options import FormatOptions
from node.audit.salt import Salt
from node.logical.request import Operation, Request
from node.logical.response import Response

_scalars = st.one_of(
    st.text(max_size=20),
    st.integers(min_value=-(2**53), max_value=2**53),
    st.booleans(),
    st.none(),
)
_json = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_data = st.dictionaries(st.text(max_size=8), _json, max_size=5)
#: The machine is shared: generation may be slow, and that is not the property under test.
_relaxed = settings(suppress_health_check=[HealthCheck.too_slow], deadline=None, max_examples=60)


@st.composite
def _lines(draw: st.DrawFn) -> tuple[bytes, dict[str, Any], str]:
    request = Request(
        draw(st.sampled_from(list(Operation))),
        draw(st.text(min_size=1, max_size=30)),
        draw(_data),
        id=draw(st.text(max_size=36)),
        client_token=draw(st.text(max_size=30)),
        remote_addr="127.0.0.1",
    )
    audit = AuditInput(request, request.path, "root", "")
    options = FormatOptions(
        prefix=draw(st.sampled_from(["", "coffer: "])), log_raw=draw(st.booleans())
    )
    salt = Salt(draw(st.text(min_size=1, max_size=16)))
    if draw(st.booleans()):
        entry = request_entry(audit, salt.hmac, options, draw(st.text(max_size=20)))
    else:
        response = Response(data=draw(_data), warnings=draw(st.lists(st.text(max_size=10))))
        entry = response_entry(audit, response, salt.hmac, options, draw(st.text(max_size=20)))
    return render(entry, "json", options.prefix), entry, options.prefix


@_relaxed
@given(_lines())
def test_a_written_line_reads_back_as_written(case: tuple[bytes, dict[str, Any], str]) -> None:
    line, entry, prefix = case
    parsed = parse_line(line, prefix)
    assert parsed.entry == entry
    assert parsed.type == entry["type"]
    assert parsed.request == entry["request"]
    assert parsed.error == entry.get("error", "")
    assert [p.entry for p in parse_log(line.decode() * 3, prefix)] == [entry] * 3


@_relaxed
@given(_lines(), st.data())
def test_a_truncated_line_is_refused(
    case: tuple[bytes, dict[str, Any], str], data: st.DataObject
) -> None:
    line, _, prefix = case
    body = line.rstrip(b"\n")
    cut = data.draw(st.integers(min_value=0, max_value=len(body) - 1))
    try:
        parse_line(body[:cut], prefix)
    except AuditLineError:
        return
    raise AssertionError(f"a line cut at {cut} of {len(body)} bytes was accepted")


@_relaxed
@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_garbage_is_an_audit_line_error_and_nothing_else(garbage: bytes) -> None:
    try:
        parsed = parse_line(garbage)
    except AuditLineError:
        return
    assert parsed.type in ("request", "response")


@_relaxed
@given(_lines(), st.binary(min_size=1, max_size=20))
def test_a_bad_line_in_a_log_names_its_number(
    case: tuple[bytes, dict[str, Any], str], junk: bytes
) -> None:
    line, _, prefix = case
    text = (line + b"{" + junk.replace(b"\n", b" ") + b"\n").decode("utf-8", "replace")
    try:
        list(parse_log(text, prefix))
    except AuditLineError as exc:
        assert str(exc).startswith("line 2:")
    else:
        raise AssertionError("a garbage second line was accepted")
