"""``coffer token create|lookup|renew|revoke|capabilities``, like ``vault token``.

Without a TOKEN argument, ``lookup``, ``renew`` and ``capabilities`` act on
the client's own token (the ``-self`` endpoints).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from cli.common import (
    duration_seconds,
    key_values,
    print_field,
    print_secret,
    split_list,
    success,
)
from cli.errors import EXIT_OK, CliError, UsageError
from cli.flags import add_command, add_option, add_switch, duration
from cli.output import print_json

if TYPE_CHECKING:
    from cli.context import Context
    from cli.flags import Subparsers
    from cli.http import Json

__all__ = ["create_body", "register"]

_TOKEN = "/v1/auth/token"


def _output(ctx: Context, response: Json | None, field: str | None, what: str) -> int:
    if response is None:
        raise CliError(f"Error {what}: the server returned no data")
    if field:
        return print_field(ctx, response, field)
    return print_secret(ctx, response)


def create_body(args: argparse.Namespace) -> dict[str, Any]:
    """The ``auth/token/create`` body for the flags given (unset flags are left out)."""
    body: dict[str, Any] = {}
    if args.id:
        body["id"] = args.id
    policies = split_list(args.policy)
    if policies:
        body["policies"] = policies
    metadata = key_values(args.metadata, "metadata")
    if metadata:
        body["meta"] = metadata
    if args.orphan:
        body["no_parent"] = True
    if args.no_default_policy:
        body["no_default_policy"] = True
    for name in ("ttl", "explicit_max_ttl", "period", "display_name", "type", "entity_alias"):
        value = getattr(args, name)
        if value:
            body[name] = value
    if args.use_limit is not None:
        if args.use_limit < 0:
            raise UsageError("Error: -use-limit must not be negative")
        body["num_uses"] = args.use_limit
    body["renewable"] = args.renewable
    return body


def run_create(args: argparse.Namespace, ctx: Context) -> int:
    path = f"{_TOKEN}/create" + (f"/{quote(args.role, safe='')}" if args.role else "")
    response = ctx.call("creating token", "POST", path, create_body(args))
    return _output(ctx, response, args.field, "creating token")


def run_lookup(args: argparse.Namespace, ctx: Context) -> int:
    token: str | None = args.subject
    if args.accessor:
        if not token:
            raise UsageError("Error: -accessor needs the ACCESSOR as its argument")
        response = ctx.call(
            "looking up token", "POST", f"{_TOKEN}/lookup-accessor", {"accessor": token}
        )
    elif token:
        response = ctx.call("looking up token", "POST", f"{_TOKEN}/lookup", {"token": token})
    else:
        response = ctx.call("looking up token", "GET", f"{_TOKEN}/lookup-self")
    return _output(ctx, response, args.field, "looking up token")


def run_renew(args: argparse.Namespace, ctx: Context) -> int:
    token: str | None = args.subject
    body: dict[str, Any] = {}
    if args.increment is not None:
        body["increment"] = duration_seconds(args.increment)
    if args.accessor:
        if not token:
            raise UsageError("Error: -accessor needs the ACCESSOR as its argument")
        path, body["accessor"] = f"{_TOKEN}/renew-accessor", token
    elif token:
        path, body["token"] = f"{_TOKEN}/renew", token
    else:
        path = f"{_TOKEN}/renew-self"
    response = ctx.call("renewing token", "POST", path, body)
    return _output(ctx, response, args.field, "renewing token")


def run_revoke(args: argparse.Namespace, ctx: Context) -> int:
    token: str | None = args.subject
    mode = args.mode or "all"
    if args.self and token:
        raise UsageError("Error: a TOKEN cannot be given with -self")
    if args.self and args.accessor:
        raise UsageError("Error: -self and -accessor cannot be used together")
    if args.accessor and mode != "all":
        raise UsageError("Error: -mode cannot be used with -accessor")
    if args.self and mode != "all":
        raise UsageError("Error: -mode cannot be used with -self")
    if not args.self and not token:
        raise UsageError("Error: a TOKEN (or -self) is required")
    if args.self:
        ctx.call("revoking token", "POST", f"{_TOKEN}/revoke-self", {})
    elif args.accessor:
        ctx.call("revoking token", "POST", f"{_TOKEN}/revoke-accessor", {"accessor": token})
    elif mode == "orphan":
        ctx.call("revoking token", "POST", f"{_TOKEN}/revoke-orphan", {"token": token})
    elif mode == "path":
        prefix = quote(str(token).strip().strip("/"), safe="/")
        ctx.call("revoking tokens", "POST", f"/v1/sys/leases/revoke-prefix/{prefix}", {})
    else:
        ctx.call("revoking token", "POST", f"{_TOKEN}/revoke", {"token": token})
    return success(ctx, "Success! Revoked token (if it existed)")


def run_capabilities(args: argparse.Namespace, ctx: Context) -> int:
    values: list[str] = [v for v in (args.subject, args.path) if v is not None]
    path = values[-1].strip().lstrip("/")
    body: dict[str, Any] = {"paths": [path]}
    if args.accessor:
        if len(values) != 2:
            raise UsageError("Error: -accessor needs ACCESSOR PATH")
        body["accessor"] = values[0]
        endpoint = "/v1/sys/capabilities-accessor"
    elif len(values) == 2:
        body["token"] = values[0]
        endpoint = "/v1/sys/capabilities"
    else:
        endpoint = "/v1/sys/capabilities-self"
    response = ctx.call("listing capabilities", "POST", endpoint, body) or {}
    data = response.get("data")
    source = data if isinstance(data, dict) else response
    found = source.get(path, source.get("capabilities"))
    capabilities = sorted(str(c) for c in found) if isinstance(found, list) else []
    if ctx.json:
        print_json(capabilities, ctx.out)
    else:
        ctx.print(", ".join(capabilities))
    return EXIT_OK


def register(subparsers: Subparsers, parents: list[argparse.ArgumentParser]) -> None:
    group = add_command(
        subparsers, "token", "create, look up, renew and revoke tokens; check capabilities"
    )
    commands = group.add_subparsers(
        title="subcommands", dest="token_command", metavar="SUBCOMMAND", required=True
    )

    create = add_command(commands, "create", "create a child token", parents=parents)
    add_option(create, "id", metavar="ID", help="the token's ID (root or sudo only)")
    add_option(create, "display-name", metavar="NAME", help="name shown in lookups and logs")
    add_option(create, "ttl", type=duration, metavar="DURATION", help="initial TTL")
    add_option(
        create,
        "explicit-max-ttl",
        type=duration,
        metavar="DURATION",
        help="hard limit on the token's life, renewals included",
    )
    add_option(
        create,
        "period",
        type=duration,
        metavar="DURATION",
        help="make a periodic token renewable by this much forever (root or sudo only)",
    )
    add_option(
        create,
        "policy",
        action="append",
        metavar="NAME",
        help="policy to attach (repeatable or comma-separated)",
    )
    add_option(
        create,
        "metadata",
        action="append",
        metavar="K=V",
        help="metadata to attach (repeatable)",
    )
    add_option(create, "use-limit", type=int, metavar="N", help="uses before it is revoked")
    add_switch(create, "orphan", "create a token with no parent (root or sudo only)")
    add_switch(create, "no-default-policy", 'do not attach the "default" policy')
    add_switch(create, "renewable", "whether the token can be renewed (default true)", default=True)
    add_option(create, "type", choices=("service", "batch"), help="token type (default service)")
    add_option(create, "role", metavar="ROLE", help="create it from this token role")
    add_option(create, "entity-alias", metavar="ALIAS", help="entity alias (with -role)")
    add_option(create, "field", metavar="NAME", help="print only this field (e.g. token), raw")
    create.set_defaults(handler=run_create)

    lookup = add_command(
        commands,
        "lookup",
        "print a token's properties (default: the client's own token)",
        parents=parents,
    )
    lookup.add_argument("subject", nargs="?", metavar="TOKEN")
    add_switch(lookup, "accessor", "the argument is an accessor, not a token")
    add_option(lookup, "field", metavar="NAME", help="print only this field, raw")
    lookup.set_defaults(handler=run_lookup)

    renew = add_command(
        commands,
        "renew",
        "extend a token's TTL (default: the client's own token)",
        parents=parents,
    )
    renew.add_argument("subject", nargs="?", metavar="TOKEN")
    add_option(
        renew,
        "increment",
        type=duration,
        metavar="DURATION",
        help="requested new TTL, from now (default: the token's own TTL)",
    )
    add_switch(renew, "accessor", "the argument is an accessor, not a token")
    add_option(renew, "field", metavar="NAME", help="print only this field, raw")
    renew.set_defaults(handler=run_renew)

    revoke = add_command(
        commands, "revoke", "revoke a token and (by default) its children", parents=parents
    )
    revoke.add_argument("subject", nargs="?", metavar="TOKEN")
    add_switch(revoke, "self", "revoke the client's own token")
    add_switch(revoke, "accessor", "the argument is an accessor, not a token")
    add_option(
        revoke,
        "mode",
        choices=("orphan", "path"),
        help="orphan: keep the children; path: revoke every token created under this path",
    )
    revoke.set_defaults(handler=run_revoke)

    capabilities = add_command(
        commands,
        "capabilities",
        "what a token may do on PATH (default: the client's own token)",
        parents=parents,
    )
    capabilities.add_argument("subject", nargs="?", metavar="TOKEN")
    capabilities.add_argument("path", metavar="PATH")
    add_switch(capabilities, "accessor", "the TOKEN argument is an accessor")
    capabilities.set_defaults(handler=run_capabilities)
