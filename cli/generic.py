"""``coffer read|write|delete|list PATH``: raw access to any API path under /v1.

These are Vault's generic ("logical") commands; KV, mounts, policies and
tokens have dedicated commands too, but everything is reachable through these.
``read PATH k=v`` and ``delete PATH k=v`` send the pairs as query parameters.
Data for ``write`` (and ``kv put``) follows Vault's ``k=v`` rules: ``k=@file`` reads a file, ``k=-``
reads stdin, ``\\@`` escapes a literal ``@``, a bare ``-`` or ``@file.json``
merges a JSON object, and repeated keys collect into a list.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from cli.common import (
    api_path,
    no_value,
    print_done,
    print_field,
    print_secret,
    success,
    with_query,
)
from cli.errors import EXIT_OK, CliError, UsageError
from cli.flags import add_command, add_option, add_switch
from cli.output import format_value, print_json, print_warnings, secret_rows

if TYPE_CHECKING:
    from cli.context import Context
    from cli.flags import Subparsers
    from cli.http import Json

__all__ = ["api_path", "parse_data", "print_list", "query_data", "register"]


def _json_object(text: str, source: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(f"Error parsing JSON from {source}: {exc}") from None
    if not isinstance(value, dict):
        raise CliError(f"Error: JSON from {source} must be an object")
    return value


def _read_file(name: str) -> str:
    try:
        return Path(name).read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"Error reading {name}: {exc.strerror or exc}") from None


def parse_data(items: list[str], stdin: TextIO) -> dict[str, Any]:
    """Turn ``k=v`` arguments into a request body, the way ``vault write`` does."""
    result: dict[str, Any] = {}

    def put(key: str, value: Any) -> None:
        if key in result:
            existing = result[key]
            result[key] = [*existing, value] if isinstance(existing, list) else [existing, value]
        else:
            result[key] = value

    for item in items:
        if item == "-":
            result.update(_json_object(stdin.read(), "stdin"))
            continue
        key, sep, value = item.partition("=")
        if not sep:
            if item.startswith("@"):
                result.update(_json_object(_read_file(item[1:]), item[1:]))
                continue
            raise UsageError(f"Error: invalid key/value pair {item!r}: format must be key=value")
        if not key:
            raise UsageError("Error: invalid key/value pair: the key must not be empty")
        if value.startswith("@"):
            value = _read_file(value[1:])
        elif value.startswith("\\@"):
            value = value[1:]
        elif value == "-":
            value = stdin.read()
        put(key, value)
    return result


def query_data(items: list[str], stdin: TextIO) -> dict[str, Any]:
    """``k=v`` arguments of ``read``/``delete``: sent as the query string."""
    return {
        key: json.dumps(value) if isinstance(value, dict | bool | int | float) else value
        for key, value in parse_data(items, stdin).items()
    }


def print_list(ctx: Context, response: Json | None, shown: str) -> int:
    """``Keys``/``----`` and one key a line, or a JSON array; no keys is "No value found"."""
    data = (response or {}).get("data")
    keys = data.get("keys") if isinstance(data, dict) else None
    if not isinstance(keys, list) or not keys:
        raise no_value(shown)
    if ctx.json:
        print_json(keys, ctx.out)
        return EXIT_OK
    print_warnings(response, ctx.err)
    ctx.print("Keys\n----")
    for key in keys:
        ctx.print(format_value(key))
    return EXIT_OK


def run_read(args: argparse.Namespace, ctx: Context) -> int:
    path: str = args.path
    query = query_data(list(args.data), ctx.stdin)
    response = ctx.fetch(f"reading {path}", "GET", with_query(api_path(path), query))
    if response is None:
        raise no_value(path)
    if args.field:
        return print_field(ctx, response, args.field)
    return print_secret(ctx, response)


def run_write(args: argparse.Namespace, ctx: Context) -> int:
    path: str = args.path
    data = parse_data(list(args.data), ctx.stdin)
    if not data and not args.force:
        raise UsageError("Error: must supply data or use -force")
    response = ctx.call(f"writing data to {path}", "PUT", api_path(path), data)
    if args.field:
        return print_field(ctx, response or {}, args.field)
    if response is None or (not ctx.json and not secret_rows(response)):
        print_warnings(response, ctx.err)
        return success(ctx, f"Success! Data written to: {path}")
    return print_secret(ctx, response)


def run_delete(args: argparse.Namespace, ctx: Context) -> int:
    path: str = args.path
    query = query_data(list(args.data), ctx.stdin)
    response = ctx.call(f"deleting {path}", "DELETE", with_query(api_path(path), query))
    return print_done(ctx, response, f"Success! Data deleted (if it existed) at: {path}")


def run_list(args: argparse.Namespace, ctx: Context) -> int:
    path: str = args.path
    response = ctx.fetch(f"listing {path}", "LIST", api_path(path, trailing_slash=True))
    return print_list(ctx, response, path)


def register(subparsers: Subparsers, parents: list[argparse.ArgumentParser]) -> None:
    read = add_command(
        subparsers, "read", "read data at PATH (k=v pairs go in the query)", parents=parents
    )
    read.add_argument("path", metavar="PATH")
    read.add_argument("data", nargs="*", metavar="DATA", help="k=v query parameters")
    add_option(read, "field", metavar="NAME", help="print only this field, raw")
    read.set_defaults(handler=run_read)

    write = add_command(
        subparsers,
        "write",
        "write data (k=v, k=@file, k=-, or - for a JSON object on stdin) to PATH",
        parents=parents,
    )
    write.add_argument("path", metavar="PATH")
    write.add_argument("data", nargs="*", metavar="DATA", help="k=v pairs")
    add_option(write, "field", metavar="NAME", help="print only this field, raw")
    add_switch(write, "force", "allow writing with no data")
    write.add_argument("-f", dest="force", action="store_const", const=True, help=argparse.SUPPRESS)
    write.set_defaults(handler=run_write)

    delete = add_command(subparsers, "delete", "delete data at PATH", parents=parents)
    delete.add_argument("path", metavar="PATH")
    delete.add_argument("data", nargs="*", metavar="DATA", help="k=v query parameters")
    delete.set_defaults(handler=run_delete)

    listing = add_command(subparsers, "list", "list keys under PATH", parents=parents)
    listing.add_argument("path", metavar="PATH")
    listing.set_defaults(handler=run_list)
