"""``coffer read|write|delete|list PATH``: raw access to any API path under /v1.

These are Vault's generic ("logical") commands; engines and auth methods get
dedicated commands later, but everything is reachable through these. Data for
``write`` follows Vault's ``k=v`` rules: ``k=@file`` reads a file, ``k=-``
reads stdin, ``\\@`` escapes a literal ``@``, a bare ``-`` or ``@file.json``
merges a JSON object, and repeated keys collect into a list.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import quote

from node.cli.errors import EXIT_OK, EXIT_USAGE, CliError, UsageError
from node.cli.flags import add_command, add_option, add_switch
from node.cli.http import ApiError, Json, TransportError
from node.cli.output import format_value, print_json, print_warnings, secret_rows, table

if TYPE_CHECKING:
    from node.cli.context import Context
    from node.cli.flags import Subparsers

__all__ = ["api_path", "parse_data", "register"]


def api_path(path: str, *, trailing_slash: bool = False) -> str:
    """``/v1/<path>`` with the user's path cleaned and percent-encoded."""
    clean = path.strip().strip("/")
    if not clean:
        raise UsageError("Error: a non-empty PATH is required")
    return "/v1/" + quote(clean, safe="/") + ("/" if trailing_slash else "")


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


def _print_field(ctx: Context, response: Json | None, field: str) -> int:
    """``-field``: one value, raw, for scripts (``$(coffer read -field=x ...)``)."""
    data = (response or {}).get("data")
    sources = [data if isinstance(data, dict) else {}, response or {}]
    for source in sources:
        if field in source:
            value = source[field]
            ctx.print(value if isinstance(value, str) else json.dumps(value))
            return EXIT_OK
    raise CliError(f'Field "{field}" not present in secret', EXIT_USAGE)


def _print_secret(ctx: Context, response: Json) -> None:
    if ctx.json:
        print_json(response, ctx.out)
        return
    print_warnings(response, ctx.err)
    rows = secret_rows(response)
    if rows:
        ctx.print(table(rows))


def _no_value(path: str) -> CliError:
    return CliError(f"No value found at {path}", EXIT_USAGE)


def _call_or_not_found(ctx: Context, doing: str, method: str, path: str, shown: str) -> Json | None:
    """A read-style call where 404 means "nothing there" (Vault prints no error list)."""
    try:
        _, response = ctx.client.request(method, path)
    except ApiError as exc:
        if exc.status == 404:
            raise _no_value(shown) from None
        raise CliError(f"Error {doing} {shown}: {exc}", EXIT_USAGE) from None
    except TransportError as exc:
        raise CliError(f"Error {doing} {shown}: {exc}", EXIT_USAGE) from None
    return response


def run_read(args: argparse.Namespace, ctx: Context) -> int:
    path: str = args.path
    response = _call_or_not_found(ctx, "reading", "GET", api_path(path), path)
    if response is None:
        raise _no_value(path)
    if args.field:
        return _print_field(ctx, response, args.field)
    _print_secret(ctx, response)
    return EXIT_OK


def run_write(args: argparse.Namespace, ctx: Context) -> int:
    path: str = args.path
    data = parse_data(list(args.data), ctx.stdin)
    if not data and not args.force:
        raise UsageError("Error: must supply data or use -force")
    response = ctx.call(f"writing data to {path}", "PUT", api_path(path), data)
    if args.field:
        return _print_field(ctx, response, args.field)
    if response is None or (not ctx.json and not secret_rows(response)):
        print_warnings(response, ctx.err)
        if not ctx.json:
            ctx.print(f"Success! Data written to: {path}")
        return EXIT_OK
    _print_secret(ctx, response)
    return EXIT_OK


def run_delete(args: argparse.Namespace, ctx: Context) -> int:
    path: str = args.path
    response = ctx.call(f"deleting {path}", "DELETE", api_path(path))
    if not ctx.json:
        print_warnings(response, ctx.err)
        ctx.print(f"Success! Data deleted (if it existed) at: {path}")
    elif response is not None:
        print_json(response, ctx.out)
    return EXIT_OK


def run_list(args: argparse.Namespace, ctx: Context) -> int:
    path: str = args.path
    response = _call_or_not_found(ctx, "listing", "LIST", api_path(path, trailing_slash=True), path)
    data = (response or {}).get("data")
    keys = data.get("keys") if isinstance(data, dict) else None
    if not isinstance(keys, list) or not keys:
        raise _no_value(path)
    if ctx.json:
        print_json(keys, ctx.out)
        return EXIT_OK
    print_warnings(response, ctx.err)
    ctx.print("Keys\n----")
    for key in keys:
        ctx.print(format_value(key))
    return EXIT_OK


def register(subparsers: Subparsers, parents: list[argparse.ArgumentParser]) -> None:
    read = add_command(subparsers, "read", "read data at PATH", parents=parents)
    read.add_argument("path", metavar="PATH")
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
    delete.set_defaults(handler=run_delete)

    listing = add_command(subparsers, "list", "list keys under PATH", parents=parents)
    listing.add_argument("path", metavar="PATH")
    listing.set_defaults(handler=run_list)
