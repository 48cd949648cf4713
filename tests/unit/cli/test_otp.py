"""The generate-root OTP: encode/decode round trip and the local-only CLI modes."""

from __future__ import annotations

import base64

import pytest

from cli.generate_root import (
    BASE62,
    DEFAULT_OTP_LENGTH,
    decode_token,
    encode_token,
    generate_otp,
)
from cli.main import main


def test_generate_otp_is_base62_of_the_requested_length() -> None:
    otp = generate_otp()
    assert len(otp) == DEFAULT_OTP_LENGTH
    assert set(otp) <= set(BASE62)
    assert len(generate_otp(40)) == 40
    assert generate_otp() != generate_otp()


def test_round_trip() -> None:
    token = "hvs." + "A" * 24
    otp = generate_otp(len(token))
    encoded = encode_token(token, otp)
    assert "=" not in encoded  # the server sends unpadded base64
    assert decode_token(encoded, otp) == token


def test_decode_accepts_padded_and_unpadded_base64() -> None:
    token, otp = "s.abcdefghij", "0123456789AB"
    mixed = bytes(a ^ b for a, b in zip(token.encode(), otp.encode(), strict=True))
    padded = base64.b64encode(mixed + b"x").decode()  # 13 bytes -> needs padding
    otp13 = otp + "Z"
    assert padded.endswith("=")
    expected = bytes(a ^ b for a, b in zip(mixed + b"x", otp13.encode(), strict=True)).decode()
    assert decode_token(padded, otp13) == expected
    assert decode_token(padded.rstrip("="), otp13) == expected


def test_length_mismatch_is_an_error_that_leaks_nothing() -> None:
    otp = generate_otp(28)
    encoded = encode_token("t" * 28, otp)
    with pytest.raises(ValueError, match="does not match") as info:
        decode_token(encoded, otp[:-1])
    assert otp[:-1] not in str(info.value)
    assert encoded not in str(info.value)


def test_invalid_base64_is_an_error() -> None:
    with pytest.raises(ValueError, match="not valid base64"):
        decode_token("not*base64!", "x" * 8)


def test_cli_decode(capsys: pytest.CaptureFixture[str]) -> None:
    token = "hvs.CAESIJ-Cx3YtzvXh9sVY0tGs"
    otp = generate_otp(len(token))
    code = main(["operator", "generate-root", f"-decode={encode_token(token, otp)}", f"-otp={otp}"])
    out, err = capsys.readouterr()
    assert (code, out, err) == (0, token + "\n", "")


def test_cli_decode_from_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    otp = generate_otp(10)
    monkeypatch.setattr("sys.stdin", io.StringIO(encode_token("s.12345678", otp) + "\n"))
    assert main(["operator", "generate-root", "--decode", "-", "--otp", otp]) == 0
    assert capsys.readouterr().out == "s.12345678\n"


def test_cli_decode_errors(capsys: pytest.CaptureFixture[str]) -> None:
    otp = generate_otp()
    encoded = encode_token("x" * 28, otp)
    assert main(["operator", "generate-root", f"-decode={encoded}", "-otp=short"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("Error decoding root token: length of the encoded token")
    assert encoded not in err

    assert main(["operator", "generate-root", f"-decode={encoded}"]) == 2
    assert "-otp" in capsys.readouterr().err
