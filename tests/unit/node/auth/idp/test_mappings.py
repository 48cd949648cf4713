"""Local users and groups of the idp method: name encoding, case rules, safe updates."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from typing import cast

from node.auth.idp.mappings import GroupEntry, Mappings, UserEntry, clean_policies
from node.barrier.view import BarrierView, Storage
from node.physical.inmem import InmemBackend
from sdk.physical import Entry, TxnOp


class Yielding(InmemBackend):
    """Yields to the event loop on every call, so concurrent updates interleave."""

    async def get(self, key: str) -> Entry | None:
        await asyncio.sleep(0)
        return await super().get(key)

    async def commit(self, ops: Sequence[TxnOp]) -> int:
        await asyncio.sleep(0)
        return await super().commit(ops)

    def read_generation(self) -> int | None:
        return None  # no read cache: nothing may be memoised


def mappings() -> tuple[Mappings, InmemBackend]:
    physical = Yielding()
    return Mappings(BarrierView(cast(Storage, physical), "auth/x/")), physical


async def test_any_name_is_one_storage_segment() -> None:
    store, physical = mappings()
    names = ["..", ".", "a/b", "a%2Fb", "sp ace", "ünï"]
    for name in names:
        await store.update_user(name, lambda _: UserEntry(["g"], ["p"]))
    assert await store.users() == sorted(names)
    assert all(k.count("/") == 0 for k in await physical.list("auth/x/user/"))
    for name in names:
        assert await store.user(name) == UserEntry(["g"], ["p"])
        await store.delete_user(name)
    assert await store.users() == []


async def test_groups_are_stored_lower_case_and_users_are_not() -> None:
    store, _ = mappings()
    await store.update_group("Admins", lambda _: GroupEntry(["a"]))
    assert await store.group("ADMINS") == GroupEntry(["a"])
    assert await store.groups() == ["admins"]
    await store.update_user("Alice", lambda user: user)
    assert await store.user("alice") is None
    assert await store.user("Alice") == UserEntry()
    assert await store.users() == ["Alice"]


async def test_concurrent_partial_updates_keep_both_changes() -> None:
    store, _ = mappings()
    await asyncio.gather(
        store.update_user("alice", lambda user: replace(user, groups=["g"])),
        store.update_user("alice", lambda user: replace(user, policies=["p"])),
    )
    assert await store.user("alice") == UserEntry(["g"], ["p"])


def test_policies_are_normalised() -> None:
    assert clean_policies([" B", "a", "b", "", "  "]) == ["a", "b"]
