"""``Router.storage_owners`` follows every mount and unmount, and finds a key's owner."""

from __future__ import annotations

from typing import cast

from hypothesis import given
from hypothesis import strategies as st

from node.logical.backend import Backend
from node.logical.mount import new_mount
from node.routing.owners import StorageOwners
from node.routing.router import Router


def _backend(name: str) -> Backend:
    return cast(Backend, name)  # only its identity is looked at


def _expected(router: Router) -> list[str]:
    return [entry.storage_prefix for entry, _ in router.mounted()]


def test_owners_are_rebuilt_after_each_change() -> None:
    router = Router()
    kv, auth = new_mount("kv/", "kv"), new_mount("userpass/", "userpass", table="auth")
    child = new_mount("kv/", "kv", namespace_id="ns1", namespace_path="team/")
    assert router.storage_owners().prefixes() == []
    router.mount(kv, _backend("kv"))
    assert router.storage_owners().prefixes() == _expected(router)
    router.mount(auth, _backend("auth"))
    router.mount(child, _backend("child"))
    owners = router.storage_owners()
    assert owners.prefixes() == [
        f"logical/{kv.uuid}/",
        f"auth/{auth.uuid}/",
        f"namespaces/ns1/logical/{child.uuid}/",
    ]
    assert owners.owner_of(f"namespaces/ns1/logical/{child.uuid}/data/a") == (
        _backend("child"),
        "data/a",
    )
    assert owners.owner_of(f"logical/{kv.uuid}/metadata/b") == (_backend("kv"), "metadata/b")
    assert owners.owner_of("core/mounts") is None
    assert router.storage_owners() is owners  # unchanged routes: the same lookup
    router.mount(kv, _backend("kv again"))  # the same path, another backend
    assert router.storage_owners().owner_of(f"logical/{kv.uuid}/x") == (_backend("kv again"), "x")
    router.unmount(auth.route_path)
    assert router.storage_owners().prefixes() == _expected(router)
    assert router.storage_owners().owner_of(f"auth/{auth.uuid}/user") is None
    router.unmount("never-mounted/")
    assert router.storage_owners().prefixes() == _expected(router)


def test_nested_prefixes_belong_to_the_first_mount_that_matches() -> None:
    owners = StorageOwners(
        [("logical/u1/", _backend("outer")), ("logical/u1/sub/", _backend("inner"))]
    )
    assert owners.owner_of("logical/u1/sub/x") == (_backend("outer"), "sub/x")
    assert owners.owner_of("logical/u10/x") is None


_segments = st.text(alphabet="ab/", min_size=1, max_size=4)


@given(
    prefixes=st.lists(_segments.map(lambda s: s + "/"), max_size=6),
    keys=st.lists(st.text(alphabet="ab/", max_size=10), max_size=20),
)
def test_owner_is_the_first_mount_in_order_whose_prefix_starts_the_key(
    prefixes: list[str], keys: list[str]
) -> None:
    """Distinct prefixes take the lookup by length, nested or repeated ones the
    scan: both agree with the plain definition."""
    owners = StorageOwners((prefix, _backend(f"b{i}")) for i, prefix in enumerate(prefixes))
    for key in keys:
        first = next((i for i, prefix in enumerate(prefixes) if key.startswith(prefix)), None)
        if first is None:
            assert owners.owner_of(key) is None
        else:
            assert owners.owner_of(key) == (_backend(f"b{first}"), key[len(prefixes[first]) :])
