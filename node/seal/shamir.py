"""Shamir's secret sharing over GF(2^8).

Each byte of the secret is the constant term of its own random polynomial
of degree ``threshold - 1``; a share is the polynomial values at one
non-zero x, with x appended as the last byte (the reference's layout).
Arithmetic uses the AES field polynomial x^8 + x^4 + x^3 + x + 1 through
log/exp tables.
"""

from __future__ import annotations

import secrets

__all__ = ["ShamirError", "combine", "split"]

_EXP = [0] * 512
_LOG = [0] * 256


def _build_tables() -> None:
    value = 1
    for power in range(255):
        _EXP[power] = value
        _LOG[value] = power
        # multiply by the generator 3 (= x + 1) modulo the AES polynomial
        doubled = value << 1
        if doubled & 0x100:
            doubled ^= 0x11B
        value = doubled ^ value
    for power in range(255, 512):
        _EXP[power] = _EXP[power - 255]


_build_tables()


class ShamirError(ValueError):
    """Shares are malformed, duplicated or too few to combine."""


def _mul(a: int, b: int) -> int:
    if a == 0 or b == 0:
        return 0
    return _EXP[_LOG[a] + _LOG[b]]


def _div(a: int, b: int) -> int:
    if b == 0:
        raise ZeroDivisionError("division by zero in GF(2^8)")
    if a == 0:
        return 0
    return _EXP[(_LOG[a] - _LOG[b]) % 255]


def _evaluate(coefficients: list[int], x: int) -> int:
    result = 0
    for coefficient in reversed(coefficients):
        result = _mul(result, x) ^ coefficient
    return result


def split(secret: bytes, shares: int, threshold: int) -> list[bytes]:
    """Split ``secret`` into ``shares`` parts, any ``threshold`` of which rebuild it."""
    if not secret:
        raise ShamirError("cannot split an empty secret")
    if not 2 <= threshold <= shares <= 255:
        raise ShamirError("need 2 <= threshold <= shares <= 255")
    xs = secrets.SystemRandom().sample(range(1, 256), shares)
    outputs = [bytearray() for _ in range(shares)]
    for byte in secret:
        coefficients = [byte] + [secrets.randbelow(256) for _ in range(threshold - 1)]
        for index, x in enumerate(xs):
            outputs[index].append(_evaluate(coefficients, x))
    return [bytes(out) + bytes([x]) for out, x in zip(outputs, xs, strict=True)]


def combine(parts: list[bytes]) -> bytes:
    """Rebuild the secret from at least ``threshold`` distinct shares.

    With too few shares the result is a wrong secret, not an error: callers
    detect that by failing to decrypt with it.
    """
    if len(parts) < 2:
        raise ShamirError("at least two shares are required")
    length = len(parts[0])
    if length < 2 or any(len(p) != length for p in parts):
        raise ShamirError("all shares must have the same length")
    xs = [p[-1] for p in parts]
    if len(set(xs)) != len(xs):
        raise ShamirError("duplicate share")
    if 0 in xs:
        raise ShamirError("invalid share")
    secret = bytearray()
    for position in range(length - 1):
        value = 0
        for i, x_i in enumerate(xs):
            # Lagrange basis polynomial for x_i, evaluated at 0.
            basis = 1
            for j, x_j in enumerate(xs):
                if i != j:
                    basis = _mul(basis, _div(x_j, x_j ^ x_i))
            value ^= _mul(parts[i][position], basis)
        secret.append(value)
    return bytes(secret)
