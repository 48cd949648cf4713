"""``config``: mount-wide defaults for every key of a KV v2 mount."""

from __future__ import annotations

from node.engines.kv.records import MountConfig, go_duration
from node.engines.kv.settings import SETTING_FIELDS, check_duration, check_max_versions
from node.engines.kv.store import KVStore
from node.framework import Field, FieldData, FieldType, Path
from node.logical.request import Operation, Request
from node.logical.response import Response

__all__ = ["ConfigPaths"]

_HELP = """\
max_versions, cas_required and delete_version_after apply to every key of the
mount, together with each key's own metadata settings. A negative
delete_version_after disables automatic deletion for all keys (read back as
"-1s"); 0 clears it. A write without any of these fields changes nothing."""


class ConfigPaths:
    def __init__(self, store: KVStore) -> None:
        self._store = store

    def paths(self) -> list[Path]:
        return [
            Path(
                "config",
                operations={Operation.READ: self._read, Operation.UPDATE: self._write},
                fields={
                    **SETTING_FIELDS,
                    "delete_version_after": Field(
                        FieldType.DURATION,
                        "Soft-delete each new version after this long (seconds or Go duration). "
                        "Negative disables it for all keys; 0 clears it.",
                    ),
                },
                summary="Configure the settings applied to every key of the mount.",
                description=_HELP,
            )
        ]

    async def _read(self, request: Request, data: FieldData) -> Response:
        config = await self._store.config()
        return Response(
            data={
                "max_versions": config.max_versions,
                "cas_required": config.cas_required,
                "delete_version_after": go_duration(config.delete_version_after),
            }
        )

    async def _write(self, request: Request, data: FieldData) -> None:
        if not any(data.given(name) for name in SETTING_FIELDS):
            return
        max_versions = check_max_versions(data.get("max_versions") or 0)
        after: int = data.get("delete_version_after") or 0
        after = -1 if after < 0 else check_duration(after)

        def change(config: MountConfig) -> None:
            if data.given("max_versions"):
                config.max_versions = max_versions
            if data.given("cas_required"):
                config.cas_required = data.get("cas_required")
            if data.given("delete_version_after"):
                config.delete_version_after = after

        await self._store.update_config(change)
