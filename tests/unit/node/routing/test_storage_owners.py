"""``Router.storage_owners`` follows every mount and unmount."""

from __future__ import annotations

from typing import Any, cast

from node.logical.backend import Backend
from node.logical.mount import new_mount
from node.routing.router import Router


def _backend(name: str) -> Backend:
    return cast(Backend, name)  # only its identity is looked at


def _expected(router: Router) -> tuple[tuple[str, Any], ...]:
    return tuple((entry.storage_prefix, backend) for entry, backend in router.mounted())


def test_owners_are_rebuilt_after_each_change() -> None:
    router = Router()
    kv, auth = new_mount("kv/", "kv"), new_mount("userpass/", "userpass", table="auth")
    child = new_mount("kv/", "kv", namespace_id="ns1", namespace_path="team/")
    assert router.storage_owners() == ()
    router.mount(kv, _backend("kv"))
    assert router.storage_owners() == _expected(router)
    router.mount(auth, _backend("auth"))
    router.mount(child, _backend("child"))
    owners = router.storage_owners()
    assert owners == _expected(router)
    assert [prefix for prefix, _ in owners] == [
        f"logical/{kv.uuid}/",
        f"auth/{auth.uuid}/",
        f"namespaces/ns1/logical/{child.uuid}/",
    ]
    assert router.storage_owners() is owners  # unchanged routes: the same tuple
    router.mount(kv, _backend("kv again"))  # the same path, another backend
    assert router.storage_owners() == _expected(router)
    router.unmount(auth.route_path)
    assert router.storage_owners() == _expected(router)
    router.unmount("never-mounted/")
    assert router.storage_owners() == _expected(router)
