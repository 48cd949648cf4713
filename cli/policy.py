"""``coffer policy write|read|list|delete|fmt``: ACL policies, like ``vault policy``.

Policies live at ``sys/policies/acl/<name>``; names are lower-cased, as
Vault does. ``fmt`` works locally: it checks the file is a valid policy,
rewrites it in canonical HCL (:mod:`cli.hclfmt`), and verifies that the
result means exactly the same rules before replacing the file.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from cli.common import read_input, success
from cli.errors import EXIT_OK, EXIT_USAGE, CliError, UsageError
from cli.flags import add_command
from cli.generic import print_list
from cli.hclfmt import HclFormatError, format_hcl
from cli.output import print_json

if TYPE_CHECKING:
    from cli.context import Context
    from cli.flags import Subparsers

__all__ = ["register"]


def _name(raw: str) -> str:
    name = raw.strip().lower()
    if not name:
        raise UsageError("Error: a policy NAME is required")
    return name


def _path(name: str) -> str:
    return "/v1/sys/policies/acl/" + quote(name, safe="")


def run_write(args: argparse.Namespace, ctx: Context) -> int:
    name = _name(args.name)
    text = read_input(ctx, args.file, "policy")
    if not text.strip():
        raise CliError(f"Error: the policy in {args.file} is empty")
    ctx.call(f"uploading policy {name}", "PUT", _path(name), {"policy": text})
    return success(ctx, f"Success! Uploaded policy: {name}")


def run_read(args: argparse.Namespace, ctx: Context) -> int:
    name = _name(args.name)
    response = ctx.fetch(f"reading policy named {name}", "GET", _path(name))
    data = (response or {}).get("data")
    text = data.get("policy") if isinstance(data, dict) else None
    if not isinstance(text, str):
        raise CliError(f"No policy named: {name}", EXIT_USAGE)
    if ctx.json:
        print_json({"policy": text}, ctx.out)
    else:
        ctx.print(text.strip())
    return EXIT_OK


def run_list(args: argparse.Namespace, ctx: Context) -> int:
    response = ctx.fetch("listing policies", "LIST", "/v1/sys/policies/acl/")
    if ctx.json:
        return print_list(ctx, response, "sys/policies/acl")
    data = (response or {}).get("data")
    keys = data.get("keys") if isinstance(data, dict) else None
    for key in keys if isinstance(keys, list) else []:
        ctx.print(str(key))
    return EXIT_OK


def run_delete(args: argparse.Namespace, ctx: Context) -> int:
    name = _name(args.name)
    ctx.call(f"deleting {name}", "DELETE", _path(name))
    return success(ctx, f"Success! Deleted policy: {name}")


def _rules(name: str, text: str) -> object:
    """The parsed rules (the server's own parser), or the reason the policy is invalid."""
    from node.policy.parser import parse_policy
    from sdk.errors import InvalidRequestError

    try:
        return parse_policy(name, text).rules
    except InvalidRequestError as exc:
        raise CliError(f"Error parsing policy: {'; '.join(exc.messages)}") from None


def run_fmt(args: argparse.Namespace, ctx: Context) -> int:
    path = Path(args.file)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"Error reading {path}: {exc.strerror or exc}") from None
    before = _rules(path.stem, text)
    try:
        formatted = format_hcl(text)
    except HclFormatError as exc:
        raise CliError(f"Error formatting policy: {exc}") from None
    if _rules(path.stem, formatted) != before:
        raise CliError(
            "Error formatting policy: the formatted policy would not mean the same; "
            f"{path} was left unchanged"
        )
    if formatted != text:
        try:
            path.write_text(formatted, encoding="utf-8")
        except OSError as exc:
            raise CliError(f"Error writing {path}: {exc.strerror or exc}") from None
    ctx.print(f"Success! Formatted policy: {path}")
    return EXIT_OK


def register(subparsers: Subparsers, parents: list[argparse.ArgumentParser]) -> None:
    group = add_command(subparsers, "policy", "write, read, list, delete and format ACL policies")
    commands = group.add_subparsers(
        title="subcommands", dest="policy_command", metavar="SUBCOMMAND", required=True
    )

    write = add_command(
        commands, "write", "upload the policy in FILE ('-' reads stdin) as NAME", parents=parents
    )
    write.add_argument("name", metavar="NAME")
    write.add_argument("file", metavar="FILE")
    write.set_defaults(handler=run_write)

    read = add_command(commands, "read", "print the policy NAME", parents=parents)
    read.add_argument("name", metavar="NAME")
    read.set_defaults(handler=run_read)

    listing = add_command(commands, "list", "list the policy names", parents=parents)
    listing.set_defaults(handler=run_list)

    delete = add_command(commands, "delete", "delete the policy NAME", parents=parents)
    delete.add_argument("name", metavar="NAME")
    delete.set_defaults(handler=run_delete)

    fmt = add_command(
        commands,
        "fmt",
        "rewrite the HCL policy in FILE in canonical format (checks it too; local only)",
    )
    fmt.add_argument("file", metavar="FILE")
    fmt.set_defaults(handler=run_fmt)
