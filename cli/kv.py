"""``coffer kv ...``: the KV secrets engine, version 1 or 2, like ``vault kv``.

Each command first finds the mount under the path and its KV version, as
Vault's CLI does: ``GET sys/internal/ui/mounts/<path>``; if the server has no
such endpoint (404/405) or refuses it (403), the longest matching mount in
``GET sys/mounts``; if that is refused too (a narrowly scoped token), the
first path segment is taken as a version 2 mount. These look-ups are never
response-wrapped. ``-mount=NAME`` names the mount; the path is then relative
to it.

Version 2 paths gain the API segment (``secret/app`` -> ``secret/data/app``,
``secret/metadata/app``, ...); messages show that full path, as Vault does.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from cli.common import (
    api_path,
    key_values,
    mount_path,
    no_value,
    print_done,
    print_field,
    print_secret,
    split_list,
    success,
    with_query,
)
from cli.errors import EXIT_OK, EXIT_USAGE, CliError, UsageError
from cli.flags import add_command, add_option, add_switch, duration
from cli.generic import parse_data, print_list
from cli.http import ApiError, TransportError
from cli.output import (
    data_rows,
    header_for_map,
    pad_equal_signs,
    print_json,
    print_warnings,
    secret_rows,
    table,
)

if TYPE_CHECKING:
    from cli.context import Context
    from cli.flags import Subparsers
    from cli.http import Json
    from cli.main import Handler

__all__ = ["KvPath", "kv_version", "register", "resolve"]

#: Answers to the preflight that mean "ask another way", not "fail".
_FALLBACK_STATUSES = frozenset({400, 403, 404, 405})
_PATCH_TYPE = "application/merge-patch+json"


@dataclass(frozen=True, slots=True)
class KvPath:
    """A KV path split into its mount (``secret/``) and the rest (``app/db``)."""

    mount: str
    relative: str
    version: int

    def api(self, segment: str) -> str:
        """The API path: ``secret/<segment>/app/db`` on v2, ``secret/app/db`` on v1."""
        parts = [self.mount.rstrip("/")]
        if self.version == 2:
            parts.append(segment)
        if self.relative:
            parts.append(self.relative)
        return "/".join(parts)


def kv_version(entry: Mapping[str, Any]) -> int:
    """2 for ``kv-v2`` or ``options.version = "2"``; 1 for anything else."""
    if entry.get("type") == "kv-v2":
        return 2
    options = entry.get("options")
    if isinstance(options, Mapping) and str(options.get("version") or "") == "2":
        return 2
    return 1


def _preflight_error(path: str, exc: Exception) -> CliError:
    return CliError(f"Error determining the KV version of {path}: {exc}", EXIT_USAGE)


def _mount_table(response: Json | None) -> dict[str, Any]:
    data = (response or {}).get("data")
    mounts = data if isinstance(data, dict) else (response or {})
    return {k: v for k, v in mounts.items() if k.endswith("/") and isinstance(v, dict)}


def _detect(ctx: Context, path: str) -> tuple[str, int]:
    """``(mount with trailing slash, version)`` for ``path``; see the module doc."""
    first = mount_path(path.split("/", 1)[0])
    try:
        response = ctx.send("GET", "/v1/sys/internal/ui/mounts/" + quote(path), wrap=False)
    except ApiError as exc:
        if exc.status not in _FALLBACK_STATUSES:
            raise _preflight_error(path, exc) from None
    except TransportError as exc:
        raise _preflight_error(path, exc) from None
    else:
        data = (response or {}).get("data")
        if isinstance(data, dict) and data:
            mount = data.get("path")
            found = mount_path(mount) if isinstance(mount, str) and mount else first
            return found, kv_version(data)
    try:
        response = ctx.send("GET", "/v1/sys/mounts", wrap=False)
    except ApiError as exc:
        if exc.status == 403:
            return first, 2  # cannot see the mount table: assume the common case
        raise _preflight_error(path, exc) from None
    except TransportError as exc:
        raise _preflight_error(path, exc) from None
    mounts = _mount_table(response)
    matches = [m for m in mounts if (path.rstrip("/") + "/").startswith(m)]
    if not matches:
        return first, 1  # no such mount: send the path as given and let the server answer
    best = max(matches, key=len)
    return best, kv_version(mounts[best])


def resolve(ctx: Context, path: str | None, mount: str | None) -> KvPath:
    """Split ``path`` (relative to ``-mount`` if given) and find the KV version."""
    clean = (path or "").strip().strip("/")
    if mount:
        mount_name = mount_path(mount)
        _, version = _detect(ctx, mount_name.rstrip("/"))
        return KvPath(mount_name, clean, version)
    if not clean:
        raise UsageError("Error: a non-empty PATH is required")
    found, version = _detect(ctx, clean)
    relative = clean[len(found) :] if (clean + "/").startswith(found) else clean
    return KvPath(found, relative.strip("/"), version)


def _versions(values: list[str] | None) -> list[int]:
    versions: list[int] = []
    for item in split_list(values):
        try:
            number = int(item)
        except ValueError:
            raise UsageError(f"Error: invalid version {item!r} in -versions") from None
        if number < 0:
            raise UsageError(f"Error: invalid version {item!r} in -versions")
        versions.append(number)
    return versions


def _v2_only(target: KvPath, what: str) -> None:
    if target.version != 2:
        raise CliError(f"Error: {what} is not supported on KV version 1", EXIT_USAGE)


def _section(ctx: Context, title: str, data: Mapping[str, Any]) -> None:
    ctx.print(header_for_map(title, data))
    rows = data_rows(data)
    if rows:
        ctx.print(table(rows))


def _print_path(ctx: Context, title: str, full: str) -> None:
    ctx.print(pad_equal_signs(title, len(full)))
    ctx.print(full)
    ctx.print()


def _print_written(
    ctx: Context, target: KvPath, full: str, response: Json | None, field: str | None
) -> int:
    """Output of ``put``/``patch``: the new version's metadata on v2."""
    if field:
        return print_field(ctx, response or {}, field)
    if response is None:
        return success(ctx, f"Success! Data written to: {full}")
    if ctx.json:
        print_json(response, ctx.out)
        return EXIT_OK
    data = response.get("data")
    if target.version != 2 or not isinstance(data, dict):
        return print_secret(ctx, response)
    print_warnings(response, ctx.err)
    _print_path(ctx, "Secret Path", full)
    _section(ctx, "Metadata", data)
    return EXIT_OK


def _cas_options(cas: int | None) -> dict[str, Any]:
    return {"options": {"cas": cas}} if cas is not None and cas >= 0 else {}


# --- get / put / patch ---------------------------------------------------------------


def run_get(args: argparse.Namespace, ctx: Context) -> int:
    target = resolve(ctx, args.path, args.mount)
    if args.version is not None:
        _v2_only(target, "-version")
    full = target.api("data")
    query = {"version": args.version} if args.version else {}
    response = ctx.fetch(f"reading {full}", "GET", with_query(api_path(full), query))
    if response is None:
        raise no_value(full)
    data = response.get("data")
    if args.field:
        if target.version != 2:
            return print_field(ctx, response, args.field)
        values = data.get("data") if isinstance(data, dict) else None
        if not isinstance(values, dict):
            raise CliError(f"No data found at {full}", EXIT_USAGE)
        if args.field == "data" and "data" not in values:
            return print_field(ctx, {"data": {"data": values}}, "data")
        return print_field(ctx, {"data": values}, args.field)
    if ctx.json:
        print_json(response, ctx.out)
        return EXIT_OK
    print_warnings(response, ctx.err)
    if not isinstance(data, dict):
        return EXIT_OK
    if target.version == 2:
        _print_path(ctx, "Secret Path", full)
        metadata = data.get("metadata")
        if isinstance(metadata, dict):
            _section(ctx, "Metadata", metadata)
            ctx.print()
        values = data.get("data")
        if isinstance(values, dict):
            _section(ctx, "Data", values)
        return EXIT_OK
    _section(ctx, "Data", data)
    return EXIT_OK


def run_put(args: argparse.Namespace, ctx: Context) -> int:
    data = parse_data(list(args.data), ctx.stdin)
    if not data:
        raise UsageError("Error: must supply data (key=value, @file.json or - for stdin)")
    target = resolve(ctx, args.path, args.mount)
    full = target.api("data")
    if target.version == 2:
        body: dict[str, Any] = {"data": data, **_cas_options(args.cas)}
    else:
        if args.cas is not None and args.cas >= 0:
            raise CliError("Error: -cas is not supported on KV version 1", EXIT_USAGE)
        body = data
    response = ctx.call(f"writing data to {full}", "PUT", api_path(full), body)
    return _print_written(ctx, target, full, response, args.field)


def _patch_hint(status: int) -> str:
    if status == 403:
        return '\n\nThe token may lack the "patch" capability; try again with -method=rw.'
    if status == 405:
        return "\n\nThe server does not support PATCH on this path; try again with -method=rw."
    return ""


def run_patch(args: argparse.Namespace, ctx: Context) -> int:
    data = parse_data(list(args.data), ctx.stdin)
    remove: list[str] = list(args.remove_data or [])
    if not data and not remove:
        raise UsageError("Error: must supply data (key=value, @file.json or - for stdin)")
    target = resolve(ctx, args.path, args.mount)
    _v2_only(target, "patch")
    full = target.api("data")
    if args.method == "rw":
        response = _read_then_write(ctx, full, data, remove, args.cas)
    else:
        body = {"data": {**data, **dict.fromkeys(remove)}, **_cas_options(args.cas)}
        try:
            response = ctx.send("PATCH", api_path(full), body, content_type=_PATCH_TYPE)
        except ApiError as exc:
            if exc.status == 404:
                raise no_value(full) from None
            message = f"Error writing data to {full}: {exc}{_patch_hint(exc.status)}"
            raise CliError(message, EXIT_USAGE) from None
        except TransportError as exc:
            raise CliError(f"Error writing data to {full}: {exc}", EXIT_USAGE) from None
    return _print_written(ctx, target, full, response, args.field)


def _read_then_write(
    ctx: Context, full: str, data: dict[str, Any], remove: list[str], cas: int | None
) -> Json | None:
    """``-method=rw``: read the current version, merge, write it back with check-and-set."""
    current = ctx.fetch(f"reading {full}", "GET", api_path(full), wrap=False)
    body = (current or {}).get("data")
    values = body.get("data") if isinstance(body, dict) else None
    metadata = body.get("metadata") if isinstance(body, dict) else None
    if not isinstance(values, dict) or not isinstance(metadata, dict):
        raise CliError(f"No value found at {full}; patch only works on existing data", EXIT_USAGE)
    merged = {**values, **data}
    for key in remove:
        merged.pop(key, None)
    version = cas if cas is not None and cas >= 0 else metadata.get("version")
    return ctx.call(
        f"writing data to {full}",
        "PUT",
        api_path(full),
        {"data": merged, "options": {"cas": version}},
    )


# --- delete / undelete / destroy / list ------------------------------------------------


def run_delete(args: argparse.Namespace, ctx: Context) -> int:
    target = resolve(ctx, args.path, args.mount)
    versions = _versions(args.versions)
    full = target.api("data")
    if versions:
        _v2_only(target, "-versions")
        body = {"versions": versions}
        response = ctx.call(f"deleting {full}", "PUT", api_path(target.api("delete")), body)
    else:
        response = ctx.call(f"deleting {full}", "DELETE", api_path(full))
    return print_done(ctx, response, f"Success! Data deleted (if it existed) at: {full}")


def _change_versions(args: argparse.Namespace, ctx: Context, segment: str, doing: str) -> int:
    versions = _versions(args.versions)
    if not versions:
        raise UsageError(f'Error: no versions provided; use "-versions" to say which to {doing}')
    target = resolve(ctx, args.path, args.mount)
    _v2_only(target, segment.capitalize())
    full = target.api(segment)
    response = ctx.call(f"writing data to {full}", "PUT", api_path(full), {"versions": versions})
    return print_done(ctx, response, f"Success! Data written to: {full}")


def run_undelete(args: argparse.Namespace, ctx: Context) -> int:
    return _change_versions(args, ctx, "undelete", "undelete")


def run_destroy(args: argparse.Namespace, ctx: Context) -> int:
    return _change_versions(args, ctx, "destroy", "destroy")


def run_list(args: argparse.Namespace, ctx: Context) -> int:
    if not args.path and not args.mount:
        raise UsageError("Error: a PATH (or -mount) is required")
    target = resolve(ctx, args.path, args.mount)
    full = target.api("metadata")
    response = ctx.fetch(f"listing {full}", "LIST", api_path(full, trailing_slash=True))
    return print_list(ctx, response, full)


# --- metadata ---------------------------------------------------------------------------


def run_metadata_get(args: argparse.Namespace, ctx: Context) -> int:
    target = resolve(ctx, args.path, args.mount)
    _v2_only(target, "Metadata")
    full = target.api("metadata")
    response = ctx.fetch(f"reading {full}", "GET", api_path(full))
    if response is None:
        raise no_value(full)
    if args.field:
        return print_field(ctx, response, args.field)
    if ctx.json:
        print_json(response, ctx.out)
        return EXIT_OK
    data = dict(response.get("data") or {})
    versions = data.pop("versions", None)
    if not isinstance(versions, dict):
        raise no_value(full)
    print_warnings(response, ctx.err)
    _print_path(ctx, "Metadata Path", full)
    ctx.print(header_for_map("Metadata", data))
    rows = secret_rows({**response, "data": data})
    if rows:
        ctx.print(table(rows))
    numbered = sorted((int(k), v) for k, v in versions.items() if str(k).isdigit())
    for number, info in numbered:
        if isinstance(info, dict):
            ctx.print()
            _section(ctx, f"Version {number}", info)
    return EXIT_OK


def run_metadata_put(args: argparse.Namespace, ctx: Context) -> int:
    target = resolve(ctx, args.path, args.mount)
    _v2_only(target, "Metadata")
    full = target.api("metadata")
    body: dict[str, Any] = {}
    if args.max_versions is not None and args.max_versions >= 0:
        body["max_versions"] = args.max_versions
    if args.cas_required is not None:
        body["cas_required"] = args.cas_required
    if args.delete_version_after is not None:
        body["delete_version_after"] = args.delete_version_after
    if args.custom_metadata:
        body["custom_metadata"] = key_values(args.custom_metadata, "custom-metadata")
    response = ctx.call(f"writing data to {full}", "PUT", api_path(full), body)
    if response is None or not secret_rows(response):
        return print_done(ctx, response, f"Success! Data written to: {full}")
    return print_secret(ctx, response)


def run_metadata_delete(args: argparse.Namespace, ctx: Context) -> int:
    target = resolve(ctx, args.path, args.mount)
    _v2_only(target, "Metadata")
    full = target.api("metadata")
    response = ctx.call(f"deleting {full}", "DELETE", api_path(full))
    return print_done(ctx, response, f"Success! Data deleted (if it existed) at: {full}")


# --- parser -------------------------------------------------------------------------------


def _path_command(
    commands: Subparsers,
    name: str,
    summary: str,
    handler: Handler,
    parents: list[argparse.ArgumentParser],
    *,
    nargs: str | None = None,
) -> argparse.ArgumentParser:
    """A KV subcommand taking PATH and ``-mount`` (PATH is then relative to the mount)."""
    parser = add_command(commands, name, summary, parents=parents)
    parser.add_argument("path", nargs=nargs, metavar="PATH")
    add_option(
        parser,
        "mount",
        metavar="NAME",
        help="the KV mount; PATH is then relative to it (e.g. -mount=secret app/db)",
    )
    parser.set_defaults(handler=handler)
    return parser


def _versions_flag(parser: argparse.ArgumentParser, what: str) -> None:
    add_option(
        parser,
        "versions",
        action="append",
        metavar="N[,N...]",
        help=f"versions to {what} (comma-separated or repeated)",
    )


def register(subparsers: Subparsers, parents: list[argparse.ArgumentParser]) -> None:
    kv = add_command(
        subparsers,
        "kv",
        "KV secrets engine commands (version 1 and 2)",
        description=(
            "Read and write secrets in a KV secrets engine; the mount's version is "
            "detected.\n\n"
            "  coffer kv put secret/app user=admin pass=@pass.txt\n"
            "  coffer kv get -field=pass secret/app\n"
            "  coffer kv get -mount=secret -version=1 app"
        ),
    )
    commands = kv.add_subparsers(
        title="subcommands", dest="kv_command", metavar="SUBCOMMAND", required=True
    )
    data_help = "k=v, k=@file, k=-, @file.json, -"

    get = _path_command(
        commands, "get", "read a secret (-version for an older one)", run_get, parents
    )
    add_option(get, "version", type=int, metavar="N", help="version to read (v2; default latest)")
    add_option(get, "field", metavar="NAME", help="print only this field of the data, raw")

    put = _path_command(
        commands,
        "put",
        "write a secret (replaces all of its data; a new version on v2)",
        run_put,
        parents,
    )
    put.add_argument("data", nargs="*", metavar="DATA", help=data_help)
    add_option(put, "cas", type=int, metavar="N", help="check-and-set: write only if N is current")
    add_option(put, "field", metavar="NAME", help="print only this field of the response, raw")

    patch = _path_command(
        commands, "patch", "update some keys of a secret (KV v2 only)", run_patch, parents
    )
    patch.add_argument("data", nargs="*", metavar="DATA", help=data_help)
    add_option(patch, "cas", type=int, metavar="N", help="check-and-set version")
    add_option(
        patch,
        "method",
        choices=("patch", "rw"),
        default="patch",
        help="patch: one HTTP PATCH (default); rw: read, merge and write back",
    )
    add_option(patch, "remove-data", action="append", metavar="KEY", help="remove KEY (repeatable)")
    add_option(patch, "field", metavar="NAME", help="print only this field of the response, raw")

    delete = _path_command(
        commands,
        "delete",
        "soft-delete the latest version (or -versions) of a secret",
        run_delete,
        parents,
    )
    _versions_flag(delete, "delete (v2)")
    undelete = _path_command(
        commands, "undelete", "restore soft-deleted versions (KV v2)", run_undelete, parents
    )
    _versions_flag(undelete, "undelete (required)")
    destroy = _path_command(
        commands, "destroy", "permanently remove versions (KV v2)", run_destroy, parents
    )
    _versions_flag(destroy, "destroy (required)")
    _path_command(commands, "list", "list the keys under PATH", run_list, parents, nargs="?")

    metadata = add_command(commands, "metadata", "a secret's metadata and versions (KV v2)")
    meta_commands = metadata.add_subparsers(
        title="subcommands", dest="kv_metadata_command", metavar="SUBCOMMAND", required=True
    )
    meta_get = _path_command(
        meta_commands,
        "get",
        "print the metadata and every version's state",
        run_metadata_get,
        parents,
    )
    add_option(meta_get, "field", metavar="NAME", help="print only this field, raw")

    meta_put = _path_command(
        meta_commands,
        "put",
        "change a secret's settings and custom metadata",
        run_metadata_put,
        parents,
    )
    add_option(meta_put, "max-versions", type=int, metavar="N", help="versions kept (0 = mount's)")
    add_switch(meta_put, "cas-required", "require -cas on every write", default=None)
    add_option(
        meta_put,
        "delete-version-after",
        type=duration,
        metavar="DURATION",
        help="soft-delete versions this long after they are written (0s = never)",
    )
    add_option(
        meta_put,
        "custom-metadata",
        action="append",
        metavar="K=V",
        help="custom metadata (repeatable; replaces all custom metadata)",
    )
    _path_command(
        meta_commands,
        "delete",
        "delete a secret's metadata and all of its versions",
        run_metadata_delete,
        parents,
    )
