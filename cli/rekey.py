"""``coffer operator rekey``: new unseal keys (or recovery keys) from a quorum of the old ones.

The flags are ``vault operator rekey``'s: ``-init`` with ``-key-shares`` and
``-key-threshold`` (and ``-verify`` to require verification), then one call
per current key share (``KEY`` or a hidden prompt, ``-nonce`` optional);
``-status`` and ``-cancel``; ``-verify`` on those selects the verification
step; ``-target=recovery`` rekeys the recovery keys of an HSM-sealed server.
"""

from __future__ import annotations

import argparse
import textwrap
from typing import TYPE_CHECKING, Any

from cli.errors import EXIT_OK, CliError, UsageError
from cli.flags import add_command, add_option, add_switch
from cli.output import columns, print_json

if TYPE_CHECKING:
    from cli.context import Context
    from cli.flags import Subparsers

__all__ = ["register", "status_rows"]

_TARGETS = {"barrier": "/v1/sys/rekey", "recovery": "/v1/sys/rekey-recovery-key"}


def status_rows(status: dict[str, Any], verify: bool) -> list[tuple[str, object]]:
    """Vault's rekey (or rekey verification) status table."""
    if verify:
        return [
            ("Nonce", status.get("nonce", "")),
            ("Started", bool(status.get("started"))),
            ("New Shares", status.get("n", 0)),
            ("New Threshold", status.get("t", 0)),
            ("Verification Progress", f"{status.get('progress', 0)}/{status.get('t', 0)}"),
        ]
    rows: list[tuple[str, object]] = [
        ("Nonce", status.get("nonce", "")),
        ("Started", bool(status.get("started"))),
        ("Rekey Progress", f"{status.get('progress', 0)}/{status.get('required', 0)}"),
        ("New Shares", status.get("n", 0)),
        ("New Threshold", status.get("t", 0)),
        ("Verification Required", bool(status.get("verification_required"))),
    ]
    if status.get("verification_nonce"):
        rows.append(("Verification Nonce", status["verification_nonce"]))
    return rows


def _print_status(ctx: Context, status: dict[str, Any] | None, verify: bool) -> int:
    status = status or {}
    if ctx.json:
        print_json(status, ctx.out)
    else:
        ctx.print(columns([("Key", "Value"), *status_rows(status, verify)]))
    return EXIT_OK


def _print_keys(ctx: Context, reply: dict[str, Any], noun: str) -> int:
    if ctx.json:
        print_json(reply, ctx.out)
        return EXIT_OK
    keys = reply.get("keys_base64") or reply.get("keys") or []
    for number, key in enumerate(keys, start=1):
        ctx.print(f"{noun} {number}: {key}")
    ctx.print()
    ctx.print(f"Operation nonce: {reply.get('nonce', '')}")
    ctx.print()
    if reply.get("verification_required"):
        text = (
            f"Coffer has created new {noun.lower()}s, split into {len(keys)} shares. They do "
            "not replace the current ones until a threshold of them is entered with "
            '"coffer operator rekey -verify" under the verification nonce '
            f"{reply.get('verification_nonce', '')}."
        )
    else:
        text = (
            f"Coffer rekeyed with {len(keys)} {noun.lower()} shares. Please securely "
            "distribute the key shares printed above; the previous ones no longer work."
        )
    ctx.print(textwrap.fill(text, width=78))
    return EXIT_OK


def _provide(args: argparse.Namespace, ctx: Context, base: str, noun: str) -> int:
    step = "verify" if args.verify else "init"
    nonce: str | None = args.nonce
    if not nonce:
        status = ctx.call("reading rekey status", "GET", f"{base}/{step}") or {}
        if not status.get("started", args.verify):
            raise CliError(
                'Error: no rekey is in progress; start one with "coffer operator rekey -init"'
            )
        nonce = str(status.get("nonce", ""))
    prompt = "New " if args.verify else ""
    key = ctx.secret_argument(
        args.key,
        f"{prompt}{noun} (will be hidden): ",
        noun.lower(),
        f"Rekey operation nonce: {nonce}",
    )
    path = f"{base}/verify" if args.verify else f"{base}/update"
    reply = ctx.call("posting key", "PUT", path, {"key": key, "nonce": nonce}) or {}
    if args.verify:
        if reply.get("complete"):
            if ctx.json:
                print_json(reply, ctx.out)
            else:
                ctx.print(f"Success! Rekey verification complete (nonce {reply.get('nonce')}).")
                ctx.print(f"The new {noun.lower()}s are now in use.")
            return EXIT_OK
        return _print_status(ctx, reply, verify=True)
    if reply.get("complete"):
        return _print_keys(ctx, reply, noun)
    return _print_status(ctx, reply, verify=False)


def run(args: argparse.Namespace, ctx: Context) -> int:
    if args.target not in _TARGETS:
        raise UsageError("Error: -target must be barrier or recovery")
    base = _TARGETS[args.target]
    noun = "Recovery Key" if args.target == "recovery" else "Key"
    if args.key and (args.init or args.status or args.cancel):
        raise UsageError("Error: KEY is only used when providing a key share")
    step = "verify" if args.verify and not args.init else "init"
    if args.init:
        if args.pgp_keys:
            raise UsageError("Error: -pgp-keys is not supported: PGP encryption is not available")
        body = {
            "secret_shares": args.key_shares,
            "secret_threshold": args.key_threshold,
            "require_verification": bool(args.verify),
        }
        return _print_status(
            ctx, ctx.call("initializing rekey", "PUT", f"{base}/init", body), verify=False
        )
    if args.status:
        status = ctx.call("reading rekey status", "GET", f"{base}/{step}")
        return _print_status(ctx, status, verify=step == "verify")
    if args.cancel:
        ctx.call("canceling rekey", "DELETE", f"{base}/{step}")
        if not ctx.json:
            what = "verification restarted" if step == "verify" else "rekey canceled"
            ctx.print(f"Success! {what.capitalize()} (if it was started).")
        return EXIT_OK
    return _provide(args, ctx, base, noun)


def register(subparsers: Subparsers, parents: list[argparse.ArgumentParser]) -> None:
    parser = add_command(
        subparsers,
        "rekey",
        "replace the unseal keys (or recovery keys) using a threshold of the current ones",
        parents=parents,
        description=(
            "Generate new unseal keys (recovery keys with -target=recovery).\n\n"
            "  coffer operator rekey -init -key-shares=5 -key-threshold=3 [-verify]\n"
            "  coffer operator rekey [-nonce=NONCE] [KEY]          # once per current share\n"
            "  coffer operator rekey -verify [-nonce=NONCE] [KEY]  # once per new share\n"
            "  coffer operator rekey -status | -cancel [-verify]"
        ),
    )
    parser.add_argument("key", nargs="?", metavar="KEY", help="key share ('-' reads stdin)")
    modes = parser.add_mutually_exclusive_group()
    add_switch(modes, "init", "start a rekey")
    add_switch(modes, "status", "print the status of the rekey (or of its verification)")
    add_switch(modes, "cancel", "cancel the rekey (with -verify: restart the verification)")
    add_switch(parser, "verify", "with -init: require verification; else: the verify step")
    add_option(parser, "key-shares", type=int, default=5, metavar="N", help="new shares (5)")
    add_option(parser, "key-threshold", type=int, default=3, metavar="T", help="threshold (3)")
    add_option(parser, "nonce", metavar="NONCE", help="nonce of the operation")
    add_option(
        parser, "target", default="barrier", metavar="barrier|recovery", help="keys to rekey"
    )
    add_option(parser, "pgp-keys", metavar="KEYS", help="not supported")
    parser.set_defaults(handler=run)
