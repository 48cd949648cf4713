"""PolicyStore over a real barrier: CRUD, built-ins, refusals, caching."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest

from node.barrier.barrier import Barrier
from node.barrier.view import BarrierView
from node.physical.inmem import InmemBackend
from node.policy import DEFAULT_POLICY_TEXT, PolicyStore
from sdk.errors import InvalidRequestError

READ_SECRET = 'path "secret/*" { capabilities = ["read"] }'
WRITE_SECRET = 'path "secret/*" { capabilities = ["read", "update"] }'


@pytest.fixture
async def view() -> BarrierView:
    barrier = Barrier(InmemBackend())
    await barrier.initialize(os.urandom(32))
    return BarrierView(barrier, "sys/policy/")


@pytest.fixture
def store(view: BarrierView) -> PolicyStore:
    return PolicyStore(view)


async def test_set_get_list_delete(store: PolicyStore, view: BarrierView) -> None:
    policy = await store.set("Dev", READ_SECRET)
    assert policy.name == "dev"
    assert await view.get_json("policy/dev") == {"name": "dev", "policy": READ_SECRET}

    fetched = await PolicyStore(view).get("DEV")  # fresh store: read from storage
    assert fetched is not None
    assert (fetched.name, fetched.raw) == ("dev", READ_SECRET)
    assert [r.path for r in fetched.rules] == ["secret/*"]

    await store.set("ops", WRITE_SECRET)
    assert await store.list() == ["dev", "ops"]
    assert await store.list(include_root=True) == ["dev", "ops", "root"]

    await store.delete("dev")
    assert await store.get("dev") is None
    assert await view.get_json("policy/dev") is None
    assert await store.list() == ["ops"]
    await store.delete("dev")  # deleting an absent policy is not an error


async def test_invalid_text_is_a_400_and_not_stored(store: PolicyStore) -> None:
    with pytest.raises(InvalidRequestError, match='policy "bad": path "a": invalid capability'):
        await store.set("bad", 'path "a" { capabilities = ["raed"] }')
    assert await store.get("bad") is None
    assert await store.list() == []


@pytest.mark.parametrize("name", ["root", "response-wrapping", "ROOT"])
async def test_immutable_policies_cannot_be_set(store: PolicyStore, name: str) -> None:
    with pytest.raises(InvalidRequestError, match=f'cannot update "{name.lower()}" policy'):
        await store.set(name, READ_SECRET)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("root", 'cannot delete "root" policy'),
        ("response-wrapping", 'cannot delete "response-wrapping" policy'),
        ("Default", "cannot delete default policy"),
    ],
)
async def test_builtins_cannot_be_deleted(store: PolicyStore, name: str, message: str) -> None:
    await store.ensure_default()
    with pytest.raises(InvalidRequestError, match=message):
        await store.delete(name)
    assert await store.list() == ["default"]


@pytest.mark.parametrize("name", ["", "  ", "/abs", "trailing/", "a/../b", "a//b"])
async def test_invalid_names_refused(store: PolicyStore, name: str) -> None:
    with pytest.raises(InvalidRequestError):
        await store.set(name, READ_SECRET)


async def test_builtin_root_and_response_wrapping(store: PolicyStore) -> None:
    root = await store.get("root")
    assert root is not None and root.rules == ()
    wrapping = await store.get("response-wrapping")
    assert wrapping is not None
    assert {r.path: set(r.capabilities) for r in wrapping.rules} == {
        "cubbyhole/response": {"create", "read"},
        "sys/wrapping/unwrap": {"update"},
    }
    assert await store.list() == []  # neither is stored


async def test_ensure_default_writes_once(store: PolicyStore, view: BarrierView) -> None:
    assert await store.ensure_default() is True
    assert await view.get_json("policy/default") == {
        "name": "default",
        "policy": DEFAULT_POLICY_TEXT,
    }
    await store.set("default", READ_SECRET)  # default is editable
    assert await store.ensure_default() is False
    edited = await PolicyStore(view).get("default")
    assert edited is not None and edited.raw == READ_SECRET


async def test_default_policy_grants(store: PolicyStore) -> None:
    await store.ensure_default()
    acl = await store.acl(["default"], {"identity.entity.id": "e-1"})
    assert acl.capabilities("auth/token/lookup-self") == ["read"]
    assert acl.capabilities("auth/token/renew-self") == ["update"]
    assert acl.capabilities("cubbyhole/my/secret") == ["create", "delete", "list", "read", "update"]
    assert acl.capabilities("sys/wrapping/unwrap") == ["update"]
    assert acl.capabilities("sys/tools/hash/sha2-256") == ["update"]
    assert acl.capabilities("identity/oidc/provider/p1/authorize") == ["read", "update"]
    assert acl.capabilities("identity/entity/id/e-1") == ["read"]
    assert acl.capabilities("identity/entity/id/e-2") == ["deny"]
    assert acl.capabilities("secret/x") == ["deny"]
    assert not acl.allow("read", "sys/wrapping/unwrap").allowed
    # Without identity the templated rules are dropped, the rest still apply.
    plain = await store.acl(["default"])
    assert plain.capabilities("identity/entity/id/e-1") == ["deny"]
    assert plain.capabilities("auth/token/lookup-self") == ["read"]


async def test_default_falls_back_to_builtin_before_setup(store: PolicyStore) -> None:
    acl = await store.acl(["default"])
    assert acl.capabilities("auth/token/lookup-self") == ["read"]


async def test_acl_merges_named_policies_and_ignores_missing(store: PolicyStore) -> None:
    await store.set("a", READ_SECRET)
    await store.set("b", 'path "secret/*" { capabilities = ["list"] }')
    acl = await store.acl(["A", "b", "missing"])
    assert acl.capabilities("secret/x") == ["list", "read"]
    assert (await store.acl([])).capabilities("secret/x") == ["deny"]


async def test_acl_with_root_is_root(store: PolicyStore) -> None:
    acl = await store.acl(["default", "root"])
    assert acl.is_root
    assert acl.capabilities("anything") == ["root"]


async def test_acls_are_cached_per_policy_set_and_identity(store: PolicyStore) -> None:
    await store.set("dev", READ_SECRET)
    first = await store.acl(["dev", "default"])
    assert await store.acl(["default", "DEV", "dev"]) is first
    alice = await store.acl(["dev"], {"identity.entity.id": "alice"})
    assert await store.acl(["dev"], {"identity.entity.id": "alice"}) is alice
    assert await store.acl(["dev"], {"identity.entity.id": "bob"}) is not alice
    store.invalidate("unrelated")
    assert await store.acl(["dev", "default"]) is not first


async def test_set_and_delete_invalidate_cached_acls(store: PolicyStore) -> None:
    await store.set("dev", READ_SECRET)
    assert (await store.acl(["dev"])).capabilities("secret/x") == ["read"]
    await store.set("dev", WRITE_SECRET)
    assert (await store.acl(["dev"])).capabilities("secret/x") == ["read", "update"]
    await store.delete("dev")
    assert (await store.acl(["dev"])).capabilities("secret/x") == ["deny"]


async def test_invalidate_picks_up_changes_from_another_node(
    store: PolicyStore, view: BarrierView
) -> None:
    await store.set("dev", READ_SECRET)
    assert (await store.acl(["dev"])).capabilities("secret/x") == ["read"]
    # Another node writes through its own store; ours still serves the cache...
    await PolicyStore(view).set("dev", WRITE_SECRET)
    assert (await store.acl(["dev"])).capabilities("secret/x") == ["read"]
    policy = await store.get("dev")
    assert policy is not None and policy.raw == READ_SECRET
    # ...until told to invalidate.
    store.invalidate("DEV")
    assert (await store.acl(["dev"])).capabilities("secret/x") == ["read", "update"]
    await PolicyStore(view).delete("dev")
    store.invalidate()
    assert await store.get("dev") is None


class GatedView(BarrierView):
    """Holds ``get_json`` after reading, so a test can invalidate mid-load."""

    gate: asyncio.Event | None = None

    async def get_json(self, key: str) -> Any:
        value = await super().get_json(key)
        if self.gate is not None:
            await self.gate.wait()
        return value


async def test_load_racing_invalidation_is_not_cached(view: BarrierView) -> None:
    gated = GatedView(view._storage, view.prefix)
    store = PolicyStore(gated)
    await PolicyStore(view).set("dev", READ_SECRET)
    gated.gate = asyncio.Event()
    loading = asyncio.create_task(store.get("dev"))
    await asyncio.sleep(0)
    await PolicyStore(view).set("dev", WRITE_SECRET)
    store.invalidate("dev")
    gated.gate.set()
    stale = await loading
    assert stale is not None and stale.raw == READ_SECRET
    gated.gate = None
    fresh = await store.get("dev")
    assert fresh is not None and fresh.raw == WRITE_SECRET
