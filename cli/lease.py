"""``coffer lease lookup|renew|revoke``: token leases, like ``vault lease``.

``revoke -prefix`` revokes every lease under a prefix (``auth/userpass/``: all
tokens that mount issued); ``-force`` implies nothing else here (Coffer's only
leases are tokens, whose revocation cannot fail in a secrets engine) but is
accepted, and required to be paired with ``-prefix``, as in Vault.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from cli.common import print_done, print_secret
from cli.errors import CliError, UsageError
from cli.flags import add_command, add_option, add_switch

if TYPE_CHECKING:
    from cli.context import Context
    from cli.flags import Subparsers

__all__ = ["register"]


def _lease(raw: str) -> str:
    lease = raw.strip()
    if not lease:
        raise UsageError("Error: a lease ID is required")
    return lease


def run_lookup(args: argparse.Namespace, ctx: Context) -> int:
    lease = _lease(args.id)
    response = ctx.call("looking up lease", "PUT", "/v1/sys/leases/lookup", {"lease_id": lease})
    if response is None:
        raise CliError("Error looking up lease: empty response from server")
    return print_secret(ctx, response)


def run_renew(args: argparse.Namespace, ctx: Context) -> int:
    lease = _lease(args.id)
    body: dict[str, Any] = {"lease_id": lease}
    if args.increment:
        body["increment"] = args.increment
    response = ctx.call("renewing lease", "PUT", "/v1/sys/leases/renew", body)
    if response is None:
        raise CliError("Error renewing lease: empty response from server")
    return print_secret(ctx, response)


def run_revoke(args: argparse.Namespace, ctx: Context) -> int:
    lease = _lease(args.id)
    if args.force and not args.prefix:
        raise UsageError("Error: specifying -force requires also specifying -prefix")
    if args.prefix:
        kind = "revoke-force" if args.force else "revoke-prefix"
        prefix = lease.lstrip("/")
        body = {} if args.force else {"sync": args.sync}
        response = ctx.call("revoking leases", "PUT", f"/v1/sys/leases/{kind}/{prefix}", body)
        verb = "Force revoked" if args.force else "Revoked"
        return print_done(ctx, response, f"Success! {verb} any leases with prefix: {lease}")
    response = ctx.call(
        "revoking lease", "PUT", "/v1/sys/leases/revoke", {"lease_id": lease, "sync": args.sync}
    )
    return print_done(ctx, response, f"Success! Revoked lease: {lease}")


def register(subparsers: Subparsers, parents: list[argparse.ArgumentParser]) -> None:
    group = add_command(subparsers, "lease", "look up, renew and revoke leases (tokens' leases)")
    commands = group.add_subparsers(
        title="subcommands", dest="lease_command", metavar="SUBCOMMAND", required=True
    )

    lookup = add_command(commands, "lookup", "show a lease's times and TTL", parents=parents)
    lookup.add_argument("id", metavar="ID")
    lookup.set_defaults(handler=run_lookup)

    renew = add_command(commands, "renew", "renew a lease", parents=parents)
    renew.add_argument("id", metavar="ID")
    add_option(renew, "increment", default="", metavar="DURATION", help="requested extension")
    renew.set_defaults(handler=run_renew)

    revoke = add_command(
        commands, "revoke", "revoke a lease, or every lease under a prefix", parents=parents
    )
    revoke.add_argument("id", metavar="ID")
    add_switch(revoke, "prefix", "treat ID as a prefix and revoke every lease under it (sudo)")
    add_switch(revoke, "force", "with -prefix: use revoke-force (sudo)")
    add_switch(revoke, "sync", "revoke before returning (default true)", default=True)
    revoke.set_defaults(handler=run_revoke)
