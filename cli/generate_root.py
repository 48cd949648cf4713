"""``coffer operator generate-root``: build a new root token from key shares.

The server returns the new token XOR-ed with a one-time password and base64
encoded, so the token never crosses the wire in clear; ``-decode`` undoes that
locally with the OTP that ``-init`` printed (no server call). Without a mode
flag the command provides one key share (``vault operator generate-root [KEY]``).
``-dr-token`` drives the DR secondary's operation-token generation instead
(``sys/replication/dr/secondary/generate-operation-token/*``): the same flow,
the same encoding.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import secrets
import string
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cli.errors import EXIT_OK, CliError, UsageError
from cli.flags import add_command, add_option, add_switch
from cli.output import columns, print_json

if TYPE_CHECKING:
    from cli.context import Context
    from cli.flags import Subparsers

__all__ = [
    "BASE62",
    "DEFAULT_OTP_LENGTH",
    "decode_token",
    "encode_token",
    "generate_otp",
    "register",
    "status_rows",
]

BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
DEFAULT_OTP_LENGTH = 28


@dataclass(frozen=True, slots=True)
class _Kind:
    """Which generation the command drives: a root token or a DR operation token."""

    base: str
    noun: str  # "root token", "DR operation token"
    flag: str  # how to repeat the kind on the command line

    @property
    def attempt(self) -> str:
        return f"{self.base}/attempt"

    @property
    def update(self) -> str:
        return f"{self.base}/update"


_ROOT = _Kind("/v1/sys/generate-root", "root token", "")
_DR = _Kind(
    "/v1/sys/replication/dr/secondary/generate-operation-token", "DR operation token", "-dr-token "
)


def generate_otp(length: int = DEFAULT_OTP_LENGTH) -> str:
    """A random base62 OTP (``secrets``), the alphabet Vault's tokens use."""
    return "".join(secrets.choice(BASE62) for _ in range(length))


def encode_token(token: str, otp: str) -> str:
    """What the server does: unpadded base64 of ``token XOR otp``."""
    token_bytes, otp_bytes = token.encode(), otp.encode()
    if len(token_bytes) != len(otp_bytes):
        raise ValueError("token and OTP lengths differ")
    mixed = bytes(a ^ b for a, b in zip(token_bytes, otp_bytes, strict=True))
    return base64.b64encode(mixed).decode().rstrip("=")


def decode_token(encoded: str, otp: str) -> str:
    """Invert :func:`encode_token`; accepts padded or unpadded base64.

    Messages never include the inputs: both are secrets.
    """
    unpadded = encoded.strip().rstrip("=")
    try:
        mixed = base64.b64decode(unpadded + "=" * (-len(unpadded) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("the encoded token is not valid base64") from None
    otp_bytes = otp.strip().encode()
    if len(mixed) != len(otp_bytes):
        raise ValueError(
            f"length of the encoded token ({len(mixed)} bytes) does not match "
            f"the length of the OTP ({len(otp_bytes)} bytes)"
        )
    try:
        return bytes(a ^ b for a, b in zip(mixed, otp_bytes, strict=True)).decode()
    except UnicodeDecodeError:
        raise ValueError("the decoded token is not valid text; is the OTP right?") from None


def status_rows(status: dict[str, Any]) -> list[tuple[str, object]]:
    """Rows of Vault's generate-root status table (no header, as Vault)."""
    rows: list[tuple[str, object]] = [
        ("Nonce", status.get("nonce", "")),
        ("Started", bool(status.get("started"))),
        ("Progress", f"{status.get('progress', 0)}/{status.get('required', 0)}"),
        ("Complete", bool(status.get("complete"))),
    ]
    if status.get("pgp_fingerprint"):
        rows.append(("PGP Fingerprint", status["pgp_fingerprint"]))
    if status.get("encoded_token"):
        rows.append(("Encoded Token", status["encoded_token"]))
    elif status.get("encoded_root_token"):
        rows.append(("Encoded Root Token", status["encoded_root_token"]))
    if status.get("otp"):
        rows.append(("OTP", status["otp"]))
    if status.get("otp_length"):
        rows.append(("OTP Length", status["otp_length"]))
    return rows


def _print_status(ctx: Context, status: dict[str, Any] | None, kind: _Kind) -> int:
    status = status or {}
    if ctx.json:
        print_json(status, ctx.out)
        return EXIT_OK
    if status.get("otp"):
        ctx.warn(
            "A One-Time-Password has been generated for you and is shown in the OTP "
            f"field. You will need this value to decode the resulting {kind.noun}, so "
            "keep it safe."
        )
    ctx.print(columns(status_rows(status)))
    return EXIT_OK


def _status(ctx: Context, kind: _Kind) -> dict[str, Any]:
    return ctx.call(f"getting {kind.noun} generation status", "GET", kind.attempt) or {}


def _decode(args: argparse.Namespace, ctx: Context) -> int:
    encoded: str = args.decode
    otp: str | None = args.otp
    if not otp:
        raise UsageError("Error: -decode needs the -otp that -init printed")
    if encoded == "-":
        encoded = ctx.stdin.read()
    try:
        token = decode_token(encoded, otp)
    except ValueError as exc:
        noun = _DR.noun if args.dr_token else _ROOT.noun
        raise CliError(f"Error decoding {noun}: {exc}") from None
    ctx.print(token)
    return EXIT_OK


def _provide(args: argparse.Namespace, ctx: Context, kind: _Kind) -> int:
    nonce: str | None = args.nonce
    if not nonce:
        status = _status(ctx, kind)
        if not status.get("started"):
            raise CliError(
                f"Error: no {kind.noun} generation is in progress; start one with "
                f'"coffer operator generate-root {kind.flag}-init"'
            )
        nonce = str(status.get("nonce", ""))
    key = ctx.secret_argument(
        args.key, "Unseal Key (will be hidden): ", "unseal key", f"Operation nonce: {nonce}"
    )
    response = ctx.call("posting unseal key", "PUT", kind.update, {"key": key, "nonce": nonce})
    return _print_status(ctx, response, kind)


def run(args: argparse.Namespace, ctx: Context) -> int:
    if args.otp and args.decode is None and not args.init:
        raise UsageError("Error: -otp is only used with -decode (or -init)")
    if args.key and (args.init or args.generate_otp or args.status or args.cancel):
        raise UsageError("Error: KEY is only used when providing a key share")
    if args.decode is not None:
        return _decode(args, ctx)
    kind = _DR if args.dr_token else _ROOT
    if args.generate_otp:
        length = int(_status(ctx, kind).get("otp_length") or DEFAULT_OTP_LENGTH)
        ctx.print(generate_otp(length))
        return EXIT_OK
    if args.init:
        body = {"otp": args.otp} if args.otp else {}
        started = ctx.call(f"initializing {kind.noun} generation", "PUT", kind.attempt, body)
        return _print_status(ctx, started, kind)
    if args.status:
        return _print_status(ctx, _status(ctx, kind), kind)
    if args.cancel:
        ctx.call(f"canceling {kind.noun} generation", "DELETE", kind.attempt)
        if not ctx.json:
            noun = kind.noun[0].upper() + kind.noun[1:]
            ctx.print(f"Success! {noun} generation canceled (if it was started)")
        return EXIT_OK
    return _provide(args, ctx, kind)


def register(subparsers: Subparsers, parents: list[argparse.ArgumentParser]) -> None:
    parser = add_command(
        subparsers,
        "generate-root",
        "generate a new root token from unseal key shares",
        parents=parents,
        description=(
            "Generate a new root token from a threshold of unseal key shares.\n\n"
            "  coffer operator generate-root -init                # prints OTP and nonce\n"
            "  coffer operator generate-root -nonce=NONCE [KEY]   # once per key share\n"
            "  coffer operator generate-root -decode=ENCODED -otp=OTP\n\n"
            "With -dr-token, the same flow makes a DR operation token on a DR\n"
            "secondary from a threshold of the primary's key shares."
        ),
    )
    parser.add_argument("key", nargs="?", metavar="KEY", help="unseal key share ('-' reads stdin)")
    modes = parser.add_mutually_exclusive_group()
    add_switch(modes, "init", "start a root generation; the server returns the OTP")
    add_switch(modes, "generate-otp", "print a fresh OTP of the server's length")
    add_switch(modes, "status", "print the status of the current attempt")
    add_switch(modes, "cancel", "cancel the current attempt")
    add_option(modes, "decode", metavar="ENCODED", help="decode an encoded token ('-' = stdin)")
    add_option(parser, "nonce", metavar="NONCE", help="nonce of the attempt to provide a key to")
    add_option(parser, "otp", metavar="OTP", help="OTP for -decode (or to give -init)")
    add_switch(parser, "dr-token", "generate a DR operation token (on a DR secondary) instead")
    parser.set_defaults(handler=run)
