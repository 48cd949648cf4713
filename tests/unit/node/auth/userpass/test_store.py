"""The userpass user store and backend over a real barrier (no HTTP)."""

from __future__ import annotations

import json
import os

import pytest
from argon2 import PasswordHasher

from node.auth.common.token_settings import TokenSettings
from node.auth.userpass.backend import INVALID_CREDENTIALS, UserpassBackend
from node.auth.userpass.passwords import Passwords
from node.auth.userpass.store import UserEntry, UserStore
from node.barrier.barrier import Barrier, StoredValue
from node.barrier.view import BarrierView
from node.logical.request import Operation, Request
from node.logical.response import Login
from node.physical.inmem import InmemBackend
from node.routing.mounts import new_mount
from sdk.errors import ConflictError, InvalidRequestError, UnsupportedPathError
from sdk.physical import Put

CHEAP = Passwords(PasswordHasher(time_cost=1, memory_cost=64, parallelism=1))


@pytest.fixture
async def view() -> BarrierView:
    barrier = Barrier(InmemBackend())
    await barrier.initialize(os.urandom(32))
    return BarrierView(barrier, "auth/some-uuid/")


@pytest.fixture
def backend(view: BarrierView) -> UserpassBackend:
    mount = new_mount("userpass/", "userpass", table="auth")
    return UserpassBackend(view, mount, passwords=CHEAP)


async def send(backend: UserpassBackend, operation: Operation, path: str, **data: object) -> object:
    return await backend.handle(Request(operation, path, data))


async def test_update_creates_changes_and_refuses(view: BarrierView) -> None:
    store = UserStore(view)
    await store.update("alice", lambda found: UserEntry("h1"))
    await store.update("alice", lambda found: UserEntry("h2", TokenSettings(ttl=5)))
    assert await store.get("alice") == UserEntry("h2", TokenSettings(ttl=5))

    def refuse(found: UserEntry | None) -> UserEntry:
        raise InvalidRequestError("no")

    with pytest.raises(InvalidRequestError):
        await store.update("alice", refuse)
    assert await store.get("alice") == UserEntry("h2", TokenSettings(ttl=5))
    await store.update("bob", lambda found: UserEntry("h"))
    assert await store.names() == ["alice", "bob"]
    await store.delete("alice")
    assert (await store.get("alice"), await store.names()) == (None, ["bob"])


async def test_update_reapplies_after_a_concurrent_write(
    view: BarrierView, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = UserStore(view)
    await store.update("alice", lambda found: UserEntry("h", TokenSettings(ttl=1)))

    async def interfere() -> None:
        other = UserEntry("h", TokenSettings(ttl=1, policies=["p"]))
        await view.commit([Put("user/alice", json.dumps(other.to_json()).encode())])

    calls = 0

    def change(found: UserEntry | None) -> UserEntry:
        nonlocal calls
        calls += 1
        assert found is not None
        return UserEntry("new", found.token)

    # Interleave: the first read is stale by the time it commits.
    real_get = view.get

    async def stale_get(key: str) -> StoredValue | None:
        found = await real_get(key)
        if calls == 0:
            await interfere()
        return found

    monkeypatch.setattr(view, "get", stale_get)
    await store.update("alice", change)
    assert calls == 2
    stored = await store.get("alice")
    assert stored == UserEntry("new", TokenSettings(ttl=1, policies=["p"]))


async def test_login_hands_the_core_a_login(backend: UserpassBackend) -> None:
    await send(backend, Operation.CREATE, "users/Alice", password="pw", policies="dev,ops")
    response = await send(backend, Operation.UPDATE, "login/ALICE", password="pw")
    login = response.login  # type: ignore[attr-defined]
    assert isinstance(login, Login)
    assert login.alias_name == login.display_name == "alice"
    assert login.policies == ["dev", "ops"]
    assert login.token == TokenSettings(policies=["dev", "ops"])
    assert login.metadata == {"username": "alice"}
    assert login.alias_metadata == {}
    assert login.group_aliases == []


async def test_login_failures_are_one_error(backend: UserpassBackend) -> None:
    await send(backend, Operation.CREATE, "users/alice", password="pw")
    for path, password in (("login/alice", "wrong"), ("login/nobody", "pw")):
        with pytest.raises(InvalidRequestError) as failure:
            await send(backend, Operation.UPDATE, path, password=password)
        assert failure.value.messages == [INVALID_CREDENTIALS]


async def test_login_is_the_only_unauthenticated_path(backend: UserpassBackend) -> None:
    assert backend.is_unauthenticated("login/alice")
    for path in ("users", "users/alice", "users/alice/password", "users/alice/policies"):
        assert not backend.is_unauthenticated(path)


async def test_existence_follows_the_stored_user(backend: UserpassBackend) -> None:
    request = Request(Operation.UPDATE, "users/Alice", {})
    assert not await backend.exists(request)
    await send(backend, Operation.CREATE, "users/alice", password="pw")
    assert await backend.exists(request)
    with pytest.raises(UnsupportedPathError):
        await send(backend, Operation.READ, "users/alice/other")


async def test_create_and_update_do_not_turn_into_each_other(backend: UserpassBackend) -> None:
    """The pipeline chose create or update (and checked the ACL for it) before the write."""
    await send(backend, Operation.CREATE, "users/alice", password="pw")
    with pytest.raises(ConflictError):
        await send(backend, Operation.CREATE, "users/alice", password="other")
    with pytest.raises(InvalidRequestError, match="does not exist"):
        await send(backend, Operation.UPDATE, "users/bob", password="pw")
    response = await send(backend, Operation.UPDATE, "login/alice", password="pw")
    assert response.login is not None  # type: ignore[attr-defined]


async def test_the_record_holds_a_hash_only(backend: UserpassBackend, view: BarrierView) -> None:
    await send(backend, Operation.CREATE, "users/alice", password="hunter2", token_ttl=60)
    record = await view.get_json("user/alice")
    assert set(record) == {"password_hash", "token"}
    assert record["password_hash"].startswith("$argon2id$")
    assert "hunter2" not in json.dumps(record)
