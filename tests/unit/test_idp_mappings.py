"""Local users and groups of the idp method: name encoding and case rules."""

from __future__ import annotations

from typing import cast

from node.auth.idp.mappings import GroupEntry, Mappings, UserEntry, clean_policies
from node.barrier.view import BarrierView, Storage
from node.physical.inmem import InmemBackend


def mappings() -> tuple[Mappings, InmemBackend]:
    physical = InmemBackend()
    return Mappings(BarrierView(cast(Storage, physical), "auth/x/")), physical


async def test_any_name_is_one_storage_segment() -> None:
    store, physical = mappings()
    names = ["..", ".", "a/b", "a%2Fb", "sp ace", "ünï"]
    for name in names:
        await store.put_user(name, UserEntry(["g"], ["p"]))
    assert await store.users() == sorted(names)
    assert all(k.count("/") == 0 for k in await physical.list("auth/x/user/"))
    for name in names:
        assert await store.user(name) == UserEntry(["g"], ["p"])
        await store.delete_user(name)
    assert await store.users() == []


async def test_groups_are_stored_lower_case_and_users_are_not() -> None:
    store, _ = mappings()
    await store.put_group("Admins", GroupEntry(["a"]))
    assert await store.group("ADMINS") == GroupEntry(["a"])
    assert await store.groups() == ["admins"]
    await store.put_user("Alice", UserEntry())
    assert await store.user("alice") is None
    assert await store.users() == ["Alice"]


def test_policies_are_normalised() -> None:
    assert clean_policies([" B", "a", "b", "", "  "]) == ["a", "b"]
