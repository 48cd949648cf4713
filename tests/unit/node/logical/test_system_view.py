"""Backends built from a ``BackendConfig`` alone: a system view made of plain values, no core.

Each engine and auth method gets its storage, mount and system view through
its one factory; here those are a real barrier view and a stub system view,
and the backend serves requests as it does when the core mounts it.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field

import pytest

from node.barrier.barrier import Barrier
from node.barrier.view import BarrierView
from node.engines.registry import factory_for
from node.identity.backend import IdentityBackend
from node.identity.service import IdentityService, SingleRootTree
from node.logical.backend import Backend
from node.logical.mount import MountEntry, new_mount
from node.logical.request import Operation, Request
from node.logical.response import Response
from node.logical.system_view import BackendConfig, SystemView
from node.namespaces.model import NamespaceTree
from node.outbound import HttpClient
from node.physical.inmem import InmemBackend
from sdk.errors import CofferError, InvalidRequestError


@dataclass
class PlainSystemView:
    """A system view of fixed answers: what a test (or another host) gives a backend."""

    mount_list: list[MountEntry] = field(default_factory=list)
    client: HttpClient | None = None
    standby: bool = False

    def default_lease_ttl(self) -> int:
        return 3600

    def max_lease_ttl(self) -> int:
        return 7200

    def is_standby(self) -> bool:
        return self.standby

    def is_perf_standby(self) -> bool:
        return self.standby

    def local_mount(self) -> bool:
        return False

    def http_client(self) -> HttpClient | None:
        return self.client

    def namespaces(self) -> NamespaceTree:
        return SingleRootTree()

    def mounts(self) -> list[MountEntry]:
        return self.mount_list


@pytest.fixture
async def barrier() -> Barrier:
    barrier = Barrier(InmemBackend())
    await barrier.initialize(os.urandom(32))
    return barrier


def config_for(barrier: Barrier, mount: MountEntry, system: SystemView) -> BackendConfig:
    return BackendConfig(
        storage=BarrierView(barrier, mount.storage_prefix),
        mount=mount,
        system=system,
        logger=logging.getLogger("test.backend"),
    )


def build(barrier: Barrier, mount: MountEntry, system: SystemView | None = None) -> Backend:
    config = config_for(barrier, mount, system or PlainSystemView())
    backend = factory_for(mount.type)(config)
    backend.setup(config)
    return backend


async def call(backend: Backend, operation: Operation, path: str, **data: object) -> Response:
    """The backend's answer; a write answered with no body (204) is an empty ``Response``."""
    return await backend.handle(Request(operation, path, data)) or Response()


async def test_a_kv_v2_mount_serves_from_its_own_storage_only(barrier: Barrier) -> None:
    mount = new_mount("secret/", "kv", options={"version": "2"})
    backend = build(barrier, mount)
    before = await barrier.list("")
    await call(backend, Operation.UPDATE, "data/app", data={"password": "s3cret"})
    read = await call(backend, Operation.READ, "data/app")
    assert read.data is not None and read.data["data"] == {"password": "s3cret"}
    # Everything it wrote is under the mount's prefix.
    assert await barrier.list(mount.storage_prefix)
    assert sorted(set(await barrier.list("")) - set(before)) == ["logical/"]


async def test_kv_v1_is_chosen_by_the_mount_options(barrier: Barrier) -> None:
    backend = build(barrier, new_mount("kv/", "kv"))
    await call(backend, Operation.UPDATE, "app", password="s3cret")
    assert (await call(backend, Operation.READ, "app")).data == {"password": "s3cret"}


async def test_a_userpass_mount_logs_users_in(barrier: Barrier) -> None:
    backend = build(barrier, new_mount("userpass/", "userpass", table="auth"))
    await call(backend, Operation.CREATE, "users/alice", password="pw", token_policies="dev")
    response = await call(backend, Operation.UPDATE, "login/alice", password="pw")
    assert response.login is not None and response.login.policies == ["dev"]
    with pytest.raises(InvalidRequestError):
        await call(backend, Operation.UPDATE, "login/alice", password="wrong")


async def test_the_idp_method_calls_out_only_through_the_system_view(barrier: Barrier) -> None:
    mount = new_mount("idp/", "idp", table="auth")
    backend = build(barrier, mount, PlainSystemView(client=None))
    await call(backend, Operation.UPDATE, "config", org_name="example", base_url="example.com")
    with pytest.raises(CofferError, match="no outbound HTTP client"):
        await call(backend, Operation.UPDATE, "login/alice", password="pw")


async def test_identity_checks_alias_mounts_against_the_system_views_mounts(
    barrier: Barrier,
) -> None:
    userpass = new_mount("userpass/", "userpass", table="auth")
    mount = new_mount("identity/", "identity")
    service = IdentityService(SingleRootTree())
    system = PlainSystemView(mount_list=[mount, userpass])
    backend = IdentityBackend(config_for(barrier, mount, system), service)

    made = await call(backend, Operation.UPDATE, "entity", name="alice")
    assert made.data is not None
    entity_id = made.data["id"]
    await call(
        backend,
        Operation.UPDATE,
        "entity-alias",
        name="alice",
        canonical_id=entity_id,
        mount_accessor=userpass.accessor,
    )
    with pytest.raises(InvalidRequestError, match="invalid mount accessor"):
        await call(
            backend,
            Operation.UPDATE,
            "entity-alias",
            name="bob",
            canonical_id=entity_id,
            mount_accessor="auth_userpass_unknown",
        )
    # The store the mount edits is the one the service links logins to.
    assert service.store("root") is backend.store
    assert await service.entity(entity_id, "root") is not None


async def test_identity_invalidate_drops_the_cached_records(barrier: Barrier) -> None:
    """Another node's write reaches the store only through ``invalidate``."""
    mount = new_mount("identity/", "identity")
    service = IdentityService(SingleRootTree())
    backend = IdentityBackend(config_for(barrier, mount, PlainSystemView()), service)
    other = IdentityBackend(
        config_for(barrier, mount, PlainSystemView()), IdentityService(SingleRootTree())
    )
    assert (await backend.store.state()).entities == {}
    await call(other, Operation.UPDATE, "entity", name="written-elsewhere")
    assert (await backend.store.state()).entities == {}  # cached
    backend.invalidate("entity/some-id")
    names = [e.name for e in (await backend.store.state()).entities.values()]
    assert names == ["written-elsewhere"]


def test_an_unknown_type_is_a_400() -> None:
    with pytest.raises(InvalidRequestError, match="plugin not found"):
        factory_for("no-such-engine")
