"""``coffer audit enable|disable|list``: the audit devices (``sys/audit``).

Output and messages follow ``vault audit``; device options are given after
the type as ``K=V`` pairs (``coffer audit enable file file_path=/var/log/audit.log``).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from cli.common import key_values, mount_path, success
from cli.errors import EXIT_OK, EXIT_USAGE, CliError
from cli.flags import add_command, add_option, add_switch
from cli.output import grid, print_json, print_warnings

if TYPE_CHECKING:
    from cli.context import Context
    from cli.flags import Subparsers
    from cli.http import Json

__all__ = ["device_rows", "register"]


def _devices(response: Json | None) -> dict[str, dict[str, Any]]:
    """``path -> device`` from a ``sys/audit`` listing."""
    data = (response or {}).get("data")
    source = data if isinstance(data, dict) else (response or {})
    return {k: v for k, v in source.items() if k.endswith("/") and isinstance(v, dict)}


def device_rows(devices: Mapping[str, Mapping[str, Any]], detailed: bool) -> list[list[object]]:
    """Path | Type | Description (| Replication | Options), sorted by path."""
    rows: list[list[object]] = []
    for path, device in sorted(devices.items()):
        row: list[object] = [path, device.get("type", ""), device.get("description", "")]
        if detailed:
            options = device.get("options") if isinstance(device.get("options"), Mapping) else {}
            row.append("local" if device.get("local") else "replicated")
            row.append(" ".join(f"{k}={v}" for k, v in sorted((options or {}).items())))
        rows.append(row)
    return rows


def _enable(args: argparse.Namespace, ctx: Context) -> int:
    type_: str = args.type.strip()
    if not type_:
        raise CliError("Error: a TYPE is required", EXIT_USAGE)
    path = mount_path(args.path or type_)
    body = {
        "type": type_,
        "description": args.description or "",
        "options": key_values(args.options, "options"),
        "local": bool(args.local),
    }
    ctx.call("enabling audit device", "PUT", f"/v1/sys/audit/{quote(path.rstrip('/'))}", body)
    return success(ctx, f"Success! Enabled the {type_} audit device at: {path}")


def _disable(args: argparse.Namespace, ctx: Context) -> int:
    path = mount_path(args.path)
    ctx.call("disabling audit device", "DELETE", f"/v1/sys/audit/{quote(path.rstrip('/'))}")
    return success(ctx, f"Success! Disabled audit device (if it was enabled) at: {path}")


def _list(args: argparse.Namespace, ctx: Context) -> int:
    response = ctx.call("listing audit devices", "GET", "/v1/sys/audit")
    devices = _devices(response)
    if ctx.json:
        print_json(devices, ctx.out)
        return EXIT_OK
    print_warnings(response, ctx.err)
    if not devices:
        ctx.print("No audit devices are enabled.")
        return EXIT_USAGE
    header: tuple[str, ...] = ("Path", "Type", "Description")
    if args.detailed:
        header += ("Replication", "Options")
    ctx.print(grid(header, device_rows(devices, args.detailed)))
    return EXIT_OK


def register(subparsers: Subparsers, parents: list[argparse.ArgumentParser]) -> None:
    group = add_command(subparsers, "audit", "enable, list and disable audit devices")
    commands = group.add_subparsers(
        title="subcommands", dest="audit_command", metavar="SUBCOMMAND", required=True
    )

    enable = add_command(
        commands,
        "enable",
        "enable an audit device of TYPE (file, socket, syslog) with options K=V",
        parents=parents,
    )
    enable.add_argument("type", metavar="TYPE")
    enable.add_argument("options", nargs="*", metavar="K=V", help="device options")
    add_option(enable, "path", metavar="PATH", help="where to enable it (default: the TYPE)")
    add_option(enable, "description", metavar="TEXT", help="human-friendly description")
    add_switch(enable, "local", "local to this cluster (not replicated to other clusters)")
    enable.set_defaults(handler=_enable)

    disable = add_command(commands, "disable", "disable the audit device at PATH", parents=parents)
    disable.add_argument("path", metavar="PATH")
    disable.set_defaults(handler=_disable)

    listing = add_command(commands, "list", "list the enabled audit devices", parents=parents)
    add_switch(listing, "detailed", "show replication and options")
    listing.set_defaults(handler=_list)
