"""Replicated mount changes reach a standby's backends through its mount table.

Two cores share one storage, as two nodes share the replicated key space:
``active`` mounts, tunes, writes and unmounts; ``standby`` only hears of the
changed keys through ``Core.replicated.on_changes`` (what its replica
reports). A recording engine shows each backend's lifecycle as the standby
runs it: built and set up, initialized, told of changed keys, cleaned up.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from consensus.state import ChangeSet
from node.barrier.view import BarrierView
from node.core.core import Core
from node.engines import types
from node.framework import FrameworkBackend
from node.logical.backend import Backend
from node.logical.mount import MountEntry, new_mount
from node.logical.system_view import BackendConfig
from node.namespaces.model import ROOT
from node.physical.inmem import InmemBackend

TYPE = "test-recording"


class Recording(FrameworkBackend):
    """An engine with no paths that remembers its lifecycle calls."""

    type = TYPE

    def __init__(self, config: BackendConfig) -> None:
        super().__init__([])
        self.mount = config.mount
        self.calls: list[str] = []

    def setup(self, config: BackendConfig) -> None:
        super().setup(config)
        self.calls.append("setup")

    async def initialize(self) -> None:
        self.calls.append("initialize")

    def invalidate(self, key: str) -> None:
        self.calls.append(f"invalidate {key}")

    async def cleanup(self) -> None:
        self.calls.append("cleanup")


def factory(config: BackendConfig) -> Recording:
    return Recording(config)


@dataclass
class Pair:
    active: Core
    standby: Core
    index: int = 0

    async def replicate(self, *keys: str) -> None:
        """Report ``keys`` to the standby as its replica would, and wait until processed."""
        self.index += 1
        self.standby.replicated.on_changes(ChangeSet(self.index, keys))
        await self.standby.replicated.settled(self.index, timeout=5)


@pytest.fixture
async def pair(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Pair]:
    monkeypatch.setitem(types.PLUGGABLE, TYPE, f"{__name__}:factory")
    storage = InmemBackend()
    active = Core(storage)
    init = await active.dev_bootstrap()
    standby = Core(storage)
    await standby.unseal(init.keys_hex[0])
    standby.replicated.start(0)
    try:
        yield Pair(active, standby)
    finally:
        await standby.replicated.stop()
        await standby.seal()
        await active.seal()


def backend_at(core: Core, path: str) -> Backend | None:
    match = core.router.match(path)
    return match.backend if match is not None and match.mount.route_path == path else None


def recording_at(core: Core, path: str) -> Recording:
    backend = backend_at(core, path)
    assert isinstance(backend, Recording), backend
    return backend


async def test_mount_tune_write_and_unmount_reach_the_standbys_backend(pair: Pair) -> None:
    kv_before = backend_at(pair.standby, "secret/")
    assert kv_before is not None

    await pair.active.mounts.enable(new_mount("rec/", TYPE))
    assert backend_at(pair.standby, "rec/") is None  # not reported yet
    await pair.replicate("core/mounts")
    first = recording_at(pair.standby, "rec/")
    assert first.calls == ["setup", "initialize"]
    # Compare before change: the untouched mount kept its backend instance.
    assert backend_at(pair.standby, "secret/") is kv_before

    # A write under the mount's storage: the backend hears of the key, relative to its view.
    entry: MountEntry = first.mount
    await BarrierView(pair.active.barrier, entry.storage_prefix).put("config/a", b"v")
    await pair.replicate(f"{entry.storage_prefix}config/a")
    assert first.calls[-1] == "invalidate config/a"

    await pair.active.mounts.tune("secret", "rec/", config={"default_lease_ttl": 60})
    await pair.replicate("core/mounts")
    tuned = recording_at(pair.standby, "rec/")
    assert tuned is not first
    assert first.calls[-1] == "cleanup"
    assert tuned.calls == ["setup", "initialize"]
    assert tuned.config is not None
    assert tuned.config.system.default_lease_ttl() == 60
    assert tuned.config.mount.uuid == entry.uuid  # the same data
    assert backend_at(pair.standby, "secret/") is kv_before

    await pair.active.mounts.remount("secret", "rec/", "moved/")
    await pair.replicate("core/mounts")
    assert backend_at(pair.standby, "rec/") is None
    assert tuned.calls[-1] == "cleanup"
    moved = recording_at(pair.standby, "moved/")

    await pair.active.mounts.disable("secret", "moved/")
    await pair.replicate("core/mounts")
    assert backend_at(pair.standby, "moved/") is None
    assert moved.calls[-1] == "cleanup"
    assert backend_at(pair.standby, "secret/") is kv_before


async def test_an_auth_mount_in_a_namespace_is_reconciled_by_its_table(pair: Pair) -> None:
    namespace = await pair.active.create_namespace(ROOT, "team", {})
    await pair.replicate("sys/namespaces/" + namespace.id)
    assert pair.standby.namespaces.by_id(namespace.id) is not None
    assert backend_at(pair.standby, "team/sys/") is not None

    entry = new_mount(
        "rec/", TYPE, table="auth", namespace_id=namespace.id, namespace_path=namespace.path
    )
    await pair.active.mounts.enable(entry)
    await pair.replicate(f"namespaces/{namespace.id}/core/auth")
    assert recording_at(pair.standby, "team/auth/rec/").calls == ["setup", "initialize"]


async def test_a_reset_tells_every_backend_anything_may_have_changed(pair: Pair) -> None:
    await pair.active.mounts.enable(new_mount("rec/", TYPE))
    await pair.replicate("core/mounts")
    backend = recording_at(pair.standby, "rec/")
    pair.index += 1
    pair.standby.replicated.on_changes(ChangeSet(pair.index, (), reset=True))
    await pair.standby.replicated.settled(pair.index, timeout=5)
    assert "invalidate " in backend.calls
    assert recording_at(pair.standby, "rec/") is backend  # unchanged: kept


async def test_sealing_cleans_up_every_backend(pair: Pair) -> None:
    await pair.active.mounts.enable(new_mount("rec/", TYPE))
    backend = recording_at(pair.active, "rec/")
    await pair.active.seal()
    assert backend.calls[-1] == "cleanup"
    assert pair.active.router.entries() == []


def test_table_owner_names_the_namespace_of_a_mount_table_key() -> None:
    from node.core.mount_table import MountTable

    assert MountTable.table_owner("core/mounts") == "root"
    assert MountTable.table_owner("core/auth") == "root"
    assert MountTable.table_owner("namespaces/abc/core/auth") == "abc"
    for other in ("core/cluster", "logical/x/core/mounts", "namespaces/a/b/core/auth", "mounts"):
        assert MountTable.table_owner(other) is None, other


async def test_an_entry_needing_no_reload_is_settled_only_after_the_reloads_before_it(
    pair: Pair,
) -> None:
    await pair.active.mounts.enable(new_mount("rec/", TYPE))
    mounts_changed, kv_written = pair.index + 1, pair.index + 2
    pair.index = kv_written
    replicated = pair.standby.replicated
    replicated.on_changes(ChangeSet(mounts_changed, ("core/mounts",)))
    replicated.on_changes(ChangeSet(kv_written, ("logical/some-kv-key",)))

    # The KV entry needs no reload of its own, but the mount table's before it does.
    await replicated.settled(kv_written, timeout=5)
    assert recording_at(pair.standby, "rec/").calls == ["setup", "initialize"]

    # With nothing queued, an entry needing no reload is settled at once.
    pair.index += 1
    replicated.on_changes(ChangeSet(pair.index, ("logical/another-key",)))
    await replicated.settled(pair.index, timeout=0)


class _Told:
    def __init__(self) -> None:
        self.keys: list[str] = []

    def invalidate(self, key: str) -> None:
        self.keys.append(key)


def test_invalidate_keys_tells_each_owner_and_returns_the_unowned_keys() -> None:
    """Each key goes to the mount whose storage holds it, relative to that storage;
    the routes change and the lookup follows."""
    from types import SimpleNamespace

    from node.core.mount_table import MountTable
    from node.logical.mount import new_mount
    from node.routing.router import Router

    kv, auth, other = _Told(), _Told(), _Told()
    kv_entry, auth_entry = new_mount("kv/", "kv"), new_mount("up/", "userpass", table="auth")
    router = Router()
    router.mount(kv_entry, kv)  # type: ignore[arg-type]
    router.mount(auth_entry, auth)  # type: ignore[arg-type]
    table = MountTable(SimpleNamespace(router=router))  # type: ignore[arg-type]
    kv_at, auth_at = kv_entry.storage_prefix, auth_entry.storage_prefix

    left = table.invalidate_keys(
        [kv_at + "a", "core/mounts", auth_at + "b/c", kv_at + "sub/x", kv_at[:-1] + "0/z"]
    )

    assert left == ["core/mounts", kv_at[:-1] + "0/z"]
    assert kv.keys == ["a", "sub/x"]
    assert auth.keys == ["b/c"]
    # The routes change: the lookup follows.
    router.unmount(kv_entry.route_path)
    other_entry = new_mount("other/", "kv")
    router.mount(other_entry, other)  # type: ignore[arg-type]
    assert table.invalidate(other_entry.storage_prefix + "z")
    assert not table.invalidate(kv_at + "a")
    assert other.keys == ["z"]
    assert kv.keys == ["a", "sub/x"]
