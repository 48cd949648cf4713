"""IdentityService: login linking, group inheritance, cross-namespace policies, templates."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Sequence

import pytest

from node.barrier.barrier import Barrier
from node.barrier.view import BarrierView
from node.identity import groups
from node.identity.groups import GroupAliasChange, GroupChange
from node.identity.inputs import MountDirectory
from node.identity.records import Group, new_id
from node.identity.scope import Scope
from node.identity.service import IdentityService, SingleRootTree
from node.identity.state import IdentityState
from node.identity.store import IdentityStore
from node.logical.response import Login
from node.namespaces.model import ROOT, Namespace
from node.physical.inmem import InmemBackend
from node.policy.parser import parse_policy
from node.policy.templates import render_templates
from node.routing.mounts import new_mount
from sdk.errors import InvalidRequestError, RevisionMismatchError
from sdk.physical import Entry, TxnOp

CHILD = Namespace("ns1id", "team-a/")
USERPASS = new_mount("userpass/", "userpass", table="auth")
LDAP = new_mount("ldap/", "ldap", table="auth")
CHILD_MOUNT = new_mount(
    "userpass/", "userpass", table="auth", namespace_id=CHILD.id, namespace_path=CHILD.path
)
MOUNTS = [USERPASS, LDAP, CHILD_MOUNT]


class Tree:
    """A fixed namespace tree: root and one child."""

    def __init__(self, *namespaces: Namespace) -> None:
        self._by_id = {ns.id: ns for ns in namespaces}

    def by_id(self, namespace_id: str) -> Namespace | None:
        return self._by_id.get(namespace_id)

    def ancestors(self, namespace_id: str) -> list[Namespace]:
        own = self._by_id.get(namespace_id)
        if own is None:
            return []
        chain = [ns for ns in self._by_id.values() if ns.contains(own)]
        return sorted(chain, key=lambda ns: len(ns.path))


class YieldingBackend(InmemBackend):
    """In-memory storage that yields to the event loop on every call, like real I/O.

    Without this, in-memory calls never suspend and "concurrent" tasks run one
    after another, so races could not happen in the tests that look for them.
    """

    commits = 0
    conflicts = 0

    async def get(self, key: str) -> Entry | None:
        await asyncio.sleep(0)
        return await super().get(key)

    async def list(self, prefix: str) -> list[str]:
        await asyncio.sleep(0)
        return await super().list(prefix)

    async def commit(self, ops: Sequence[TxnOp]) -> int:
        await asyncio.sleep(0)
        self.commits += 1
        try:
            return await super().commit(ops)
        except RevisionMismatchError:
            self.conflicts += 1
            raise


@pytest.fixture
async def barrier() -> Barrier:
    barrier = Barrier(YieldingBackend())
    await barrier.initialize(os.urandom(32))
    return barrier


@pytest.fixture
def service(barrier: Barrier) -> IdentityService:
    return node_service(barrier)


def node_service(barrier: Barrier) -> IdentityService:
    """A service as one node would have it: its own stores (and caches) over ``barrier``."""
    service = IdentityService(Tree(ROOT, CHILD))
    service.register(ROOT.id, IdentityStore(BarrierView(barrier, "identity/"), ROOT.id))
    child_view = BarrierView(barrier, f"namespaces/{CHILD.id}/identity/")
    service.register(CHILD.id, IdentityStore(child_view, CHILD.id))
    return service


def scope(service: IdentityService, namespace_id: str = ROOT.id) -> Scope:
    store = service.store(namespace_id)
    assert store is not None
    return Scope(service, store, MountDirectory(namespace_id, lambda: MOUNTS))


def login(name: str, *groups: str, **metadata: str) -> Login:
    return Login(
        alias_name=name,
        policies=[],
        token=None,
        alias_metadata=metadata,
        group_aliases=list(groups),
    )


async def state_of(service: IdentityService, namespace_id: str = ROOT.id) -> IdentityState:
    store = service.store(namespace_id)
    assert store is not None
    return await store.state()


async def group(
    service: IdentityService, name: str, namespace_id: str = ROOT.id, **kw: object
) -> Group:
    created, _ = await groups.save_group(scope(service, namespace_id), GroupChange(name=name, **kw))  # type: ignore[arg-type]
    return created


# -- linking logins ----------------------------------------------------------------------


async def test_first_login_creates_entity_and_alias(service: IdentityService) -> None:
    entity_id = await service.link_login(ROOT.id, USERPASS, login("alice", team="ops"))
    state = await state_of(service)
    entity = state.entity(entity_id)
    assert entity is not None and re.fullmatch(r"entity_[0-9a-f]{8}", entity.name)
    (alias,) = state.aliases_of(entity)
    assert (alias.name, alias.mount_accessor, alias.mount_type) == (
        "alice",
        USERPASS.accessor,
        "userpass",
    )
    assert alias.metadata == {"team": "ops"}

    again = await service.link_login(ROOT.id, USERPASS, login("ALICE", team="dev"))
    assert again == entity_id
    assert (await state_of(service)).aliases_of(entity)[0].metadata == {"team": "dev"}
    other_mount = await service.link_login(ROOT.id, LDAP, login("alice"))
    assert other_mount != entity_id


async def test_concurrent_logins_create_one_entity(service: IdentityService) -> None:
    ids = await asyncio.gather(
        *(service.link_login(ROOT.id, USERPASS, login("bob")) for _ in range(20))
    )
    assert len(set(ids)) == 1
    state = await state_of(service)
    assert len(state.entities) == 1 and len(state.aliases) == 1


async def test_concurrent_logins_on_two_nodes_create_one_entity(barrier: Barrier) -> None:
    # Separate caches and locks: only the storage revision checks keep this unique.
    nodes = [node_service(barrier), node_service(barrier)]
    ids = await asyncio.gather(
        *(nodes[i % 2].link_login(ROOT.id, USERPASS, login("carol")) for i in range(20))
    )
    assert len(set(ids)) == 1
    fresh = await state_of(node_service(barrier))
    assert len(fresh.entities) == 1 and len(fresh.aliases) == 1
    physical = barrier.physical
    assert isinstance(physical, YieldingBackend)
    assert physical.conflicts >= 1  # the race did happen, and was lost cleanly


async def test_linked_entity_answers_only_when_linking_would_write_nothing(
    service: IdentityService, barrier: Barrier
) -> None:
    """A performance secondary completes such a login itself; any other goes to the primary."""
    physical = barrier.physical
    assert isinstance(physical, YieldingBackend)
    before = physical.commits
    assert await service.linked_entity(ROOT.id, USERPASS, login("mia", team="ops")) is None
    assert physical.commits == before  # it writes nothing
    assert not (await state_of(service)).entities
    entity_id = await service.link_login(ROOT.id, USERPASS, login("mia", team="ops"))
    assert await service.linked_entity(ROOT.id, USERPASS, login("MIA", team="ops")) == entity_id
    # new alias metadata, or an external group to join, needs a write
    assert await service.linked_entity(ROOT.id, USERPASS, login("mia", team="dev")) is None
    assert physical.commits == before + 1  # only link_login wrote
    devs = await group(service, "devs", type="external")
    await groups.save_group_alias(
        scope(service), None, GroupAliasChange("devs", USERPASS.accessor, devs.id)
    )
    assert await service.linked_entity(ROOT.id, USERPASS, login("mia", "devs", team="ops")) is None
    assert await service.linked_entity(ROOT.id, LDAP, login("mia")) is None
    assert await service.linked_entity(ROOT.id, USERPASS, login("")) == ""


async def test_unregistered_namespace_links_nothing() -> None:
    service = IdentityService(SingleRootTree())
    assert await service.link_login(ROOT.id, USERPASS, login("dan")) == ""
    found = await service.policies_for("", ROOT.id)
    assert (found.identity_policies, found.external_namespace_policies) == ([], {})


# -- external groups ---------------------------------------------------------------------


async def test_external_group_membership_follows_login_groups(service: IdentityService) -> None:
    devs = await group(service, "devs", type="external", policies=("dev",))
    ops = await group(service, "ops", type="external", policies=("ops",))
    other = await group(service, "ldap-devs", type="external", policies=("ldap",))
    for target, name, mount in (
        (devs, "devs", USERPASS),
        (ops, "ops", USERPASS),
        (other, "devs", LDAP),
    ):
        await groups.save_group_alias(
            scope(service), None, GroupAliasChange(name, mount.accessor, target.id)
        )

    entity_id = await service.link_login(ROOT.id, USERPASS, login("erin", "DEVS", "unknown"))
    found = await service.policies_for(entity_id, ROOT.id)
    assert found.identity_policies == ["dev"]

    await service.link_login(ROOT.id, USERPASS, login("erin", "ops"))
    state = await state_of(service)
    assert [g.name for g in state.groups_with_entity(entity_id)] == ["ops"]
    assert (await service.policies_for(entity_id, ROOT.id)).identity_policies == ["ops"]

    await service.link_login(ROOT.id, USERPASS, login("erin"))
    assert (await service.policies_for(entity_id, ROOT.id)).identity_policies == []


async def test_external_group_refuses_explicit_members(service: IdentityService) -> None:
    entity_id = await service.link_login(ROOT.id, USERPASS, login("fay"))
    with pytest.raises(InvalidRequestError, match="can't be set manually"):
        await group(service, "ext", type="external", member_entity_ids=(entity_id,))


# -- inheritance and cycles --------------------------------------------------------------


async def test_nested_groups_inherit_policies_live(service: IdentityService) -> None:
    entity_id = await service.link_login(ROOT.id, USERPASS, login("gus"))
    await groups.save_group(scope(service), GroupChange(name="x"))
    child = await group(service, "child", policies=("c",), member_entity_ids=(entity_id,))
    middle = await group(service, "middle", policies=("m",), member_group_ids=(child.id,))
    top = await group(service, "top", policies=("t", "m"), member_group_ids=(middle.id,))
    assert (await service.policies_for(entity_id, ROOT.id)).identity_policies == ["c", "m", "t"]

    entity = await service.entity(entity_id, ROOT.id)
    assert entity is not None
    direct, inherited = await service.memberships(entity)
    assert [g.id for g in direct] == [child.id]
    assert {g.id for g in inherited} == {middle.id, top.id}

    # changes apply at once to the next question (no token refresh needed)
    await groups.save_group(scope(service), GroupChange(policies=("t2",)), top.id)
    assert (await service.policies_for(entity_id, ROOT.id)).identity_policies == ["c", "m", "t2"]
    await groups.save_group(scope(service), GroupChange(member_group_ids=()), middle.id)
    assert (await service.policies_for(entity_id, ROOT.id)).identity_policies == ["c"]


async def test_cycles_are_refused(service: IdentityService) -> None:
    a = await group(service, "a")
    b = await group(service, "b", member_group_ids=(a.id,))
    c = await group(service, "c", member_group_ids=(b.id,))
    with pytest.raises(InvalidRequestError, match="cyclic relationship detected"):
        await groups.save_group(scope(service), GroupChange(member_group_ids=(c.id,)), a.id)
    with pytest.raises(InvalidRequestError, match="same as the ID of the group"):
        await groups.save_group(scope(service), GroupChange(member_group_ids=(a.id,)), a.id)
    with pytest.raises(InvalidRequestError, match="invalid member group ID"):
        await groups.save_group(scope(service), GroupChange(member_group_ids=(new_id(),)), a.id)


async def test_stored_cycle_does_not_loop(service: IdentityService) -> None:
    # As if two nodes each added half of a cycle at once: reads must still end.
    entity_id = await service.link_login(ROOT.id, USERPASS, login("hal"))
    store = service.store(ROOT.id)
    assert store is not None
    one_id, two_id = new_id(), new_id()
    one = Group(
        one_id,
        "one",
        ROOT.id,
        policies=("p1",),
        member_entity_ids=(entity_id,),
        member_group_ids=(two_id,),
    )
    two = Group(two_id, "two", ROOT.id, policies=("p2",), member_group_ids=(one_id,))

    async def write(state: IdentityState) -> None:
        await store.commit([one, two])

    await store.run(write)
    found = await asyncio.wait_for(service.policies_for(entity_id, ROOT.id), 5)
    assert found.identity_policies == ["p1", "p2"]


# -- namespaces --------------------------------------------------------------------------


async def test_parent_namespace_group_gives_external_namespace_policies(
    service: IdentityService,
) -> None:
    # SPEC rule 10: an external group of the child maps into an internal group of root.
    mapped = await group(service, "ldap-devs", CHILD.id, type="external", policies=("child-dev",))
    await groups.save_group_alias(
        scope(service, CHILD.id), None, GroupAliasChange("devs", CHILD_MOUNT.accessor, mapped.id)
    )
    platform = await group(
        service, "platform", policies=("platform",), member_group_ids=(mapped.id,)
    )
    entity_id = await service.link_login(CHILD.id, CHILD_MOUNT, login("ivy", "devs"))
    store = service.store(CHILD.id)
    assert store is not None

    async def set_policies(state: IdentityState) -> None:
        entity = state.entity(entity_id)
        assert entity is not None
        await store.commit([entity.touched(policies=("own",))])

    await store.run(set_policies)
    found = await service.policies_for(entity_id, CHILD.id)
    assert found.identity_policies == ["child-dev", "own"]
    assert found.external_namespace_policies == {ROOT.id: ["platform"]}

    entity = await service.entity(entity_id, CHILD.id)
    assert entity is not None
    _, inherited = await service.memberships(entity)
    assert [g.id for g in inherited] == [platform.id]
    # a child group cannot list a parent's group, and root entities are not the child's
    with pytest.raises(InvalidRequestError, match="invalid member group ID"):
        await groups.save_group(
            scope(service, CHILD.id), GroupChange(name="up", member_group_ids=(platform.id,))
        )
    root_entity = await service.link_login(ROOT.id, USERPASS, login("jay"))
    with pytest.raises(InvalidRequestError, match="invalid entity ID"):
        await group(service, "down", CHILD.id, member_entity_ids=(root_entity,))
    # but root may list the child's entity directly
    direct = await group(service, "direct", policies=("d",), member_entity_ids=(entity_id,))
    found = await service.policies_for(entity_id, CHILD.id)
    assert found.external_namespace_policies == {ROOT.id: ["d", "platform"]}
    await groups.delete_group(scope(service), direct)


# -- templates and disabled entities -----------------------------------------------------


async def test_template_values_feed_render_templates(service: IdentityService) -> None:
    entity_id = await service.link_login(ROOT.id, USERPASS, login("kim", dept="eng"))
    store = service.store(ROOT.id)
    assert store is not None

    async def decorate(state: IdentityState) -> None:
        entity = state.entity(entity_id)
        assert entity is not None
        (alias,) = state.aliases_of(entity)
        await store.commit(
            [
                entity.touched(name="kim", metadata={"team": "blue"}),
                alias.touched(custom_metadata={"tier": "gold"}),
            ]
        )

    await store.run(decorate)
    admins = await group(service, "admins", member_entity_ids=(entity_id,), metadata={"site": "x"})
    values = await service.template_values(entity_id, ROOT.id)
    prefix = f"identity.entity.aliases.{USERPASS.accessor}"
    expected = {
        "identity.entity.id": entity_id,
        "identity.entity.name": "kim",
        "identity.entity.metadata.team": "blue",
        f"{prefix}.name": "kim",
        f"{prefix}.metadata.dept": "eng",
        f"{prefix}.custom_metadata.tier": "gold",
        f"identity.groups.ids.{admins.id}.name": "admins",
        f"identity.groups.ids.{admins.id}.metadata.site": "x",
        "identity.groups.names.admins.id": admins.id,
        "identity.groups.names.admins.metadata.site": "x",
    }
    assert expected.items() <= values.items()

    text = "\n".join(
        f'path "{p}" {{ capabilities = ["read"] }}'
        for p in (
            "secret/{{identity.entity.name}}/*",
            "team/{{identity.entity.metadata.team}}",
            f"alias/{{{{identity.entity.aliases.{USERPASS.accessor}.custom_metadata.tier}}}}",
            "groups/{{identity.groups.names.admins.id}}",
            "nothing/{{identity.entity.metadata.missing}}",
        )
    )
    rendered = render_templates(parse_policy("t", text), values)
    assert [rule.path for rule in rendered.rules] == [
        "secret/kim/*",
        "team/blue",
        "alias/gold",
        f"groups/{admins.id}",
    ]


async def test_disabled_entity_gets_nothing(service: IdentityService) -> None:
    entity_id = await service.link_login(ROOT.id, USERPASS, login("lee"))
    await group(service, "g", policies=("p",), member_entity_ids=(entity_id,))
    assert (await service.policies_for(entity_id, ROOT.id)).identity_policies == ["p"]
    assert await service.is_disabled(entity_id, ROOT.id) is False
    store = service.store(ROOT.id)
    assert store is not None

    async def disable(state: IdentityState) -> None:
        entity = state.entity(entity_id)
        assert entity is not None
        await store.commit([entity.touched(disabled=True)])

    await store.run(disable)
    assert await service.is_disabled(entity_id, ROOT.id) is True
    found = await service.policies_for(entity_id, ROOT.id)
    assert (found.identity_policies, found.external_namespace_policies) == ([], {})
    assert await service.template_values(entity_id, ROOT.id) == {}
    assert await service.is_disabled("unknown", ROOT.id) is False
