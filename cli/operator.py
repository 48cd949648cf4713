"""``coffer operator init|unseal|seal|step-down`` (and ``generate-root``, in its own module).

Output matches ``vault operator ...``: ``init`` prints the unseal keys and the
root token (the only time they are ever shown), ``-format=json`` prints the
Vault CLI's JSON shape so tooling written for ``vault operator init`` works.
"""

from __future__ import annotations

import argparse
import textwrap
from typing import TYPE_CHECKING, Any

from cli import generate_root, rekey
from cli.errors import EXIT_OK, CliError, UsageError
from cli.flags import add_command, add_option, add_switch
from cli.output import print_json
from cli.status import print_seal_status

if TYPE_CHECKING:
    from cli.context import Context
    from cli.flags import Subparsers

__all__ = ["init_output", "register"]

EXIT_NOT_INITIALIZED = 2
DEFAULT_RECOVERY_SHARES = 5
DEFAULT_RECOVERY_THRESHOLD = 3


def init_output(
    response: dict[str, Any],
    shares: int,
    threshold: int,
    recovery_shares: int = 0,
    recovery_threshold: int = 0,
) -> dict[str, Any]:
    """Map the ``sys/init`` response onto ``vault operator init -format=json``."""
    return {
        "unseal_keys_b64": list(response.get("keys_base64") or []),
        "unseal_keys_hex": list(response.get("keys") or []),
        "unseal_shares": shares,
        "unseal_threshold": threshold,
        "recovery_keys_b64": list(response.get("recovery_keys_base64") or []),
        "recovery_keys_hex": list(response.get("recovery_keys") or []),
        "recovery_keys_shares": recovery_shares,
        "recovery_keys_threshold": recovery_threshold,
        "root_token": response.get("root_token", ""),
    }


def _recovery_note(shares: int, threshold: int) -> str:
    return textwrap.fill(
        f"Coffer initialized with {shares} recovery key shares and a key threshold of "
        f"{threshold}. It is sealed by its HSM and unseals itself at every start. The "
        "recovery keys authorise operations such as generating a root token; they cannot "
        "unseal it. Please securely distribute the key shares printed above.",
        width=78,
    )


def _init_note(shares: int, threshold: int) -> str:
    paragraphs = [
        f"Coffer initialized with {shares} key shares and a key threshold of {threshold}. "
        "Please securely distribute the key shares printed above. When Coffer is "
        "re-sealed, restarted, or stopped, you must supply at least "
        f"{threshold} of these keys to unseal it before it can start servicing requests.",
        f"Coffer does not store the generated root key. Without at least {threshold} "
        "keys to reconstruct the root key, Coffer will remain permanently sealed!",
    ]
    return "\n\n".join(textwrap.fill(p, width=78) for p in paragraphs)


def run_init(args: argparse.Namespace, ctx: Context) -> int:
    if args.status:
        return _init_status(ctx)
    shares: int = args.key_shares
    threshold: int = args.key_threshold
    body = {"secret_shares": shares, "secret_threshold": threshold}
    recovery_shares: int = args.recovery_shares
    recovery_threshold: int = args.recovery_threshold
    if not (recovery_shares or recovery_threshold) and _recovery_seal(ctx):
        # As `vault operator init`: an auto-unsealing server gets recovery shares by default.
        recovery_shares = DEFAULT_RECOVERY_SHARES
        recovery_threshold = DEFAULT_RECOVERY_THRESHOLD
    if recovery_shares or recovery_threshold:
        # An HSM-sealed server takes only recovery shares (as `vault operator init`).
        shares = threshold = 0
        body = {"recovery_shares": recovery_shares, "recovery_threshold": recovery_threshold}
    response = ctx.call("initializing", "PUT", "/v1/sys/init", body)
    if response is None:
        raise CliError("Error initializing: empty response from server")
    output = init_output(response, shares, threshold, recovery_shares, recovery_threshold)
    if ctx.json:
        print_json(output, ctx.out)
        return EXIT_OK
    if output["recovery_keys_b64"] or output["recovery_keys_hex"]:
        recovery = output["recovery_keys_b64"] or output["recovery_keys_hex"]
        for number, key in enumerate(recovery, start=1):
            ctx.print(f"Recovery Key {number}: {key}")
        ctx.print()
        ctx.print(f"Initial Root Token: {output['root_token']}")
        ctx.print()
        ctx.print(_recovery_note(recovery_shares, recovery_threshold))
        return EXIT_OK
    keys = output["unseal_keys_b64"] or output["unseal_keys_hex"]
    for number, key in enumerate(keys, start=1):
        ctx.print(f"Unseal Key {number}: {key}")
    ctx.print()
    ctx.print(f"Initial Root Token: {output['root_token']}")
    ctx.print()
    ctx.print(_init_note(shares, threshold))
    return EXIT_OK


def _recovery_seal(ctx: Context) -> bool:
    """Whether the server is sealed by an HSM (``recovery_seal`` in its seal status).

    A server that cannot tell is treated as Shamir: the init call then reports why.
    """
    try:
        status = ctx.call("reading seal status", "GET", "/v1/sys/seal-status") or {}
    except CliError:
        return False
    return bool(status.get("recovery_seal"))


def _init_status(ctx: Context) -> int:
    """``-status``: exit 0 if initialized, 2 if not (as Vault)."""
    response = ctx.call("checking initialization status", "GET", "/v1/sys/init") or {}
    initialized = bool(response.get("initialized"))
    if ctx.json:
        print_json({"initialized": initialized}, ctx.out)
    else:
        ctx.print("Coffer is initialized" if initialized else "Coffer is not initialized")
    return EXIT_OK if initialized else EXIT_NOT_INITIALIZED


def run_unseal(args: argparse.Namespace, ctx: Context) -> int:
    key: str | None = args.key
    body: dict[str, Any]
    if args.reset:
        if key:
            raise UsageError("Error: -reset does not take an unseal key")
        body = {"reset": True}
    else:
        if not key:
            key = ctx.read_secret("Unseal Key (will be hidden): ", "unseal key")
        body = {"key": key.strip()}
        if args.migrate:
            body["migrate"] = True
    seal = ctx.call("unsealing", "PUT", "/v1/sys/unseal", body)
    if seal is None:
        raise CliError("Error unsealing: empty response from server")
    print_seal_status(ctx, seal)
    return EXIT_OK


def run_seal(args: argparse.Namespace, ctx: Context) -> int:
    ctx.call("sealing", "PUT", "/v1/sys/seal")
    ctx.print("Success! Coffer is sealed.")
    return EXIT_OK


def run_step_down(args: argparse.Namespace, ctx: Context) -> int:
    ctx.call("stepping down", "PUT", "/v1/sys/step-down")
    ctx.print(f"Success! Stepped down: {ctx.settings.address}")
    return EXIT_OK


def register(subparsers: Subparsers, parents: list[argparse.ArgumentParser]) -> None:
    operator = add_command(subparsers, "operator", "operator commands (init, unseal, seal, ...)")
    commands = operator.add_subparsers(
        title="subcommands", dest="operator_command", metavar="SUBCOMMAND", required=True
    )

    init = add_command(
        commands,
        "init",
        "initialize a new server and print its unseal keys and root token",
        parents=parents,
    )
    add_option(init, "key-shares", type=int, default=5, metavar="N", help="key shares (5)")
    add_option(init, "key-threshold", type=int, default=3, metavar="T", help="threshold (3)")
    add_option(
        init,
        "recovery-shares",
        type=int,
        default=0,
        metavar="N",
        help="recovery key shares, for a server sealed by an HSM (5 when it is one)",
    )
    add_option(
        init,
        "recovery-threshold",
        type=int,
        default=0,
        metavar="T",
        help="recovery key threshold (3 when the server is sealed by an HSM)",
    )
    add_switch(init, "status", "only report whether the server is initialized (exit 0/2)")
    init.set_defaults(handler=run_init)

    unseal = add_command(
        commands,
        "unseal",
        "provide one unseal key share (prompted for, hidden, if KEY is omitted)",
        parents=parents,
    )
    unseal.add_argument("key", nargs="?", metavar="KEY", help="unseal key share")
    add_switch(unseal, "reset", "discard the key shares entered so far")
    add_switch(unseal, "migrate", "the key is a share of the old seal of a seal migration")
    unseal.set_defaults(handler=run_unseal)

    seal = add_command(commands, "seal", "seal the server (needs a token)", parents=parents)
    seal.set_defaults(handler=run_seal)

    step_down = add_command(
        commands,
        "step-down",
        "make the active node give up leadership (needs a sudo token)",
        parents=parents,
    )
    step_down.set_defaults(handler=run_step_down)

    generate_root.register(commands, parents)
    rekey.register(commands, parents)
