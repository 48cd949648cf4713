"""``sys/mounts``, ``sys/auth`` and ``sys/remount``: enable, list, tune, move, disable."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from node.engines.types import AUTH_TYPES, ENGINE_TYPES
from node.framework import Field, FieldData, FieldType, Path
from node.framework.fields import convert, parse_duration
from node.logical.request import Operation, Request
from node.logical.response import Response
from node.namespaces.model import ROOT, Namespace
from node.routing.mounts import MountEntry, new_mount, normalise_path
from sdk.errors import InvalidRequestError, UnsupportedPathError

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["MountPaths"]

_ENABLE_FIELDS = {
    "type": Field(FieldType.STRING, "Engine or method type, e.g. kv, kv-v2, userpass."),
    "description": Field(FieldType.STRING, "Human-friendly description.", ""),
    "config": Field(
        FieldType.MAP,
        "default_lease_ttl, max_lease_ttl, force_no_cache, listing_visibility, plugin_name, "
        "token_type (auth methods).",
    ),
    "options": Field(FieldType.MAP, "Engine options such as version."),
    "local": Field(FieldType.BOOL, "Not replicated to other clusters.", False),
    "seal_wrap": Field(FieldType.BOOL, "Extra HSM-backed encryption.", False),
    "plugin_name": Field(FieldType.STRING, "Alias of type."),
}
_TUNE_FIELDS = {
    "default_lease_ttl": Field(FieldType.DURATION, "Default TTL of leases and tokens."),
    "max_lease_ttl": Field(FieldType.DURATION, "Maximum TTL of leases and tokens."),
    "description": Field(FieldType.STRING, "Human-friendly description."),
    "options": Field(FieldType.MAP, "Engine options such as version."),
    "force_no_cache": Field(FieldType.BOOL, "Disable caching."),
    "listing_visibility": Field(FieldType.STRING, "unauth or hidden."),
    "token_type": Field(
        FieldType.STRING, "Auth methods: default-service, default-batch, service or batch."
    ),
    "seal_wrap": Field(FieldType.BOOL, "Fixed when the mount is enabled; a change is refused."),
}

#: Values of ``listing_visibility``; "" and "hidden" both keep a mount out of
#: unauthenticated listings.
_VISIBILITY = ("", "hidden", "unauth")
#: The tunable token types of an auth mount, as the reference names them.
_MOUNT_TOKEN_TYPES = ("default-service", "default-batch", "service", "batch")


def _config(raw: dict[str, Any], table: str = "secret") -> dict[str, Any]:
    config: dict[str, Any] = {}
    for key in ("default_lease_ttl", "max_lease_ttl"):
        if raw.get(key) not in (None, ""):
            config[key] = parse_duration(raw[key], f"config.{key}")
            if config[key] < 0:
                raise InvalidRequestError(f"config.{key} must not be negative")
    if raw.get("force_no_cache") is not None:
        config["force_no_cache"] = convert(
            Field(FieldType.BOOL), raw["force_no_cache"], "config.force_no_cache"
        )
    if raw.get("listing_visibility") is not None:
        visibility = raw["listing_visibility"]
        if visibility not in _VISIBILITY:
            raise InvalidRequestError(
                f"invalid listing_visibility {visibility!r}: use unauth, hidden or empty"
            )
        config["listing_visibility"] = visibility
    if raw.get("token_type") not in (None, ""):
        config["token_type"] = _token_type(raw["token_type"], table)
    if raw.get("plugin_name") is not None and not isinstance(raw["plugin_name"], str):
        raise InvalidRequestError("config.plugin_name must be a string")
    unknown = set(raw) - {
        "default_lease_ttl",
        "max_lease_ttl",
        "force_no_cache",
        "listing_visibility",
        "plugin_name",
        "token_type",
    }
    if unknown:
        raise InvalidRequestError(f"unknown config keys: {sorted(unknown)}")
    if config.get("max_lease_ttl") and config.get("default_lease_ttl", 0) > config["max_lease_ttl"]:
        raise InvalidRequestError("given default lease TTL greater than given max lease TTL")
    return config


def _token_type(value: Any, table: str, type_: str = "") -> str:
    if table != "auth":
        raise InvalidRequestError("'token_type' can only be modified on auth mounts")
    if type_ == "token":
        raise InvalidRequestError("'token_type' cannot be set for 'token' auth mounts")
    if value not in _MOUNT_TOKEN_TYPES:
        raise InvalidRequestError(
            f"invalid value for 'token_type': use one of {', '.join(_MOUNT_TOKEN_TYPES)}"
        )
    return str(value)


def _engine_type(data: FieldData, config: dict[str, Any]) -> str:
    """``type``, else ``plugin_name``, else ``config.plugin_name`` (also for type
    ``plugin``, as the reference reads its older request shape)."""
    type_ = data.get("type") or ""
    plugin = data.get("plugin_name") or config.get("plugin_name") or ""
    if type_ in ("", "plugin"):
        type_ = plugin
    if not type_:
        raise InvalidRequestError("'type' is required")
    return str(type_)


def _options(raw: dict[str, Any], type_: str) -> dict[str, str]:
    options = {str(k): str(v) for k, v in raw.items()}
    # The aliases pin their version, and reads show it as Vault does.
    if type_ == "kv-v2":
        options["version"] = "2"
    elif type_ == "kv-v1":
        options["version"] = "1"
    version = options.get("version")
    if version is not None and type_ in ENGINE_TYPES and version not in ("1", "2", ""):
        raise InvalidRequestError(f"invalid kv version {version!r}: use 1 or 2")
    return options


def _tune_view(entry: MountEntry, core: Core) -> dict[str, Any]:
    view = {
        "description": entry.description,
        "default_lease_ttl": entry.config.get("default_lease_ttl")
        or core.settings.default_lease_ttl,
        "max_lease_ttl": entry.config.get("max_lease_ttl") or core.settings.max_lease_ttl,
        "force_no_cache": entry.config.get("force_no_cache", False),
        "options": entry.options or None,
    }
    if entry.config.get("listing_visibility"):
        view["listing_visibility"] = entry.config["listing_visibility"]
    if entry.table == "auth":
        view["token_type"] = entry.config.get("token_type", "default-service")
    return view


_REMOUNT_FIELDS = {
    "from": Field(FieldType.STRING, "Current mount path."),
    "to": Field(FieldType.STRING, "New mount path."),
}
#: What ``sys/<table>/<path>/tune`` writes into the mount's config as given.
_TUNED_CONFIG = ("default_lease_ttl", "max_lease_ttl", "force_no_cache", "listing_visibility")


class MountPaths:
    """``sys/mounts`` and ``sys/auth`` (one mount table each) and ``sys/remount``."""

    def __init__(self, core: Core, namespace: Namespace = ROOT) -> None:
        self._core = core
        self._namespace = namespace
        self._tables = (
            _TablePaths(core, namespace, "secret", "mounts", ENGINE_TYPES),
            _TablePaths(core, namespace, "auth", "auth", AUTH_TYPES),
        )
        # A move finishes before its response; the record lets Vault's CLI, which
        # polls the status, see that (kept in memory, like the reference).
        self._migrations: dict[str, dict[str, str]] = {}

    def paths(self) -> list[Path]:
        return [
            *(row for table in self._tables for row in table.paths()),
            Path(
                "remount",
                {Operation.UPDATE: self._remount},
                _REMOUNT_FIELDS,
                "Move a mount to a new path.",
                sudo=True,
            ),
            Path(
                r"remount/status/(?P<migration_id>[^/]+)",
                {Operation.READ: self._remount_status},
                {},
                "Status of a mount move.",
                sudo=True,
            ),
        ]

    async def _remount(self, request: Request, data: FieldData) -> Response:
        source, target = data.get("from") or "", data.get("to") or ""
        if not source or not target:
            raise InvalidRequestError("both 'from' and 'to' are required")
        source_auth, target_auth = source.startswith("auth/"), target.startswith("auth/")
        if source_auth != target_auth:
            raise InvalidRequestError("cannot move a mount between sys/mounts and sys/auth")
        table = "auth" if source_auth else "secret"
        if source_auth:
            source, target = source.removeprefix("auth/"), target.removeprefix("auth/")
        mounts, namespace = self._core.mounts, self._namespace
        original = mounts.find(table, source, namespace).path
        moved = await mounts.remount(table, source, target, namespace)
        migration_id = str(uuid.uuid4())
        prefix = "auth/" if source_auth else ""
        self._migrations[migration_id] = {
            "source_mount": prefix + original,
            "target_mount": prefix + moved.path,
            "status": "success",
        }
        return Response(data={"migration_id": migration_id}, top_level_data=True)

    async def _remount_status(self, request: Request, data: FieldData) -> Response:
        info = self._migrations.get(data.get("migration_id"))
        if info is None:
            raise UnsupportedPathError(f"no migration with id {data.get('migration_id')!r}")
        return Response(data={"migration_id": data.get("migration_id"), "migration_info": info})


class _TablePaths:
    """List, enable, read, tune and disable the mounts of one table."""

    def __init__(
        self, core: Core, namespace: Namespace, table: str, prefix: str, types: tuple[str, ...]
    ) -> None:
        self._core = core
        self._namespace = namespace
        self._table = table
        self._prefix = prefix
        self._types = types

    def paths(self) -> list[Path]:
        prefix, table = self._prefix, self._table
        return [
            # Listing needs no sudo, not even for auth methods: the reference's
            # sudo rule is "auth/*", which does not cover the bare "auth".
            Path(f"{prefix}/?", {Operation.READ: self._list}, {}, f"List {table} mounts."),
            Path(
                rf"{prefix}/(?P<path>.+?)/tune/?",
                {Operation.READ: self._read_tune, Operation.UPDATE: self._tune},
                _TUNE_FIELDS,
                "Read or tune a mount's settings.",
                sudo=table == "auth",
            ),
            Path(
                rf"{prefix}/(?P<path>.+)",
                {
                    Operation.READ: self._read,
                    Operation.UPDATE: self._enable,
                    Operation.DELETE: self._disable,
                },
                _ENABLE_FIELDS,
                "Enable, read or disable a mount.",
                sudo=table == "auth",
            ),
        ]

    def _find(self, data: FieldData) -> MountEntry:
        return self._core.mounts.find(self._table, data.get("path"), self._namespace)

    async def _list(self, request: Request, data: FieldData) -> Response:
        entries = self._core.mounts.entries(self._table, self._namespace)
        return Response(data={e.path: e.describe() for e in entries}, top_level_data=True)

    async def _read(self, request: Request, data: FieldData) -> Response:
        return Response(data=self._find(data).describe())

    async def _enable(self, request: Request, data: FieldData) -> None:
        raw_config = data.get("config") or {}
        type_ = _engine_type(data, raw_config)
        if type_ not in self._types:
            raise InvalidRequestError(f"plugin not found in the catalog: {type_}")
        entry = new_mount(
            normalise_path(data.get("path")),
            type_,
            description=data.get("description"),
            config=_config(raw_config, self._table),
            options=_options(data.get("options") or {}, type_),
            local=data.get("local"),
            seal_wrap=data.get("seal_wrap"),
            table=self._table,
            namespace_id=self._namespace.id,
            namespace_path=self._namespace.path,
        )
        await self._core.mounts.enable(entry)

    async def _disable(self, request: Request, data: FieldData) -> None:
        await self._core.mounts.disable(self._table, data.get("path"), self._namespace)

    async def _read_tune(self, request: Request, data: FieldData) -> Response:
        return Response(data=_tune_view(self._find(data), self._core), top_level_data=True)

    async def _tune(self, request: Request, data: FieldData) -> None:
        entry = self._find(data)
        if data.given("seal_wrap") and bool(data.get("seal_wrap")) != entry.seal_wrap:
            raise InvalidRequestError("seal_wrap cannot be changed after the mount is enabled")
        config = dict(entry.config)
        config.update(_config({k: data.get(k) for k in _TUNED_CONFIG if data.given(k)}))
        if data.given("token_type"):
            config["token_type"] = _token_type(data.get("token_type"), self._table, entry.type)
        if (
            config.get("max_lease_ttl")
            and config.get("default_lease_ttl", 0) > config["max_lease_ttl"]
        ):
            raise InvalidRequestError("default_lease_ttl must not exceed max_lease_ttl")
        changes: dict[str, Any] = {"config": config}
        if data.given("description"):
            changes["description"] = data.get("description")
        if data.given("options"):
            options = {**entry.options, **_options(data.get("options"), entry.type)}
            if entry.type == "kv" and options.get("version", "1") != entry.options.get(
                "version", "1"
            ):
                raise InvalidRequestError(
                    "changing the kv version of an existing mount is not supported"
                )
            changes["options"] = options
        await self._core.mounts.tune(self._table, entry.path, self._namespace, **changes)
