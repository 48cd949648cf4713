"""Shamir secret sharing over GF(2^8)."""

from __future__ import annotations

import itertools
import os

import pytest

from node.seal.shamir import ShamirError, _div, _mul, combine, split

SECRET = bytes.fromhex("00ff10ef") + os.urandom(28)


def reference_mul(a: int, b: int) -> int:
    """Bitwise carry-less multiplication modulo the AES polynomial 0x11B."""
    product = 0
    while b:
        if b & 1:
            product ^= a
        a <<= 1
        if a & 0x100:
            a ^= 0x11B
        b >>= 1
    return product


# -- field arithmetic -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "product"),
    [
        (0x53, 0xCA, 0x01),  # multiplicative inverses in the AES field
        (0x57, 0x83, 0xC1),  # FIPS-197 section 4.2
        (0x57, 0x13, 0xFE),  # FIPS-197 section 4.2.1
        (0x02, 0x80, 0x1B),  # reduction by the field polynomial
        (0x01, 0xAB, 0xAB),
        (0x00, 0xAB, 0x00),
        (0xAB, 0x00, 0x00),
    ],
)
def test_mul_known_answers(a: int, b: int, product: int) -> None:
    assert _mul(a, b) == product
    assert _mul(b, a) == product


def test_mul_matches_bitwise_reference_for_all_pairs() -> None:
    for a in range(256):
        for b in range(256):
            assert _mul(a, b) == reference_mul(a, b), (a, b)


def test_div_inverts_mul_for_all_pairs() -> None:
    for a in range(256):
        for b in range(1, 256):
            assert _div(_mul(a, b), b) == a, (a, b)
            assert _mul(_div(a, b), b) == a, (a, b)


def test_every_nonzero_element_has_an_inverse() -> None:
    inverses = {_div(1, b) for b in range(1, 256)}

    assert inverses == set(range(1, 256))
    assert _div(1, 0x53) == 0xCA


def test_div_by_zero_raises() -> None:
    with pytest.raises(ZeroDivisionError):
        _div(5, 0)
    with pytest.raises(ZeroDivisionError):
        _div(0, 0)


# -- split / combine ---------------------------------------------------------------------


@pytest.mark.parametrize(("shares", "threshold"), [(2, 2), (3, 2), (5, 3), (5, 5), (6, 4)])
def test_every_subset_of_at_least_threshold_reconstructs(shares: int, threshold: int) -> None:
    parts = split(SECRET, shares, threshold)

    for size in range(threshold, shares + 1):
        for subset in itertools.combinations(parts, size):
            assert combine(list(subset)) == SECRET


def test_every_3_of_10_combination_reconstructs() -> None:
    parts = split(SECRET, 10, 3)

    combos = list(itertools.combinations(parts, 3))
    assert len(combos) == 120
    for subset in combos:
        assert combine(list(subset)) == SECRET
        assert combine(list(reversed(subset))) == SECRET


def test_255_of_255() -> None:
    secret = os.urandom(16)
    parts = split(secret, 255, 255)

    assert sorted(p[-1] for p in parts) == list(range(1, 256))
    assert combine(parts) == secret
    assert combine(parts[:-1]) != secret


def test_any_two_of_255() -> None:
    parts = split(SECRET, 255, 2)

    for first, second in [(0, 1), (0, 254), (100, 200), (254, 17)]:
        assert combine([parts[first], parts[second]]) == SECRET


def test_every_byte_value_survives() -> None:
    secret = bytes(range(256))
    parts = split(secret, 5, 3)

    assert combine(parts[1:4]) == secret
    assert combine(split(b"\x00", 3, 2)[:2]) == b"\x00"
    assert combine(split(b"\xff", 3, 2)[1:]) == b"\xff"


@pytest.mark.parametrize(("shares", "threshold"), [(3, 2), (5, 3), (10, 3), (6, 6)])
def test_fewer_than_threshold_shares_give_a_different_secret(shares: int, threshold: int) -> None:
    parts = split(SECRET, shares, threshold)

    for size in range(2, threshold):
        for subset in itertools.combinations(parts, size):
            wrong = combine(list(subset))
            assert len(wrong) == len(SECRET)
            assert wrong != SECRET


def test_threshold_two_fewer_shares_cannot_be_combined() -> None:
    parts = split(SECRET, 3, 2)

    with pytest.raises(ShamirError):
        combine(parts[:1])
    with pytest.raises(ShamirError):
        combine([])


def test_shares_are_distinct_with_nonzero_unique_x() -> None:
    parts = split(SECRET, 20, 5)

    assert len(parts) == 20
    assert len(set(parts)) == 20
    assert all(len(p) == len(SECRET) + 1 for p in parts)
    xs = [p[-1] for p in parts]
    assert 0 not in xs
    assert len(set(xs)) == 20


def test_splitting_is_randomised() -> None:
    first = split(SECRET, 5, 3)
    second = split(SECRET, 5, 3)

    assert first != second
    assert combine(first[:3]) == combine(second[2:]) == SECRET
    # Shares from two different splits do not mix (x coordinates are random, so
    # take one of the second split's shares at an x the first two do not use).
    used = {share[-1] for share in first[:2]}
    other = next(share for share in second if share[-1] not in used)
    assert combine([*first[:2], other]) != SECRET


def test_share_layout_is_values_then_x() -> None:
    """Build 2-of-n shares by hand: f(x) = s + a*x, x appended last."""
    secret, slope = b"\x42\x00\xff", b"\x07\x99\x01"

    def share(x: int) -> bytes:
        return bytes(s ^ reference_mul(a, x) for s, a in zip(secret, slope, strict=True)) + bytes(
            [x]
        )

    assert combine([share(1), share(2)]) == secret
    assert combine([share(200), share(3)]) == secret
    assert combine([share(5), share(9), share(255)]) == secret


# -- errors ---------------------------------------------------------------------------------


def test_duplicate_shares_are_rejected() -> None:
    parts = split(SECRET, 5, 3)

    with pytest.raises(ShamirError, match="duplicate"):
        combine([parts[0], parts[0], parts[1]])
    with pytest.raises(ShamirError, match="duplicate"):
        combine([parts[0], parts[1], parts[0][:-2] + b"\x00" + parts[0][-1:]])


def test_mismatched_lengths_are_rejected() -> None:
    short = split(SECRET[:8], 3, 2)
    long = split(SECRET, 3, 2)

    with pytest.raises(ShamirError):
        combine([short[0], long[1]])
    with pytest.raises(ShamirError):
        combine([long[0], long[1][1:]])


@pytest.mark.parametrize("bad", [b"", b"\x01"])
def test_too_short_shares_are_rejected(bad: bytes) -> None:
    with pytest.raises(ShamirError):
        combine([bad, bad])


def test_share_with_x_zero_is_rejected() -> None:
    parts = split(SECRET, 3, 2)

    with pytest.raises(ShamirError):
        combine([parts[0], parts[1][:-1] + b"\x00"])


@pytest.mark.parametrize(
    ("secret", "shares", "threshold"),
    [
        (b"", 3, 2),
        (b"s", 3, 1),
        (b"s", 1, 1),
        (b"s", 3, 0),
        (b"s", 3, -1),
        (b"s", 2, 3),
        (b"s", 256, 2),
        (b"s", 256, 256),
        (b"s", 0, 0),
    ],
)
def test_split_parameter_validation(secret: bytes, shares: int, threshold: int) -> None:
    with pytest.raises(ShamirError):
        split(secret, shares, threshold)


def test_shamir_error_is_a_value_error() -> None:
    assert issubclass(ShamirError, ValueError)
