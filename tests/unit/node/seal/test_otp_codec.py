"""``encode_with_otp`` / ``decode_with_otp``: what ``sys/decode-token`` parses from the network.

Any input either decodes or is a 400 (``InvalidRequestError``) whose message
quotes neither input; a round trip returns the token.
"""

from __future__ import annotations

import base64

from hypothesis import given, settings
from hypothesis import strategies as st

from node.seal.generate_root import MAX_ENCODED_LENGTH, decode_with_otp, encode_with_otp
from sdk.errors import InvalidRequestError

_PRINTABLE = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=64)


def _decode_or_400(encoded: str, otp: str) -> str | None:
    try:
        return decode_with_otp(encoded, otp)
    except InvalidRequestError as exc:
        message = str(exc)
        assert exc.status == 400
        if len(otp) >= 12:  # short strings can occur in any message
            assert otp not in message
        if len(encoded.strip()) >= 12:
            assert encoded.strip() not in message
        return None


@given(
    _PRINTABLE.flatmap(
        lambda t: st.tuples(
            st.just(t),
            st.text(
                st.characters(min_codepoint=33, max_codepoint=126), min_size=len(t), max_size=len(t)
            ),
        )
    )
)
def test_round_trip(pair: tuple[str, str]) -> None:
    token, otp = pair

    encoded = encode_with_otp(token, otp)

    assert "=" not in encoded
    assert decode_with_otp(encoded, otp) == token
    assert decode_with_otp(encoded + "=" * (-len(encoded) % 4), otp) == token


@settings(max_examples=300)
@given(st.text(max_size=200), st.text(max_size=60))
def test_garbage_is_a_400_never_a_crash(encoded: str, otp: str) -> None:
    _decode_or_400(encoded, otp)


@settings(max_examples=300)
@given(st.binary(max_size=120), st.text(max_size=60))
def test_random_bytes_as_base64_are_a_400_or_text(raw: bytes, otp: str) -> None:
    decoded = _decode_or_400(base64.b64encode(raw).decode(), otp)

    if decoded is not None:  # it decoded: encoding it again gives the same bytes
        assert encode_with_otp(decoded, otp) == base64.b64encode(raw).decode().rstrip("=")


@given(st.data())
def test_truncated_or_split_encodings_never_crash(data: st.DataObject) -> None:
    token = "hvs." + "A" * 24
    otp = data.draw(
        st.text(st.characters(min_codepoint=48, max_codepoint=122), min_size=28, max_size=28)
    )
    encoded = encode_with_otp(token, otp)
    cut = data.draw(st.integers(0, len(encoded)))

    for piece in (encoded[:cut], encoded[cut:], encoded[:cut] + " " + encoded[cut:]):
        result = _decode_or_400(piece, otp)
        if piece == encoded:
            assert result == token


def test_oversize_input_is_refused_before_decoding() -> None:
    otp = "x" * 28

    assert _decode_or_400("A" * (MAX_ENCODED_LENGTH + 4), otp) is None
