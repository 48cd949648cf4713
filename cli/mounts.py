"""``coffer secrets ...`` and ``coffer auth ...``: the mount tables.

Secrets engines live in ``sys/mounts``, auth methods in ``sys/auth``; both
tables have the same shape (enable, disable, list, tune), and engines can be
moved with ``sys/remount``. Output and messages follow ``vault secrets`` and
``vault auth``.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from cli.common import key_values, mount_path, success
from cli.errors import EXIT_OK, CliError
from cli.flags import add_command, add_option, add_switch, duration
from cli.output import format_value, grid, print_json, print_warnings

if TYPE_CHECKING:
    from cli.context import Context
    from cli.flags import Subparsers
    from cli.http import Json

__all__ = ["detailed_rows", "mount_rows", "register"]

_NO_TTL_TYPES = frozenset({"system", "cubbyhole", "identity", "ns_system", "ns_cubbyhole"})
_SIMPLE_HEADER = ("Path", "Type", "Accessor", "Description")
_DETAILED_HEADER = (
    "Path",
    "Plugin",
    "Accessor",
    "Default TTL",
    "Max TTL",
    "Force No Cache",
    "Replication",
    "Seal Wrap",
    "External Entropy Access",
    "Options",
    "Description",
    "UUID",
)


class _Table:
    """Which table a command works on, and how Vault words it."""

    def __init__(self, api: str, thing: str) -> None:
        self.api = api  # "mounts" or "auth"
        self.thing = thing  # "secrets engine" or "auth method"

    def path(self, mount: str, suffix: str = "") -> str:
        return f"/v1/sys/{self.api}/{quote(mount.rstrip('/'))}{suffix}"


SECRETS = _Table("mounts", "secrets engine")
AUTH = _Table("auth", "auth method")


def _mounts(response: Json | None) -> dict[str, dict[str, Any]]:
    """``path -> entry`` from a ``sys/mounts`` or ``sys/auth`` listing."""
    data = (response or {}).get("data")
    source = data if isinstance(data, dict) else (response or {})
    return {k: v for k, v in source.items() if k.endswith("/") and isinstance(v, dict)}


def _ttl_cell(entry: Mapping[str, Any], key: str) -> str:
    if entry.get("type") in _NO_TTL_TYPES:
        return "n/a"
    config = entry.get("config")
    value = config.get(key) if isinstance(config, Mapping) else None
    return str(value) if isinstance(value, int) and value else "system"


def mount_rows(mounts: Mapping[str, Mapping[str, Any]]) -> list[list[object]]:
    """Path | Type | Accessor | Description, sorted by path."""
    return [
        [path, entry.get("type", ""), entry.get("accessor", ""), entry.get("description", "")]
        for path, entry in sorted(mounts.items())
    ]


def detailed_rows(mounts: Mapping[str, Mapping[str, Any]]) -> list[list[object]]:
    """The ``-detailed`` columns of ``vault secrets list``."""
    rows: list[list[object]] = []
    for path, entry in sorted(mounts.items()):
        config = entry.get("config") if isinstance(entry.get("config"), Mapping) else {}
        options = entry.get("options") if isinstance(entry.get("options"), Mapping) else {}
        rows.append(
            [
                path,
                entry.get("type", ""),
                entry.get("accessor", ""),
                _ttl_cell(entry, "default_lease_ttl"),
                _ttl_cell(entry, "max_lease_ttl"),
                bool((config or {}).get("force_no_cache")),
                "local" if entry.get("local") else "replicated",
                bool(entry.get("seal_wrap")),
                bool(entry.get("external_entropy_access")),
                format_value(dict(options or {})),
                entry.get("description", ""),
                entry.get("uuid", ""),
            ]
        )
    return rows


def _config(args: argparse.Namespace) -> dict[str, Any]:
    config: dict[str, Any] = {}
    for name in ("default_lease_ttl", "max_lease_ttl"):
        value = getattr(args, name, None)
        if value is not None:
            config[name] = value
    if getattr(args, "force_no_cache", None) is not None:
        config["force_no_cache"] = args.force_no_cache
    return config


def _options(args: argparse.Namespace) -> dict[str, str]:
    options = key_values(getattr(args, "options", None), "options")
    version = getattr(args, "version", None)
    if version is not None:
        options["version"] = str(version)
    return options


# --- handlers ------------------------------------------------------------------------------


def _enable(args: argparse.Namespace, ctx: Context, table: _Table) -> int:
    type_: str = args.type.strip()
    if not type_:
        raise CliError("Error: a TYPE is required")
    path = mount_path(args.path or type_)
    body = {
        "type": type_,
        "description": args.description or "",
        "config": _config(args),
        "options": _options(args),
        "local": bool(args.local),
        "seal_wrap": bool(args.seal_wrap),
    }
    doing = f"enabling {type_} auth" if table is AUTH else "enabling"
    ctx.call(doing, "POST", table.path(path), body)
    if table is AUTH:
        return success(ctx, f"Success! Enabled {type_} auth method at: {path}")
    return success(ctx, f"Success! Enabled the {type_} secrets engine at: {path}")


def _disable(args: argparse.Namespace, ctx: Context, table: _Table) -> int:
    path = mount_path(args.path)
    ctx.call(f"disabling {table.thing} at {path}", "DELETE", table.path(path))
    return success(ctx, f"Success! Disabled the {table.thing} (if it existed) at: {path}")


def _list(args: argparse.Namespace, ctx: Context, table: _Table) -> int:
    doing = "listing secrets engines" if table is SECRETS else "listing enabled authentications"
    response = ctx.call(doing, "GET", f"/v1/sys/{table.api}")
    mounts = _mounts(response)
    if ctx.json:
        print_json(mounts, ctx.out)
        return EXIT_OK
    print_warnings(response, ctx.err)
    if args.detailed:
        ctx.print(grid(_DETAILED_HEADER, detailed_rows(mounts)))
    else:
        ctx.print(grid(_SIMPLE_HEADER, mount_rows(mounts)))
    return EXIT_OK


def _tune(args: argparse.Namespace, ctx: Context, table: _Table) -> int:
    path = mount_path(args.path)
    body: dict[str, Any] = _config(args)
    if args.description is not None:
        body["description"] = args.description
    options = _options(args)
    if options:
        body["options"] = options
    if getattr(args, "listing_visibility", None):
        body["listing_visibility"] = args.listing_visibility
    ctx.call(f"tuning {table.thing} {path}", "POST", table.path(path, "/tune"), body)
    return success(ctx, f"Success! Tuned the {table.thing} at: {path}")


def run_secrets_move(args: argparse.Namespace, ctx: Context) -> int:
    source, target = mount_path(args.source), mount_path(args.destination)
    response = ctx.call(
        f"moving secrets engine {source} to {target}",
        "POST",
        "/v1/sys/remount",
        {"from": source, "to": target},
    )
    if ctx.json:
        if response is not None:
            print_json(response, ctx.out)
        return EXIT_OK
    data = (response or {}).get("data")
    migration = (data or {}).get("migration_id") if isinstance(data, dict) else None
    if migration:
        ctx.print(
            f"Success! Finished moving secrets engine {source} to {target}, "
            f"with migration ID {migration}"
        )
    else:
        ctx.print(f"Success! Moved secrets engine {source} to: {target}")
    return EXIT_OK


# --- parser --------------------------------------------------------------------------------


def _ttl_flags(parser: argparse.ArgumentParser) -> None:
    add_option(
        parser,
        "default-lease-ttl",
        type=duration,
        metavar="DURATION",
        help="default TTL of leases and tokens (default: the system's)",
    )
    add_option(
        parser,
        "max-lease-ttl",
        type=duration,
        metavar="DURATION",
        help="maximum TTL of leases and tokens (default: the system's)",
    )


def _enable_parser(
    commands: Subparsers, parents: list[argparse.ArgumentParser], table: _Table
) -> argparse.ArgumentParser:
    noun = "secrets engine" if table is SECRETS else "auth method"
    parser = add_command(
        commands,
        "enable",
        f"enable a {noun} of TYPE at -path (default: TYPE/)",
        parents=parents,
    )
    parser.add_argument("type", metavar="TYPE")
    add_option(parser, "path", metavar="PATH", help="where to mount it (default: the TYPE)")
    add_option(parser, "description", metavar="TEXT", help="human-friendly description")
    _ttl_flags(parser)
    add_switch(parser, "force-no-cache", "disable caching", default=None)
    add_switch(parser, "local", "local to this cluster (not replicated)")
    add_switch(parser, "seal-wrap", "seal-wrap its storage")
    add_option(
        parser, "options", action="append", metavar="K=V", help="plugin options (repeatable)"
    )
    return parser


def _tune_parser(
    commands: Subparsers, parents: list[argparse.ArgumentParser], table: _Table
) -> argparse.ArgumentParser:
    parser = add_command(
        commands, "tune", f"change the settings of the {table.thing} at PATH", parents=parents
    )
    parser.add_argument("path", metavar="PATH")
    add_option(parser, "description", metavar="TEXT", help="new description")
    _ttl_flags(parser)
    add_switch(parser, "force-no-cache", "disable caching", default=None)
    add_option(
        parser,
        "listing-visibility",
        choices=("unauth", "hidden"),
        help="whether the mount is listed for unauthenticated UI users",
    )
    add_option(
        parser, "options", action="append", metavar="K=V", help="plugin options (repeatable)"
    )
    return parser


def register(subparsers: Subparsers, parents: list[argparse.ArgumentParser]) -> None:
    _register_secrets(subparsers, parents)
    _register_auth(subparsers, parents)


def _register_secrets(subparsers: Subparsers, parents: list[argparse.ArgumentParser]) -> None:
    group = add_command(subparsers, "secrets", "enable, list, tune, move and disable engines")
    commands = group.add_subparsers(
        title="subcommands", dest="secrets_command", metavar="SUBCOMMAND", required=True
    )

    enable = _enable_parser(commands, parents, SECRETS)
    add_option(enable, "version", type=int, metavar="N", help='KV version (sets options "version")')
    enable.set_defaults(handler=lambda a, c: _enable(a, c, SECRETS))

    disable = add_command(
        commands, "disable", "disable the engine at PATH (its data is lost)", parents=parents
    )
    disable.add_argument("path", metavar="PATH")
    disable.set_defaults(handler=lambda a, c: _disable(a, c, SECRETS))

    listing = add_command(commands, "list", "list the enabled secrets engines", parents=parents)
    add_switch(listing, "detailed", "show TTLs, replication, options and more")
    listing.set_defaults(handler=lambda a, c: _list(a, c, SECRETS))

    tune = _tune_parser(commands, parents, SECRETS)
    add_option(tune, "version", type=int, metavar="N", help='KV version (sets options "version")')
    tune.set_defaults(handler=lambda a, c: _tune(a, c, SECRETS))

    move = add_command(
        commands, "move", "move the engine at SOURCE to DESTINATION", parents=parents
    )
    move.add_argument("source", metavar="SOURCE")
    move.add_argument("destination", metavar="DESTINATION")
    move.set_defaults(handler=run_secrets_move)


def _register_auth(subparsers: Subparsers, parents: list[argparse.ArgumentParser]) -> None:
    group = add_command(subparsers, "auth", "enable, list, tune and disable auth methods")
    commands = group.add_subparsers(
        title="subcommands", dest="auth_command", metavar="SUBCOMMAND", required=True
    )

    enable = _enable_parser(commands, parents, AUTH)
    enable.set_defaults(handler=lambda a, c: _enable(a, c, AUTH))

    disable = add_command(commands, "disable", "disable the auth method at PATH", parents=parents)
    disable.add_argument("path", metavar="PATH")
    disable.set_defaults(handler=lambda a, c: _disable(a, c, AUTH))

    listing = add_command(commands, "list", "list the enabled auth methods", parents=parents)
    add_switch(listing, "detailed", "show TTLs, replication, options and more")
    listing.set_defaults(handler=lambda a, c: _list(a, c, AUTH))

    tune = _tune_parser(commands, parents, AUTH)
    tune.set_defaults(handler=lambda a, c: _tune(a, c, AUTH))
