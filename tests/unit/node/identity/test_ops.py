"""Entity, alias and group changes: the reference's validation and cascading deletes."""

from __future__ import annotations

import os

import pytest

from node.barrier.barrier import Barrier
from node.barrier.view import BarrierView
from node.identity import entities, groups
from node.identity.entities import AliasChange, EntityChange
from node.identity.groups import GroupAliasChange, GroupChange
from node.identity.inputs import MountDirectory, metadata, policy_list
from node.identity.scope import Scope
from node.identity.service import IdentityService
from node.identity.state import IdentityState
from node.identity.store import IdentityStore
from node.namespaces.model import ROOT, Namespace
from node.physical.inmem import InmemBackend
from node.routing.mounts import new_mount
from sdk.errors import InvalidRequestError

CHILD = Namespace("kid", "kid/")
USERPASS = new_mount("userpass/", "userpass", table="auth")
OIDC = new_mount("oidc/", "oidc", table="auth")
LOCAL = new_mount("local/", "userpass", table="auth", local=True)
ENGINE = new_mount("kv/", "kv")
CHILD_MOUNT = new_mount("up/", "userpass", table="auth", namespace_id=CHILD.id)


class Tree:
    def by_id(self, namespace_id: str) -> Namespace | None:
        return {ROOT.id: ROOT, CHILD.id: CHILD}.get(namespace_id)

    def ancestors(self, namespace_id: str) -> list[Namespace]:
        return [ROOT] if namespace_id == ROOT.id else [ROOT, CHILD]


@pytest.fixture
async def service() -> IdentityService:
    barrier = Barrier(InmemBackend())
    await barrier.initialize(os.urandom(32))
    service = IdentityService(Tree())
    for ns in (ROOT, CHILD):
        view = BarrierView(barrier, f"{ns.id}/identity/")
        service.register(ns.id, IdentityStore(view, ns.id))
    return service


def scope_of(service: IdentityService, namespace_id: str = ROOT.id) -> Scope:
    store = service.store(namespace_id)
    assert store is not None
    entries = [USERPASS, OIDC, LOCAL, ENGINE, CHILD_MOUNT]
    return Scope(service, store, MountDirectory(namespace_id, lambda: entries))


@pytest.fixture
def scope(service: IdentityService) -> Scope:
    return scope_of(service)


async def state(scope: Scope) -> IdentityState:
    return await scope.store.state()


# -- inputs ------------------------------------------------------------------------------


def test_metadata_shapes_and_limits() -> None:
    assert metadata({"a": "1", "b": 2}) == {"a": "1", "b": "2"}
    assert metadata(["a=1", "b=x=y"]) == {"a": "1", "b": "x=y"}
    for bad in (
        ["novalue"],
        5,
        {"a": {"nested": 1}},
        {"bad key": "v"},
        {"": "v"},
        {"k" * 129: "v"},
    ):
        with pytest.raises(InvalidRequestError):
            metadata(bad)
    with pytest.raises(InvalidRequestError, match="more than 64"):
        metadata({f"k{i}": "v" for i in range(65)})
    assert metadata({"any key": "v"}, "custom_metadata", custom=True) == {"any key": "v"}
    assert policy_list(["a", " b", "a", ""]) == ("a", "b")
    with pytest.raises(InvalidRequestError, match="cannot contain root"):
        policy_list(["root"])


# -- entities ----------------------------------------------------------------------------


async def test_entity_create_update_by_id_and_name(scope: Scope) -> None:
    made, created = await entities.save_entity(scope, EntityChange(name="ann", policies=("p",)))
    assert created and made.namespace_id == ROOT.id
    same, created = await entities.save_entity(scope, EntityChange(name="ANN", disabled=True))
    assert not created and same.id == made.id and same.policies == ("p",) and same.disabled
    renamed, _ = await entities.save_entity(scope, EntityChange(entity_id=made.id, name="anna"))
    assert renamed.name == "anna" and renamed.creation_time == made.creation_time
    other, _ = await entities.save_entity(scope, EntityChange(name="bo"))
    with pytest.raises(InvalidRequestError, match="entity name is already in use"):
        await entities.save_entity(scope, EntityChange(entity_id=other.id, name="anna"))
    with pytest.raises(InvalidRequestError, match="entity not found from id"):
        await entities.save_entity(scope, EntityChange(entity_id="nope"))
    unnamed, _ = await entities.save_entity(scope, EntityChange())
    assert unnamed.name.startswith("entity_")


async def test_alias_create_update_move_and_validation(scope: Scope) -> None:
    ann, _ = await entities.save_entity(scope, EntityChange(name="ann"))
    bo, _ = await entities.save_entity(scope, EntityChange(name="bo"))
    with pytest.raises(InvalidRequestError, match="'id' or 'mount_accessor' and 'name'"):
        await entities.save_alias(scope, AliasChange(name="x"))
    for accessor in ("auth_nope", ENGINE.accessor, CHILD_MOUNT.accessor):
        with pytest.raises(InvalidRequestError, match="invalid mount accessor"):
            await entities.save_alias(scope, AliasChange(name="x", mount_accessor=accessor))
    with pytest.raises(InvalidRequestError, match="invalid canonical ID"):
        await entities.save_alias(scope, AliasChange("", "x", USERPASS.accessor, "nope"))

    alias = await entities.save_alias(scope, AliasChange("", "ann", USERPASS.accessor, ann.id))
    assert alias is not None and alias.mount_type == "userpass"
    with pytest.raises(InvalidRequestError, match="Alias already exists"):
        await entities.save_alias(scope, AliasChange("", "ann2", USERPASS.accessor, ann.id))
    # same factors again: an update, and a no-op when nothing changes
    assert await entities.save_alias(scope, AliasChange("", "ann", USERPASS.accessor)) is None
    recased = await entities.save_alias(scope, AliasChange("", "ANN", USERPASS.accessor))
    assert recased is not None and (recased.id, recased.name) == (alias.id, "ANN")
    assert await entities.save_alias(scope, AliasChange(alias.id)) is None

    custom = {"tier": "gold"}
    updated = await entities.save_alias(scope, AliasChange(alias.id, custom_metadata=custom))
    assert updated is not None and updated.custom_metadata == custom
    moved = await entities.save_alias(scope, AliasChange(alias.id, canonical_id=bo.id))
    assert moved is not None and moved.canonical_id == bo.id
    current = await state(scope)
    assert current.entity(ann.id).alias_ids == ()  # type: ignore[union-attr]
    assert current.entity(bo.id).alias_ids == (alias.id,)  # type: ignore[union-attr]

    other = await entities.save_alias(scope, AliasChange("", "ann-oidc", OIDC.accessor, ann.id))
    assert other is not None
    with pytest.raises(InvalidRequestError, match="given entity already has an alias"):
        await entities.save_alias(
            scope, AliasChange(alias.id, mount_accessor=OIDC.accessor, canonical_id=ann.id)
        )
    with pytest.raises(InvalidRequestError, match="combination of mount accessor and name"):
        await entities.save_alias(
            scope, AliasChange(other.id, name="ann", mount_accessor=USERPASS.accessor)
        )
    with pytest.raises(InvalidRequestError, match="invalid alias ID"):
        await entities.save_alias(scope, AliasChange("nope", name="x"))

    fresh = await entities.save_alias(scope, AliasChange("", "cy", USERPASS.accessor))
    assert fresh is not None
    assert (await state(scope)).entity(fresh.canonical_id) is not None  # entity made for it
    await entities.delete_alias(scope, fresh)
    assert (await state(scope)).entity(fresh.canonical_id).alias_ids == ()  # type: ignore[union-attr]


async def test_deleting_an_entity_cascades(service: IdentityService) -> None:
    child = scope_of(service, CHILD.id)
    dee, _ = await entities.save_entity(child, EntityChange(name="dee"))
    await entities.save_alias(child, AliasChange("", "dee", CHILD_MOUNT.accessor, dee.id))
    here, _ = await groups.save_group(child, GroupChange(name="here", member_entity_ids=(dee.id,)))
    above, _ = await groups.save_group(
        scope_of(service), GroupChange(name="above", member_entity_ids=(dee.id,))
    )
    await entities.delete_entity(child, dee)
    kid_state = await state(child)
    assert kid_state.entities == {} and kid_state.aliases == {}
    assert kid_state.group(here.id).member_entity_ids == ()  # type: ignore[union-attr]
    root_state = await state(scope_of(service))
    assert root_state.group(above.id).member_entity_ids == ()  # type: ignore[union-attr]
    # the name and the alias factors are free again
    again, created = await entities.save_entity(child, EntityChange(name="dee"))
    assert created
    assert await entities.save_alias(child, AliasChange("", "dee", CHILD_MOUNT.accessor, again.id))


# -- groups ------------------------------------------------------------------------------


async def test_group_validation(scope: Scope) -> None:
    made, created = await groups.save_group(scope, GroupChange(name="g", policies=("a",)))
    assert created and made.type == "internal"
    same, created = await groups.save_group(scope, GroupChange(name="G", metadata={"k": "v"}))
    assert not created and same.id == made.id and same.policies == ("a",) and same.modify_index == 2
    with pytest.raises(InvalidRequestError, match="group type cannot be changed"):
        await groups.save_group(scope, GroupChange(type="external"), made.id)
    with pytest.raises(InvalidRequestError, match='invalid group type "weird"'):
        await groups.save_group(scope, GroupChange(name="w", type="weird"))
    with pytest.raises(InvalidRequestError, match="invalid group ID"):
        await groups.save_group(scope, GroupChange(), "nope")
    with pytest.raises(InvalidRequestError, match='invalid entity ID "nope"'):
        await groups.save_group(scope, GroupChange(member_entity_ids=("nope",)), made.id)
    other, _ = await groups.save_group(scope, GroupChange(name="other"))
    with pytest.raises(InvalidRequestError, match="group name is already in use"):
        await groups.save_group(scope, GroupChange(name="g"), other.id)
    ext, _ = await groups.save_group(scope, GroupChange(name="ext", type="external"))
    with pytest.raises(InvalidRequestError, match="member groups can't be set"):
        await groups.save_group(scope, GroupChange(member_group_ids=(made.id,)), ext.id)


async def test_deleting_a_group_cascades(service: IdentityService) -> None:
    root, child = scope_of(service), scope_of(service, CHILD.id)
    leaf, _ = await groups.save_group(child, GroupChange(name="leaf", type="external"))
    alias = await groups.save_group_alias(
        child, None, GroupAliasChange("l", CHILD_MOUNT.accessor, leaf.id)
    )
    assert alias is not None
    mid, _ = await groups.save_group(child, GroupChange(name="mid", member_group_ids=(leaf.id,)))
    top, _ = await groups.save_group(
        root, GroupChange(name="top", member_group_ids=(leaf.id, mid.id))
    )
    await groups.delete_group(child, leaf)
    kid_state = await state(child)
    assert kid_state.group(leaf.id) is None and kid_state.group_aliases == {}
    assert kid_state.group(mid.id).member_group_ids == ()  # type: ignore[union-attr]
    assert (await state(root)).group(top.id).member_group_ids == (mid.id,)  # type: ignore[union-attr]


async def test_group_alias_rules(scope: Scope) -> None:
    internal, _ = await groups.save_group(scope, GroupChange(name="int"))
    ext, _ = await groups.save_group(scope, GroupChange(name="ext", type="external"))
    acc = USERPASS.accessor
    with pytest.raises(InvalidRequestError, match="missing alias name"):
        await groups.save_group_alias(scope, None, GroupAliasChange("", acc))
    with pytest.raises(InvalidRequestError, match="missing mount_accessor"):
        await groups.save_group_alias(scope, None, GroupAliasChange("n", ""))
    with pytest.raises(InvalidRequestError, match="alias can't be set on an internal group"):
        await groups.save_group_alias(scope, None, GroupAliasChange("n", acc, internal.id))
    with pytest.raises(InvalidRequestError, match="invalid group ID given in 'canonical_id'"):
        await groups.save_group_alias(scope, None, GroupAliasChange("n", acc, "nope"))
    with pytest.raises(InvalidRequestError, match="is a local mount"):
        await groups.save_group_alias(scope, None, GroupAliasChange("n", LOCAL.accessor, ext.id))

    first = await groups.save_group_alias(scope, None, GroupAliasChange("devs", acc, ext.id))
    assert first is not None and (await state(scope)).group(ext.id).alias_id == first.id  # type: ignore[union-attr]
    with pytest.raises(InvalidRequestError, match="already in use"):
        await groups.save_group_alias(scope, None, GroupAliasChange("DEVS", acc))
    assert await groups.save_group_alias(scope, first, GroupAliasChange("devs", acc)) is None

    # no canonical_id: a new external group is made for the alias
    auto = await groups.save_group_alias(scope, None, GroupAliasChange("ops", acc))
    assert auto is not None
    made = (await state(scope)).group(auto.canonical_id)
    assert made is not None and made.type == "external" and made.alias_id == auto.id

    # pointing another alias at ``ext`` replaces its alias
    moved = await groups.save_group_alias(scope, auto, GroupAliasChange("ops", acc, ext.id))
    assert moved is not None
    current = await state(scope)
    assert current.group(ext.id).alias_id == auto.id  # type: ignore[union-attr]
    assert current.group(made.id).alias_id == ""  # type: ignore[union-attr]
    assert current.group_alias(first.id) is None
    await groups.delete_group_alias(scope, moved)
    assert (await state(scope)).group(ext.id).alias_id == ""  # type: ignore[union-attr]
