"""IdentityStore: records, storage layout, conditional writes and the cache."""

from __future__ import annotations

import os

import pytest

from node.barrier.barrier import Barrier
from node.barrier.view import BarrierView
from node.identity.records import Entity, EntityAlias, Group, GroupAlias, new_id, now
from node.identity.state import IdentityState
from node.identity.store import IdentityStore
from node.physical.inmem import InmemBackend
from sdk.errors import RevisionMismatchError


@pytest.fixture
async def view() -> BarrierView:
    barrier = Barrier(InmemBackend())
    await barrier.initialize(os.urandom(32))
    return BarrierView(barrier, "identity/")


def entity(name: str, **kwargs: object) -> Entity:
    stamp = now()
    return Entity(new_id(), name, "root", creation_time=stamp, last_update_time=stamp, **kwargs)  # type: ignore[arg-type]


def alias(name: str, owner: Entity, accessor: str = "auth_userpass_1") -> EntityAlias:
    return EntityAlias(new_id(), name, owner.id, accessor, "root", mount_type="userpass")


async def put(store: IdentityStore, *records: Entity | EntityAlias | Group | GroupAlias) -> None:
    async def write(state: IdentityState) -> None:
        await store.commit(list(records))

    await store.run(write)


def test_records_round_trip_through_json() -> None:
    e = entity("alice", policies=("a", "b"), metadata={"team": "ops"}, disabled=True)
    a = EntityAlias(new_id(), "alice", e.id, "acc", "root", "userpass", {"k": "v"}, {"c": "d"})
    g = Group(
        new_id(), "devs", "root", "external", ("p",), (e.id,), (), {"x": "y"}, "al", "t", "t", 3
    )
    ga = GroupAlias(new_id(), "devs", "acc", g.id, "root", "t", "t")
    for record in (e, a, g, ga):
        assert type(record).from_json(record.to_json()) == record


async def test_layout_and_reload_from_storage(view: BarrierView) -> None:
    store = IdentityStore(view, "root")
    alice = entity("Alice.Smith/ops")
    login = alias("alice", alice)
    alice = alice.touched(alias_ids=(login.id,))
    group = Group(new_id(), "devs", "root", member_entity_ids=(alice.id,))
    galias = GroupAlias(new_id(), "devs-ext", "auth_userpass_1", group.id, "root")
    await put(store, alice, login, group, galias)

    assert await view.list("entity/") == [alice.id]
    # names are folded and encoded into one segment: no "/" and no "." segments
    assert await view.list("entity-name/") == ["alice%2Esmith%2Fops"]
    assert await view.list("alias-by-factors/auth_userpass_1/") == ["alice"]
    assert await view.list("group-name/") == ["devs"]
    assert await view.list("group-alias-by-factors/auth_userpass_1/") == ["devs-ext"]
    found = await view.get("alias-by-factors/auth_userpass_1/alice")
    assert found is not None and found.value == login.id.encode()

    state = await IdentityStore(view, "root").state()
    assert state.entity_by_name("ALICE.smith/OPS") == alice
    assert state.alias_by_factors("auth_userpass_1", "Alice") == login
    assert state.aliases_of(alice) == [login]
    assert state.groups_with_entity(alice.id) == [group]
    assert state.group_alias_by_factors("auth_userpass_1", "DEVS-EXT") == galias


async def test_second_writer_of_a_name_loses(view: BarrierView) -> None:
    one, two = IdentityStore(view, "root"), IdentityStore(view, "root")
    await one.state()
    await two.state()
    await put(one, entity("bob"))

    # the stale cache of ``two`` does not know "bob" is taken
    assert (await two.state()).entity_by_name("bob") is None
    with pytest.raises(RevisionMismatchError):
        await two.commit([entity("bob")])
    # the failed commit dropped the cache: the reload sees the winner
    assert (await two.state()).entity_by_name("bob") is not None
    assert len((await IdentityStore(view, "root").state()).entities) == 1


async def test_run_retries_against_fresh_data(view: BarrierView) -> None:
    one, two = IdentityStore(view, "root"), IdentityStore(view, "root")
    await two.state()
    await put(one, entity("carol"))
    attempts: list[bool] = []

    async def create_unless_taken(state: IdentityState) -> str:
        existing = state.entity_by_name("carol")
        attempts.append(existing is None)
        if existing is not None:
            return existing.id
        fresh = entity("carol")
        await two.commit([fresh])
        return fresh.id

    found = await two.run(create_unless_taken)
    assert attempts == [True, False]
    assert found == (await one.state()).entity_by_name("carol").id  # type: ignore[union-attr]


async def test_duplicate_alias_factors_are_refused(view: BarrierView) -> None:
    store = IdentityStore(view, "root")
    a, b = entity("a"), entity("b")
    await put(store, a, b, alias("same", a))
    with pytest.raises(RevisionMismatchError):
        await put(store, alias("SAME", b))


async def test_stale_record_write_is_refused(view: BarrierView) -> None:
    one, two = IdentityStore(view, "root"), IdentityStore(view, "root")
    dave = entity("dave")
    await put(one, dave)
    await two.state()
    await put(one, dave.touched(policies=("p1",)))
    with pytest.raises(RevisionMismatchError):
        await two.commit([dave.touched(policies=("p2",))])
    assert (await two.state()).entity(dave.id).policies == ("p1",)  # type: ignore[union-attr]


async def test_invalidate_reloads(view: BarrierView) -> None:
    one, two = IdentityStore(view, "root"), IdentityStore(view, "root")
    assert (await two.state()).entities == {}
    generation = two.generation
    await put(one, entity("erin"))
    assert (await two.state()).entity_by_name("erin") is None  # cached
    two.invalidate()
    assert two.generation > generation
    assert (await two.state()).entity_by_name("erin") is not None


async def test_rename_and_delete_free_their_names(view: BarrierView) -> None:
    store = IdentityStore(view, "root")
    frank = entity("frank")
    await put(store, frank)
    await put(store, frank.touched(name="franklin"))
    assert await view.list("entity-name/") == ["franklin"]
    await put(store, entity("frank"))  # the old name is free again

    async def delete(state: IdentityState) -> None:
        await store.commit(deletes=[state.entity_by_name("franklin")])  # type: ignore[list-item]

    await store.run(delete)
    assert await view.list("entity-name/") == ["frank"]
    assert len(await view.list("entity/")) == 1


async def test_case_only_rename_keeps_the_index(view: BarrierView) -> None:
    store = IdentityStore(view, "root")
    gina = entity("gina")
    await put(store, gina)
    await put(store, gina.touched(name="Gina"))
    state = await IdentityStore(view, "root").state()
    assert state.entity_by_name("GINA").name == "Gina"  # type: ignore[union-attr]
    assert await view.list("entity-name/") == ["gina"]
