"""Key-value engines over HTTP: the default KV v2 mount at ``secret/``, and mounts of both
versions enabled through ``sys/mounts``, including concurrent writers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from api.app import create_app
from node.core.core import Core
from tests.api.helpers import Reply, YieldingBackend, assert_envelope, assert_error, call
from tests.conftest import DevServer
from tests.listener_server import ListenerTestServer

INVALID_PATH = "Invalid path for a versioned K/V secrets engine"


def assert_invalid_path(reply: Reply) -> None:
    """404 with ``data: null``, no error message and the reference's hint as a warning."""
    assert reply.status == 404, str(reply)
    body = reply.body
    assert body["data"] is None
    assert body["errors"] == []
    assert len(body["warnings"]) == 1
    assert body["warnings"][0].startswith(INVALID_PATH), body["warnings"]


class Kv:
    """Requests against one mount with the root token."""

    def __init__(self, client: TestClient, token: str, mount: str = "secret") -> None:
        self.client = client
        self.auth = {"X-Vault-Token": token}
        self.mount = mount

    async def req(self, method: str, path: str, body: Any = None, **params: str) -> Reply:
        return await call(
            self.client,
            method,
            f"/v1/{self.mount}/{path}",
            json_body=body,
            headers=self.auth,
            params=params or None,
        )

    async def write(self, name: str, data: dict[str, Any], **options: Any) -> Reply:
        body: dict[str, Any] = {"data": data}
        if options:
            body["options"] = options
        return await self.req("PUT", f"data/{name}", body)

    async def read(self, name: str, **params: str) -> Reply:
        return await self.req("GET", f"data/{name}", **params)

    async def metadata(self, name: str) -> dict[str, Any]:
        reply = await self.req("GET", f"metadata/{name}")
        assert reply.status == 200, str(reply)
        data: dict[str, Any] = reply.data
        return data


@pytest.fixture
def kv(dev: DevServer) -> Kv:
    return Kv(dev.client, dev.token)


# -- data ------------------------------------------------------------------------------------


async def test_write_and_read(kv: Kv) -> None:
    written = await kv.write("app/db", {"user": "admin", "password": "s3cret", "n": 1})

    meta = assert_envelope(written)["data"]
    assert meta["version"] == 1
    assert meta["destroyed"] is False
    assert meta["deletion_time"] == ""
    assert meta["created_time"].endswith("Z")
    read = await kv.read("app/db")
    body = assert_envelope(read)
    assert body["data"]["data"] == {"user": "admin", "password": "s3cret", "n": 1}
    assert body["data"]["metadata"]["version"] == 1
    assert body["data"]["metadata"]["created_time"] == meta["created_time"]


async def test_versions_increase_and_old_versions_read(kv: Kv) -> None:
    versions = [(await kv.write("v", {"n": n})).data["version"] for n in range(1, 5)]

    assert versions == [1, 2, 3, 4]
    assert (await kv.read("v")).data["data"] == {"n": 4}
    for n in range(1, 5):
        reply = await kv.read("v", version=str(n))
        assert reply.status == 200, str(reply)
        assert reply.data["data"] == {"n": n}
        assert reply.data["metadata"]["version"] == n
    assert (await kv.read("v", version="0")).data["data"] == {"n": 4}


@pytest.mark.parametrize("version", ["99", "5", str(2**63 - 1)])
async def test_read_missing_version_is_404(kv: Kv, version: str) -> None:
    await kv.write("v", {"n": 1})

    assert_error(await kv.read("v", version=version), 404)


@pytest.mark.parametrize("version", ["abc", "1.5", "1e2", "-1", "9" * 5000, str(2**70)])
async def test_read_bad_version_is_400(kv: Kv, version: str) -> None:
    await kv.write("v", {"n": 1})

    reply = await kv.read("v", version=version)

    assert_error(reply, 400, "version")


async def test_read_missing_secret_is_404(kv: Kv) -> None:
    reply = await kv.read("nothing/here")

    assert_error(reply, 404)


async def test_cas(kv: Kv) -> None:
    created = await kv.write("c", {"n": 1}, cas=0)
    assert created.status == 200, str(created)

    mismatch = await kv.write("c", {"n": 2}, cas=0)
    assert_error(mismatch, 400, "check-and-set parameter did not match the current version")
    stale = await kv.write("c", {"n": 2}, cas=2)
    assert_error(stale, 400, "check-and-set")

    matched = await kv.write("c", {"n": 2}, cas=1)
    assert matched.status == 200
    assert matched.data["version"] == 2
    assert (await kv.read("c")).data["data"] == {"n": 2}
    assert (await kv.metadata("c"))["current_version"] == 2


@pytest.mark.parametrize("cas", [1.5, True, [1], {"v": 1}, "one"])
async def test_cas_must_be_an_integer(kv: Kv, cas: Any) -> None:
    await kv.write("c", {"n": 1})

    assert_error(await kv.write("c", {"n": 2}, cas=cas), 400, "check-and-set")
    assert (await kv.metadata("c"))["current_version"] == 1


async def test_cas_required_by_config(kv: Kv) -> None:
    await kv.write("c", {"n": 1})
    configured = await kv.req("PUT", "config", {"cas_required": True})
    assert configured.status == 204, str(configured)

    assert_error(await kv.write("c", {"n": 2}), 400, "check-and-set parameter required")
    assert (await kv.write("c", {"n": 2}, cas=1)).status == 200


@pytest.mark.parametrize(
    "body",
    [{}, {"other": 1}, {"data": None}, {"options": {"cas": 0}}, {"data": "x"}, {"data": [1]}],
)
async def test_write_without_data_object_is_400(kv: Kv, body: dict[str, Any]) -> None:
    reply = await kv.req("PUT", "data/nodata", body)

    assert_error(reply, 400)
    assert_error(await kv.read("nodata"), 404)


async def test_write_empty_data_object(kv: Kv) -> None:
    assert (await kv.write("empty", {})).status == 200

    assert (await kv.read("empty")).data["data"] == {}


async def test_delete_latest_then_undelete(kv: Kv) -> None:
    await kv.write("d", {"n": 1})
    await kv.write("d", {"n": 2})

    deleted = await kv.req("DELETE", "data/d")

    assert deleted.status == 204
    read = await kv.read("d")
    assert read.status == 404
    body = read.body
    assert body["errors"] == []
    assert body["data"]["data"] is None
    metadata = body["data"]["metadata"]
    assert metadata["version"] == 2
    assert metadata["deletion_time"]
    assert metadata["destroyed"] is False
    assert (await kv.read("d", version="1")).data["data"] == {"n": 1}

    undeleted = await kv.req("POST", "undelete/d", {"versions": [2]})

    assert undeleted.status == 204, str(undeleted)
    restored = await kv.read("d")
    assert restored.status == 200
    assert restored.data["data"] == {"n": 2}
    assert restored.data["metadata"]["deletion_time"] == ""


async def test_delete_missing_secret_is_204(kv: Kv) -> None:
    assert (await kv.req("DELETE", "data/missing")).status == 204


async def test_delete_specific_versions(kv: Kv) -> None:
    for n in range(3):
        await kv.write("dv", {"n": n})

    reply = await kv.req("PUT", "delete/dv", {"versions": [1, 2]})

    assert reply.status == 204, str(reply)
    assert (await kv.read("dv", version="1")).status == 404
    assert (await kv.read("dv", version="2")).status == 404
    assert (await kv.read("dv")).status == 200
    versions = (await kv.metadata("dv"))["versions"]
    assert versions["1"]["deletion_time"]
    assert versions["3"]["deletion_time"] == ""


async def test_versions_given_as_comma_string(kv: Kv) -> None:
    for n in range(3):
        await kv.write("cs", {"n": n})

    assert (await kv.req("PUT", "delete/cs", {"versions": "1,3"})).status == 204

    assert (await kv.read("cs", version="1")).status == 404
    assert (await kv.read("cs", version="2")).status == 200


@pytest.mark.parametrize("action", ["delete", "undelete", "destroy"])
@pytest.mark.parametrize("versions", [None, [], ""])
async def test_version_actions_without_versions_are_400(kv: Kv, action: str, versions: Any) -> None:
    await kv.write("x", {"n": 1})
    body = {} if versions is None else {"versions": versions}

    assert_error(await kv.req("PUT", f"{action}/x", body), 400, "version")


@pytest.mark.parametrize("versions", [["a"], [1.5], [[1]], {"v": 1}, [None], True])
async def test_version_actions_with_bad_versions_are_400(kv: Kv, versions: Any) -> None:
    await kv.write("x", {"n": 1})

    assert_error(await kv.req("PUT", "delete/x", {"versions": versions}), 400)


async def test_destroy(kv: Kv) -> None:
    await kv.write("ds", {"n": 1})
    await kv.write("ds", {"n": 2})

    reply = await kv.req("POST", "destroy/ds", {"versions": [2]})

    assert reply.status == 204, str(reply)
    read = await kv.read("ds")
    assert read.status == 404
    assert read.body["data"]["data"] is None
    assert read.body["data"]["metadata"]["destroyed"] is True
    assert (await kv.req("POST", "undelete/ds", {"versions": [2]})).status == 204
    assert (await kv.read("ds")).status == 404, "destroyed versions cannot be undeleted"
    assert (await kv.read("ds", version="1")).data["data"] == {"n": 1}
    assert (await kv.metadata("ds"))["versions"]["2"]["destroyed"] is True


async def test_version_actions_on_missing_secret_are_harmless(kv: Kv) -> None:
    for action in ("delete", "undelete", "destroy"):
        reply = await kv.req("PUT", f"{action}/missing", {"versions": [1]})
        assert reply.status == 204, str(reply)


# -- metadata --------------------------------------------------------------------------------


async def test_metadata_read(kv: Kv) -> None:
    for n in range(3):
        await kv.write("m", {"n": n})

    meta = await kv.metadata("m")

    assert meta["current_version"] == 3
    assert meta["oldest_version"] == 1
    assert sorted(meta["versions"]) == ["1", "2", "3"]
    for info in meta["versions"].values():
        assert set(info) == {"created_time", "deletion_time", "destroyed"}
    assert meta["max_versions"] == 0
    assert meta["cas_required"] is False
    assert meta["delete_version_after"] == "0s"
    assert meta["created_time"] <= meta["updated_time"]


async def test_metadata_of_missing_secret_is_404(kv: Kv) -> None:
    assert_error(await kv.req("GET", "metadata/missing"), 404)


async def test_metadata_list(kv: Kv) -> None:
    for name in ("b", "a", "dir/x", "dir/sub/y"):
        await kv.write(name, {"n": 1})

    top = await kv.req("LIST", "metadata/")
    nested = await kv.req("LIST", "metadata/dir/")
    without_slash = await kv.req("GET", "metadata/dir", list="true")
    deeper = await kv.req("LIST", "metadata/dir/sub")

    assert top.data["keys"] == ["a", "b", "dir/"]
    assert nested.data["keys"] == ["sub/", "x"]
    assert without_slash.data["keys"] == ["sub/", "x"]
    assert deeper.data["keys"] == ["y"]
    assert_error(await kv.req("LIST", "metadata/none/"), 404)


async def test_metadata_list_of_an_empty_mount_is_404(kv: Kv) -> None:
    assert_error(await kv.req("LIST", "metadata/"), 404)


async def test_metadata_delete_removes_every_version(kv: Kv) -> None:
    await kv.write("gone", {"n": 1})
    await kv.write("gone", {"n": 2})
    await kv.write("kept", {"n": 1})

    reply = await kv.req("DELETE", "metadata/gone")

    assert reply.status == 204
    assert_error(await kv.read("gone"), 404)
    assert_error(await kv.read("gone", version="1"), 404)
    assert_error(await kv.req("GET", "metadata/gone"), 404)
    assert (await kv.req("LIST", "metadata/")).data["keys"] == ["kept"]
    again = await kv.write("gone", {"n": 3})
    assert again.data["version"] == 1, "a deleted key starts again at version 1"
    assert (await kv.req("DELETE", "metadata/never-existed")).status == 204


# -- paths outside the API ---------------------------------------------------------------------


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "LIST"])
@pytest.mark.parametrize("path", ["x", "foo/bar", "datax/y", "dat/a"])
async def test_path_without_a_known_prefix_is_404_with_the_warning(
    kv: Kv, method: str, path: str
) -> None:
    await kv.write(path, {"n": 1})

    reply = await kv.req(method, path, {"data": {"n": 2}} if method == "PUT" else None)

    assert_invalid_path(reply)


async def test_mount_root_is_404_with_the_warning(kv: Kv) -> None:
    assert_invalid_path(await kv.req("GET", ""))


@pytest.mark.parametrize("path", ["data/", "data/a/", "data/a//b", "data/a%00b"])
async def test_bad_data_paths_are_4xx(kv: Kv, path: str) -> None:
    reply = await kv.req("PUT", path, {"data": {"n": 1}})

    assert 400 <= reply.status < 500, str(reply)
    assert reply.errors is not None


# -- config ------------------------------------------------------------------------------------


async def test_config_read_defaults(kv: Kv) -> None:
    reply = await kv.req("GET", "config")

    assert reply.status == 200
    assert reply.data == {"max_versions": 0, "cas_required": False, "delete_version_after": "0s"}


async def test_config_write_and_read(kv: Kv) -> None:
    reply = await kv.req(
        "POST", "config", {"max_versions": 7, "cas_required": "true", "delete_version_after": "1h"}
    )

    assert reply.status == 204, str(reply)
    config = (await kv.req("GET", "config")).data
    assert config["max_versions"] == 7
    assert config["cas_required"] is True
    assert config["delete_version_after"] in ("3600s", "1h0m0s")
    partial = await kv.req("PUT", "config", {"max_versions": "3"})
    assert partial.status == 204
    assert (await kv.req("GET", "config")).data["max_versions"] == 3
    assert (await kv.req("GET", "config")).data["cas_required"] is True


@pytest.mark.parametrize(
    "body",
    [
        {"max_versions": -1},
        {"max_versions": "many"},
        {"max_versions": 1.5},
        {"cas_required": "maybe"},
        {"delete_version_after": "soon"},
        {"delete_version_after": 10**20},
        {"delete_version_after": "9" * 400 + "h"},
    ],
)
async def test_config_validation(kv: Kv, body: dict[str, Any]) -> None:
    assert_error(await kv.req("PUT", "config", body), 400)

    assert (await kv.req("GET", "config")).data["max_versions"] == 0
    assert (await kv.write("after-bad-config", {"n": 1})).status == 200


async def test_delete_version_after_sets_a_deletion_time(kv: Kv) -> None:
    await kv.req("PUT", "config", {"delete_version_after": "1h"})

    written = await kv.write("ttl", {"n": 1})

    assert written.data["deletion_time"] > written.data["created_time"]
    assert (await kv.read("ttl")).status == 200


async def test_max_versions_prunes_the_oldest(kv: Kv) -> None:
    await kv.req("PUT", "config", {"max_versions": 3})

    for n in range(1, 6):
        assert (await kv.write("p", {"n": n})).data["version"] == n

    meta = await kv.metadata("p")
    assert meta["current_version"] == 5
    assert meta["oldest_version"] == 3
    assert sorted(meta["versions"], key=int) == ["3", "4", "5"]
    assert_error(await kv.read("p", version="2"), 404)
    assert (await kv.read("p", version="3")).data["data"] == {"n": 3}


async def test_default_keeps_ten_versions(kv: Kv) -> None:
    for n in range(1, 13):
        await kv.write("ten", {"n": n})

    meta = await kv.metadata("ten")
    assert sorted(meta["versions"], key=int) == [str(n) for n in range(3, 13)]
    assert meta["oldest_version"] == 3


# -- mounts enabled through sys/mounts --------------------------------------------------------


async def test_enable_kv_v1_and_use_it_flat(dev: DevServer) -> None:
    enabled = await call(
        dev.client, "POST", "/v1/sys/mounts/kv1", json_body={"type": "kv"}, headers=dev.auth
    )
    assert enabled.status == 204, str(enabled)
    mounts = await call(dev.client, "GET", "/v1/sys/mounts", headers=dev.auth)
    assert mounts.body["kv1/"]["type"] == "kv"
    assert mounts.data["kv1/"]["type"] == "kv"
    kv1 = Kv(dev.client, dev.token, "kv1")

    assert (
        await kv1.req("PUT", "app/db", {"user": "u", "n": 1, "nested": {"a": [1]}})
    ).status == 204
    assert (await kv1.req("POST", "app/cache", {"ttl": "1h"})).status == 204
    assert (await kv1.req("PUT", "top", {"x": "y"})).status == 204

    read = await kv1.req("GET", "app/db")
    assert assert_envelope(read)["data"] == {"user": "u", "n": 1, "nested": {"a": [1]}}
    assert (await kv1.req("LIST", "")).data["keys"] == ["app/", "top"]
    assert (await kv1.req("LIST", "app")).data["keys"] == ["cache", "db"]
    assert (await kv1.req("GET", "app/", list="true")).data["keys"] == ["cache", "db"]
    assert (await kv1.req("PUT", "app/db", {"user": "v"})).status == 204
    assert (await kv1.req("GET", "app/db")).data == {"user": "v"}

    assert (await kv1.req("DELETE", "app/db")).status == 204
    assert_error(await kv1.req("GET", "app/db"), 404)
    assert (await kv1.req("LIST", "app/")).data["keys"] == ["cache"]
    assert_error(await kv1.req("PUT", "empty", {}), 400)
    assert_error(await kv1.req("LIST", "none/"), 404)


@pytest.mark.parametrize("body", [{"type": "kv-v2"}, {"type": "kv", "options": {"version": "2"}}])
async def test_enable_kv_v2(dev: DevServer, body: dict[str, Any]) -> None:
    enabled = await call(dev.client, "POST", "/v1/sys/mounts/kv2", json_body=body, headers=dev.auth)
    assert enabled.status == 204, str(enabled)
    kv2 = Kv(dev.client, dev.token, "kv2")

    assert (await kv2.write("a", {"n": 1})).data["version"] == 1
    assert (await kv2.write("a", {"n": 2})).data["version"] == 2
    assert (await kv2.read("a")).data["data"] == {"n": 2}
    assert (await kv2.req("LIST", "metadata/")).data["keys"] == ["a"]
    assert_invalid_path(await kv2.req("GET", "a"))
    secret = Kv(dev.client, dev.token)
    assert_error(await secret.read("a"), 404), "mounts do not share data"


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("secret", {"type": "kv"}),
        ("secret/sub", {"type": "kv"}),
        ("sys/x", {"type": "kv"}),
        ("new", {"type": "nosuch"}),
        ("new", {}),
        ("new", {"type": "kv", "options": "version=2"}),
        ("new", {"type": "kv", "config": []}),
    ],
)
async def test_enable_mount_errors(dev: DevServer, path: str, body: dict[str, Any]) -> None:
    reply = await call(
        dev.client, "POST", f"/v1/sys/mounts/{path}", json_body=body, headers=dev.auth
    )

    assert_error(reply, 400)


async def test_mounts_need_a_token(dev: DevServer) -> None:
    assert_error(await call(dev.client, "GET", "/v1/sys/mounts"), 403)
    reply = await call(dev.client, "POST", "/v1/sys/mounts/x", json_body={"type": "kv"})
    assert_error(reply, 403)


async def test_mount_survives_seal_and_unseal(dev: DevServer) -> None:
    await call(dev.client, "POST", "/v1/sys/mounts/kv1", json_body={"type": "kv"}, headers=dev.auth)
    await call(dev.client, "PUT", "/v1/kv1/k", json_body={"v": 1}, headers=dev.auth)

    await call(dev.client, "PUT", "/v1/sys/seal", headers=dev.auth)
    await call(dev.client, "PUT", "/v1/sys/unseal", json_body={"key": dev.init.keys_hex[0]})

    assert (await call(dev.client, "GET", "/v1/kv1/k", headers=dev.auth)).data == {"v": 1}


# -- concurrency -------------------------------------------------------------------------------

WRITERS = 50


async def _concurrent_writes(kv: Kv, name: str) -> list[int]:
    replies = await asyncio.gather(*(kv.write(name, {"writer": n}) for n in range(WRITERS)))
    for reply in replies:
        assert reply.status == 200, str(reply)
    return [reply.data["version"] for reply in replies]


async def test_concurrent_writes_get_distinct_versions(kv: Kv) -> None:
    versions = await _concurrent_writes(kv, "hot")

    assert sorted(versions) == list(range(1, WRITERS + 1))
    meta = await kv.metadata("hot")
    assert meta["current_version"] == WRITERS
    # ten versions are kept by default
    assert sorted(meta["versions"], key=int) == [str(v) for v in range(WRITERS - 9, WRITERS + 1)]
    assert meta["oldest_version"] == WRITERS - 9


async def test_concurrent_writes_with_every_version_kept(kv: Kv) -> None:
    await kv.req("PUT", "config", {"max_versions": 100})

    versions = await _concurrent_writes(kv, "hot")

    assert sorted(versions) == list(range(1, WRITERS + 1))
    meta = await kv.metadata("hot")
    assert meta["current_version"] == WRITERS
    assert meta["oldest_version"] == 1
    assert sorted(meta["versions"], key=int) == [str(v) for v in range(1, WRITERS + 1)]
    seen = set()
    for version in range(1, WRITERS + 1):
        reply = await kv.read("hot", version=str(version))
        assert reply.status == 200, str(reply)
        seen.add(reply.data["data"]["writer"])
    assert seen == set(range(WRITERS)), "every writer's data is stored under its own version"


@pytest.fixture
async def interleaving() -> AsyncIterator[Kv]:
    core = Core(YieldingBackend())
    client = TestClient(ListenerTestServer(create_app(core, max_request_size=1024 * 1024)))
    await client.start_server()
    try:
        init = await core.dev_bootstrap()
        yield Kv(client, init.root_token)
    finally:
        await client.close()


async def test_concurrent_writes_with_interleaved_storage(interleaving: Kv) -> None:
    kv = interleaving
    assert (await kv.req("PUT", "config", {"max_versions": 100})).status == 204

    versions = await _concurrent_writes(kv, "contended")

    assert sorted(versions) == list(range(1, WRITERS + 1))
    meta = await kv.metadata("contended")
    assert meta["current_version"] == WRITERS
    assert sorted(meta["versions"], key=int) == [str(v) for v in range(1, WRITERS + 1)]
    writers = set()
    for version in range(1, WRITERS + 1):
        writers.add((await kv.read("contended", version=str(version))).data["data"]["writer"])
    assert writers == set(range(WRITERS))


async def test_concurrent_cas_writes_have_one_winner(interleaving: Kv) -> None:
    kv = interleaving
    assert (await kv.write("cas", {"n": 0})).status == 200

    replies = await asyncio.gather(*(kv.write("cas", {"n": n}, cas=1) for n in range(20)))

    winners = [r for r in replies if r.status == 200]
    assert len(winners) == 1
    for reply in replies:
        if reply.status != 200:
            assert_error(reply, 400, "check-and-set")
    assert (await kv.metadata("cas"))["current_version"] == 2


async def test_concurrent_writes_to_different_keys(interleaving: Kv) -> None:
    kv = interleaving

    replies = await asyncio.gather(*(kv.write(f"k{n}", {"n": n}) for n in range(WRITERS)))

    assert all(r.status == 200 and r.data["version"] == 1 for r in replies)
    keys = (await kv.req("LIST", "metadata/")).data["keys"]
    assert sorted(keys) == sorted(f"k{n}" for n in range(WRITERS))
