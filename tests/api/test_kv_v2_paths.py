"""KV version 2 over HTTP: data (incl. merge-patch), metadata, subkeys, config,
version operations, root/invalid paths and help; plus the KV v1 basics."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta
from typing import Any

import pytest

from node.engines.kv.transform import merge_patch
from sdk.errors import RevisionMismatchError
from tests.conftest import DevServer

ROOT_WARNING = "Non-listing operations on the root of a K/V v2 mount are not supported."
MERGE = {"Content-Type": "application/merge-patch+json"}


async def call(
    dev: DevServer,
    method: str,
    path: str,
    body: Any = None,
    *,
    headers: dict[str, str] | None = None,
    params: dict[str, str] | None = None,
) -> tuple[int, Any]:
    """One request; returns the status and the decoded body (None when empty)."""
    response = await dev.client.request(
        method,
        f"/v1/{path}",
        data=None if body is None else json.dumps(body),
        headers={**dev.auth, "Content-Type": "application/json", **(headers or {})},
        params=params,
    )
    text = await response.text()
    return response.status, json.loads(text) if text else None


async def put(dev: DevServer, name: str, data: dict[str, Any], **options: Any) -> Any:
    body: dict[str, Any] = {"data": data}
    if options:
        body["options"] = options
    status, reply = await call(dev, "POST", f"secret/data/{name}", body)
    assert status == 200, reply
    return reply["data"]


async def patch(dev: DevServer, path: str, body: Any) -> tuple[int, Any]:
    return await call(dev, "PATCH", path, body, headers=MERGE)


async def metadata(dev: DevServer, name: str) -> dict[str, Any]:
    status, reply = await call(dev, "GET", f"secret/metadata/{name}")
    assert status == 200, reply
    result: dict[str, Any] = reply["data"]
    return result


def when(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp)


# -- data/:path --------------------------------------------------------------------


async def test_write_then_read_current_and_older_versions(dev: DevServer) -> None:
    first = await put(dev, "app", {"user": "a"})
    assert first["version"] == 1 and first["destroyed"] is False
    assert first["deletion_time"] == "" and first["custom_metadata"] is None
    when(first["created_time"])  # RFC 3339
    await put(dev, "app", {"user": "b"})

    status, current = await call(dev, "GET", "secret/data/app")
    assert status == 200
    assert current["data"]["data"] == {"user": "b"}
    assert current["data"]["metadata"]["version"] == 2
    status, older = await call(dev, "GET", "secret/data/app", params={"version": "1"})
    assert status == 200 and older["data"]["data"] == {"user": "a"}
    assert older["data"]["metadata"]["version"] == 1


async def test_read_errors(dev: DevServer) -> None:
    assert await call(dev, "GET", "secret/data/missing") == (404, {"errors": []})
    await put(dev, "one", {"a": 1})
    assert await call(dev, "GET", "secret/data/one", params={"version": "7"}) == (
        404,
        {"errors": []},
    )
    status, reply = await call(dev, "GET", "secret/data/one", params={"version": "abc"})
    assert status == 400 and "version" in reply["errors"][0]
    status, reply = await call(dev, "GET", "secret/data/one", params={"version": "-1"})
    assert status == 400 and "version" in reply["errors"][0]


async def test_write_validation_and_check_and_set(dev: DevServer) -> None:
    status, reply = await call(dev, "POST", "secret/data/k", {"options": {"cas": 0}})
    assert (status, reply["errors"]) == (400, ["no data provided"])
    status, reply = await call(dev, "POST", "secret/data/k", {"data": "text"})
    assert status == 400 and "data" in reply["errors"][0]

    assert (await put(dev, "k", {"v": 1}, cas=0))["version"] == 1
    status, reply = await call(
        dev, "POST", "secret/data/k", {"data": {"v": 2}, "options": {"cas": 0}}
    )
    assert status == 400
    assert reply["errors"] == ["check-and-set parameter did not match the current version"]
    status, reply = await call(
        dev, "POST", "secret/data/k", {"data": {"v": 2}, "options": {"cas": "one"}}
    )
    assert (status, reply["errors"]) == (400, ["error parsing check-and-set parameter"])
    assert (await put(dev, "k", {"v": 2}, cas="1"))["version"] == 2  # numeric strings decode


async def test_cas_required_by_config_or_key(dev: DevServer) -> None:
    required = ["check-and-set parameter required for this call"]
    assert (await call(dev, "POST", "secret/metadata/strict", {"cas_required": True}))[0] == 204
    status, reply = await call(dev, "POST", "secret/data/strict", {"data": {"a": 1}})
    assert (status, reply["errors"]) == (400, required)
    assert (await put(dev, "strict", {"a": 1}, cas=0))["version"] == 1

    await put(dev, "loose", {"a": 1})
    assert (await call(dev, "POST", "secret/config", {"cas_required": True}))[0] == 204
    status, reply = await call(dev, "POST", "secret/data/loose", {"data": {"a": 2}})
    assert (status, reply["errors"]) == (400, required)
    status, reply = await patch(dev, "secret/data/loose", {"data": {"a": 2}})
    assert (status, reply["errors"]) == (400, required)


async def test_soft_deleted_version_reads_as_404_with_metadata(dev: DevServer) -> None:
    await put(dev, "gone", {"a": 1})
    assert (await call(dev, "DELETE", "secret/data/gone"))[0] == 204
    status, reply = await call(dev, "GET", "secret/data/gone")
    assert status == 404 and reply["errors"] == []
    assert reply["data"]["data"] is None
    stamp = reply["data"]["metadata"]["deletion_time"]
    assert stamp and reply["data"]["metadata"]["version"] == 1
    # deleting again keeps the first deletion time
    assert (await call(dev, "DELETE", "secret/data/gone"))[0] == 204
    assert (await metadata(dev, "gone"))["versions"]["1"]["deletion_time"] == stamp
    assert (await call(dev, "DELETE", "secret/data/never-written"))[0] == 204


async def test_custom_metadata_appears_in_data_responses(dev: DevServer) -> None:
    custom = {"owner": "team-a"}
    await call(dev, "POST", "secret/metadata/tagged", {"custom_metadata": custom})
    written = await put(dev, "tagged", {"a": 1})
    assert written["custom_metadata"] == custom
    _, reply = await call(dev, "GET", "secret/data/tagged")
    assert reply["data"]["metadata"]["custom_metadata"] == custom
    _, reply = await patch(dev, "secret/data/tagged", {"data": {"b": 2}})
    assert reply["data"]["custom_metadata"] == custom


# -- data/:path PATCH ----------------------------------------------------------------


async def test_patch_applies_a_json_merge_patch_as_a_new_version(dev: DevServer) -> None:
    await put(dev, "cfg", {"a": 1, "b": {"c": 1, "d": 2}, "e": [1, 2], "keep": "x"})
    status, reply = await patch(
        dev, "secret/data/cfg", {"data": {"a": None, "b": {"c": None, "x": 3}, "e": [9]}}
    )
    assert status == 200, reply
    assert reply["data"]["version"] == 2 and reply["data"]["deletion_time"] == ""
    _, current = await call(dev, "GET", "secret/data/cfg")
    assert current["data"]["data"] == {"b": {"d": 2, "x": 3}, "e": [9], "keep": "x"}
    _, first = await call(dev, "GET", "secret/data/cfg", params={"version": "1"})
    assert first["data"]["data"]["a"] == 1  # the old version is untouched


async def test_patch_check_and_set(dev: DevServer) -> None:
    await put(dev, "p", {"a": 1})
    status, reply = await patch(dev, "secret/data/p", {"data": {"a": 2}, "options": {"cas": 5}})
    assert status == 400
    assert reply["errors"] == ["check-and-set parameter did not match the current version"]
    status, reply = await patch(dev, "secret/data/p", {"data": {"a": 2}, "options": {"cas": 1}})
    assert status == 200 and reply["data"]["version"] == 2


async def test_patch_needs_a_live_current_version(dev: DevServer) -> None:
    assert await patch(dev, "secret/data/nothing", {"data": {"a": 1}}) == (404, {"errors": []})
    await call(dev, "POST", "secret/metadata/only-meta", {"max_versions": 3})
    assert (await patch(dev, "secret/data/only-meta", {"data": {"a": 1}}))[0] == 404

    await put(dev, "deleted", {"a": 1})
    await call(dev, "DELETE", "secret/data/deleted")
    status, reply = await patch(dev, "secret/data/deleted", {"data": {"a": 2}})
    assert status == 404 and reply["data"]["version"] == 1
    assert reply["data"]["deletion_time"] != ""

    await put(dev, "destroyed", {"a": 1})
    await call(dev, "POST", "secret/destroy/destroyed", {"versions": [1]})
    status, reply = await patch(dev, "secret/data/destroyed", {"data": {"a": 2}})
    assert status == 404 and reply["data"]["destroyed"] is True
    assert (await metadata(dev, "destroyed"))["current_version"] == 1  # nothing written


async def test_patch_input_errors(dev: DevServer) -> None:
    await put(dev, "p", {"a": 1})
    bodies: list[dict[str, Any]] = [{}, {"data": {}}, {"data": None}]
    for body in bodies:
        status, reply = await patch(dev, "secret/data/p", body)
        assert (status, reply["errors"]) == (400, ["no data provided"]), body
    status, reply = await patch(dev, "secret/data/p", {"data": [1]})
    assert status == 400
    status, _ = await call(dev, "PATCH", "secret/data/p", {"data": {"a": 2}})
    assert status == 415  # plain application/json is not a merge patch


async def test_concurrent_patches_get_unique_consecutive_versions(dev: DevServer) -> None:
    await call(dev, "POST", "secret/metadata/counter", {"max_versions": 100})
    await put(dev, "counter", {"start": True})

    async def one(i: int) -> int:
        status, reply = await patch(dev, "secret/data/counter", {"data": {f"k{i}": i}})
        assert status == 200, reply
        version: int = reply["data"]["version"]
        return version

    versions = await asyncio.gather(*(one(i) for i in range(40)))
    assert sorted(versions) == list(range(2, 42))
    meta = await metadata(dev, "counter")
    assert meta["current_version"] == 41 and len(meta["versions"]) == 41
    _, reply = await call(dev, "GET", "secret/data/counter")
    # every patch saw the result of the ones before it: no update was lost
    assert reply["data"]["data"] == {"start": True, **{f"k{i}": i for i in range(40)}}


async def test_interleaved_patches_retry_instead_of_losing_updates(
    dev: DevServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Storage reads yield to the event loop, so patches really race: each must
    detect the conflict, retry, and still get its own version."""
    await call(dev, "POST", "secret/metadata/race", {"max_versions": 100})
    await put(dev, "race", {"start": True})
    physical = dev.core.physical
    real_get, real_commit = physical.get, physical.commit
    conflicts = 0

    async def slow_get(key: str) -> Any:
        found = await real_get(key)
        await asyncio.sleep(0)
        return found

    async def counting_commit(ops: Any) -> int:
        nonlocal conflicts
        try:
            revision: int = await real_commit(ops)
        except RevisionMismatchError:
            conflicts += 1
            raise
        return revision

    monkeypatch.setattr(physical, "get", slow_get)
    monkeypatch.setattr(physical, "commit", counting_commit)
    replies = await asyncio.gather(
        *(patch(dev, "secret/data/race", {"data": {f"k{i}": i}}) for i in range(40))
    )
    assert all(status == 200 for status, _ in replies), replies
    assert sorted(r["data"]["version"] for _, r in replies) == list(range(2, 42))
    assert conflicts > 0  # the race happened and was resolved by retrying
    _, reply = await call(dev, "GET", "secret/data/race")
    assert reply["data"]["data"] == {"start": True, **{f"k{i}": i for i in range(40)}}


@pytest.mark.parametrize(
    ("target", "patch_", "expected"),
    [  # RFC 7386 appendix A
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        (["a", "b"], ["c", "d"], ["c", "d"]),
        ({"a": "b"}, ["c"], ["c"]),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ],
)
def test_merge_patch_follows_rfc_7386(target: Any, patch_: Any, expected: Any) -> None:
    original = json.dumps(target)
    assert merge_patch(target, patch_) == expected
    assert json.dumps(target) == original


# -- metadata/:path ------------------------------------------------------------------


async def test_metadata_write_creates_metadata_for_a_new_key(dev: DevServer) -> None:
    body = {
        "max_versions": 5,
        "cas_required": True,
        "delete_version_after": "1h",
        "custom_metadata": {"owner": "ops", "count": 3},
    }
    assert (await call(dev, "POST", "secret/metadata/fresh", body))[0] == 204
    meta = await metadata(dev, "fresh")
    assert meta["versions"] == {} and meta["current_version"] == 0
    assert meta["oldest_version"] == 0
    assert meta["max_versions"] == 5 and meta["cas_required"] is True
    assert meta["delete_version_after"] == "1h0m0s"
    assert meta["custom_metadata"] == {"owner": "ops", "count": "3"}
    assert meta["created_time"] == meta["updated_time"]
    assert await call(dev, "GET", "secret/data/fresh") == (404, {"errors": []})


async def test_metadata_read_shape_after_writes(dev: DevServer) -> None:
    await put(dev, "hist", {"a": 1})
    await put(dev, "hist", {"a": 2})
    await call(dev, "POST", "secret/delete/hist", {"versions": [1]})
    meta = await metadata(dev, "hist")
    assert set(meta) == {
        "versions",
        "current_version",
        "oldest_version",
        "created_time",
        "updated_time",
        "max_versions",
        "cas_required",
        "delete_version_after",
        "custom_metadata",
    }
    assert set(meta["versions"]) == {"1", "2"}
    assert set(meta["versions"]["1"]) == {"created_time", "deletion_time", "destroyed"}
    assert meta["versions"]["1"]["deletion_time"] != ""
    assert meta["versions"]["2"]["deletion_time"] == ""
    assert (meta["current_version"], meta["oldest_version"]) == (2, 1)
    assert meta["updated_time"] == meta["versions"]["2"]["created_time"]
    assert meta["created_time"] <= meta["updated_time"]
    assert meta["delete_version_after"] == "0s" and meta["custom_metadata"] is None


async def test_metadata_write_without_known_fields_is_a_no_op(dev: DevServer) -> None:
    assert (await call(dev, "POST", "secret/metadata/noop", {}))[0] == 204
    assert (await call(dev, "GET", "secret/metadata/noop"))[0] == 404


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"max_versions": "many"}, "max_versions"),
        ({"max_versions": -1}, "max_versions must not be negative"),
        ({"cas_required": "perhaps"}, "cas_required"),
        ({"delete_version_after": "soon"}, "delete_version_after"),
        ({"delete_version_after": "-1h"}, "cannot provide negative value"),
        ({"delete_version_after": 10**20}, "at most"),
        ({"custom_metadata": "owner=me"}, "custom_metadata"),
        ({"custom_metadata": {"k": {"nested": 1}}}, "must be a string"),
    ],
)
async def test_metadata_field_types_are_checked(
    dev: DevServer, body: dict[str, Any], fragment: str
) -> None:
    await put(dev, "typed", {"a": 1})
    status, reply = await call(dev, "POST", "secret/metadata/typed", body)
    assert status == 400 and fragment in " ".join(reply["errors"]), reply
    status, reply = await patch(dev, "secret/metadata/typed", body)
    assert status == 400 and fragment in " ".join(reply["errors"]), reply
    meta = await metadata(dev, "typed")
    assert (meta["max_versions"], meta["custom_metadata"]) == (0, None)


@pytest.mark.parametrize(
    ("custom", "fragment"),
    [
        ({f"k{i}": "v" for i in range(65)}, "at most 64 keys, provided 65"),
        ({"": "v"}, 'length of key "" is 0'),
        ({"k" * 129: "v"}, "is 129 but must be 0 < len(key) <= 128"),
        ({"k": ""}, 'length of value for key "k" is 0'),
        ({"k": "v" * 513}, "is 513 but must be 0 < len(value) <= 512"),
        ({"k": "é" * 257}, "is 514 but must be"),  # bytes, not characters
        ({"bad\nkey": "v"}, "contains unprintable characters"),
        ({"k": "tab\there"}, 'value for key "k" contains unprintable characters'),
        ({"k": None}, 'length of value for key "k" is 0'),
    ],
)
async def test_custom_metadata_limits(
    dev: DevServer, custom: dict[str, Any], fragment: str
) -> None:
    status, reply = await call(dev, "POST", "secret/metadata/cm", {"custom_metadata": custom})
    assert status == 400, reply
    assert all(e.startswith("custom_metadata validation failed") for e in reply["errors"])
    assert fragment in " ".join(reply["errors"])


async def test_custom_metadata_reports_every_problem_and_accepts_the_limits(
    dev: DevServer,
) -> None:
    status, reply = await call(
        dev, "POST", "secret/metadata/cm", {"custom_metadata": {"": "", "ok": "\x00"}}
    )
    assert status == 400 and len(reply["errors"]) == 3
    largest = {f"{i:0128d}": "v" * 512 for i in range(64)}
    assert (await call(dev, "POST", "secret/metadata/cm", {"custom_metadata": largest}))[0] == 204
    assert (await metadata(dev, "cm"))["custom_metadata"] == largest
    # a POST replaces custom_metadata as a whole; {} clears it
    assert (await call(dev, "POST", "secret/metadata/cm", {"custom_metadata": {}}))[0] == 204
    assert (await metadata(dev, "cm"))["custom_metadata"] is None


async def test_cas_required_false_warns_when_the_mount_requires_it(dev: DevServer) -> None:
    warning = (
        '"cas_required" set to false, but is mandated by backend config. '
        "This value will be ignored."
    )
    assert (await call(dev, "POST", "secret/metadata/w", {"cas_required": False}))[0] == 204
    await call(dev, "POST", "secret/config", {"cas_required": True})
    status, reply = await call(dev, "POST", "secret/metadata/w", {"cas_required": False})
    assert status == 200 and reply["warnings"] == [warning]
    status, reply = await patch(dev, "secret/metadata/w", {"cas_required": False})
    assert status == 200 and reply["warnings"] == [warning]
    status, _ = await call(dev, "POST", "secret/data/w", {"data": {"a": 1}})
    assert status == 400  # the mount still requires cas


async def test_lower_max_versions_prunes_oldest_on_next_write(dev: DevServer) -> None:
    for i in range(5):
        await put(dev, "pruned", {"i": i})
    await call(dev, "POST", "secret/metadata/pruned", {"max_versions": 2})
    assert len((await metadata(dev, "pruned"))["versions"]) == 5  # not until the next write
    await put(dev, "pruned", {"i": 5})
    meta = await metadata(dev, "pruned")
    assert sorted(meta["versions"]) == ["5", "6"] and meta["oldest_version"] == 5
    assert (await call(dev, "GET", "secret/data/pruned", params={"version": "4"}))[0] == 404
    _, reply = await call(dev, "GET", "secret/data/pruned", params={"version": "5"})
    assert reply["data"]["data"] == {"i": 4}


async def test_effective_max_versions_is_the_larger_setting(dev: DevServer) -> None:
    await call(dev, "POST", "secret/config", {"max_versions": 3})
    await call(dev, "POST", "secret/metadata/m", {"max_versions": 1})
    for i in range(5):
        await put(dev, "m", {"i": i})
    assert sorted((await metadata(dev, "m"))["versions"]) == ["3", "4", "5"]


async def test_metadata_patch_changes_only_given_fields(dev: DevServer) -> None:
    await call(
        dev,
        "POST",
        "secret/metadata/mp",
        {
            "max_versions": 4,
            "cas_required": True,
            "delete_version_after": "30m",
            "custom_metadata": {"a": "1", "b": "2"},
        },
    )
    status, _ = await patch(dev, "secret/metadata/mp", {"custom_metadata": {"b": None, "c": "3"}})
    assert status == 204
    meta = await metadata(dev, "mp")
    assert meta["custom_metadata"] == {"a": "1", "c": "3"}
    assert (meta["max_versions"], meta["cas_required"]) == (4, True)
    assert meta["delete_version_after"] == "30m0s"

    assert (await patch(dev, "secret/metadata/mp", {"max_versions": 9}))[0] == 204
    meta = await metadata(dev, "mp")
    assert meta["max_versions"] == 9 and meta["custom_metadata"] == {"a": "1", "c": "3"}

    # a null setting resets it
    await patch(dev, "secret/metadata/mp", {"cas_required": None, "custom_metadata": None})
    meta = await metadata(dev, "mp")
    assert meta["cas_required"] is False and meta["custom_metadata"] is None
    assert meta["max_versions"] == 9


async def test_metadata_patch_errors(dev: DevServer) -> None:
    assert await patch(dev, "secret/metadata/absent", {"max_versions": 1}) == (
        404,
        {"errors": []},
    )
    full = {f"k{i}": "v" for i in range(64)}
    await call(dev, "POST", "secret/metadata/full", {"custom_metadata": full})
    status, reply = await patch(dev, "secret/metadata/full", {"custom_metadata": {"one": "more"}})
    assert status == 400 and "at most 64 keys, provided 65" in reply["errors"][0]
    assert (await metadata(dev, "full"))["custom_metadata"] == full


async def test_metadata_list_shows_nested_folders(dev: DevServer) -> None:
    for name in ("top", "dir/leaf", "dir/sub/deep", "dir/sub/deeper"):
        await put(dev, name, {"x": 1})
    await call(dev, "POST", "secret/metadata/dir/meta-only", {"max_versions": 2})
    status, reply = await call(dev, "LIST", "secret/metadata")
    assert status == 200 and reply["data"]["keys"] == ["dir/", "top"]
    _, reply = await call(dev, "GET", "secret/metadata/dir", params={"list": "true"})
    assert reply["data"]["keys"] == ["leaf", "meta-only", "sub/"]
    _, reply = await call(dev, "LIST", "secret/metadata/dir/sub/")
    assert reply["data"]["keys"] == ["deep", "deeper"]
    assert await call(dev, "LIST", "secret/metadata/top") == (404, {"errors": []})
    assert await call(dev, "LIST", "secret/metadata/nowhere") == (404, {"errors": []})


async def test_metadata_delete_removes_every_version(dev: DevServer) -> None:
    await put(dev, "doomed", {"a": 1})
    await put(dev, "doomed", {"a": 2})
    await put(dev, "neighbour", {"b": 1})
    before = await _version_records(dev)
    assert (await call(dev, "DELETE", "secret/metadata/doomed"))[0] == 204
    assert len(await _version_records(dev)) == len(before) - 2
    assert (await call(dev, "GET", "secret/metadata/doomed"))[0] == 404
    assert (await call(dev, "GET", "secret/data/doomed"))[0] == 404
    assert (await call(dev, "DELETE", "secret/metadata/doomed"))[0] == 204
    # a new key at the same path starts again at version 1
    assert (await put(dev, "doomed", {"a": 3}))["version"] == 1
    _, reply = await call(dev, "GET", "secret/data/neighbour")
    assert reply["data"]["data"] == {"b": 1}


async def _version_records(dev: DevServer) -> list[str]:
    """Every stored version body, found by walking the physical key space."""
    physical = dev.core.physical

    async def walk(prefix: str) -> list[str]:
        found: list[str] = []
        for child in await physical.list(prefix):
            found += await walk(prefix + child) if child.endswith("/") else [prefix + child]
        return found

    return [key for key in await walk("") if "/versions/" in key]


# -- subkeys/:path -------------------------------------------------------------------


async def test_subkeys_hide_values_down_to_depth(dev: DevServer) -> None:
    await put(dev, "shape", {"a": 1, "b": {"c": {"d": "secret"}, "e": 2}, "f": {}, "g": [1]})
    status, reply = await call(dev, "GET", "secret/subkeys/shape")
    assert status == 200
    assert reply["data"]["subkeys"] == {
        "a": None,
        "b": {"c": {"d": None}, "e": None},
        "f": None,
        "g": None,
    }
    assert reply["data"]["metadata"]["version"] == 1
    assert reply["data"]["metadata"]["custom_metadata"] is None
    _, reply = await call(dev, "GET", "secret/subkeys/shape", params={"depth": "1"})
    assert reply["data"]["subkeys"] == {"a": None, "b": None, "f": None, "g": None}
    _, reply = await call(dev, "GET", "secret/subkeys/shape", params={"depth": "2"})
    assert reply["data"]["subkeys"]["b"] == {"c": None, "e": None}
    _, reply = await call(dev, "GET", "secret/subkeys/shape", params={"depth": "0"})
    assert reply["data"]["subkeys"]["b"]["c"] == {"d": None}
    assert "secret" not in json.dumps(reply)


async def test_subkeys_versions_and_errors(dev: DevServer) -> None:
    await put(dev, "sk", {"old": 1})
    await put(dev, "sk", {"new": 1})
    _, reply = await call(dev, "GET", "secret/subkeys/sk", params={"version": "1"})
    assert reply["data"]["subkeys"] == {"old": None}
    assert await call(dev, "GET", "secret/subkeys/missing") == (404, {"errors": []})
    assert (await call(dev, "GET", "secret/subkeys/sk", params={"version": "9"}))[0] == 404
    for params in ({"depth": "-1"}, {"depth": "deep"}, {"version": "x"}, {"version": "-2"}):
        status, reply = await call(dev, "GET", "secret/subkeys/sk", params=params)
        assert status == 400 and reply["errors"], params

    await call(dev, "POST", "secret/delete/sk", {"versions": [2]})
    status, reply = await call(dev, "GET", "secret/subkeys/sk")
    assert status == 404 and reply["data"]["subkeys"] is None
    assert reply["data"]["metadata"]["deletion_time"] != ""
    await call(dev, "POST", "secret/destroy/sk", {"versions": "1"})
    status, reply = await call(dev, "GET", "secret/subkeys/sk", params={"version": "1"})
    assert status == 404 and reply["data"]["metadata"]["destroyed"] is True


# -- config ----------------------------------------------------------------------------


async def test_config_defaults_and_durations(dev: DevServer) -> None:
    status, reply = await call(dev, "GET", "secret/config")
    assert status == 200
    assert reply["data"] == {"max_versions": 0, "cas_required": False, "delete_version_after": "0s"}
    for given, shown in (
        ("1h", "1h0m0s"),
        (90, "1m30s"),
        ("-5s", "-1s"),
        (0, "0s"),
        ("45s", "45s"),
    ):
        assert (await call(dev, "POST", "secret/config", {"delete_version_after": given}))[0] == 204
        _, reply = await call(dev, "GET", "secret/config")
        assert reply["data"]["delete_version_after"] == shown, given


async def test_config_write_without_known_fields_changes_nothing(dev: DevServer) -> None:
    await call(dev, "POST", "secret/config", {"max_versions": 7})
    assert (await call(dev, "POST", "secret/config", {}))[0] == 204
    status, reply = await call(dev, "POST", "secret/config", {"unknown": 1})
    assert status == 200 and "unknown" in reply["warnings"][0]
    _, reply = await call(dev, "GET", "secret/config")
    assert reply["data"]["max_versions"] == 7


@pytest.mark.parametrize(
    "body",
    [
        {"max_versions": -1},
        {"max_versions": "x"},
        {"cas_required": "sometimes"},
        {"delete_version_after": "later"},
        {"delete_version_after": 10**20},
    ],
)
async def test_config_rejects_bad_values(dev: DevServer, body: dict[str, Any]) -> None:
    status, reply = await call(dev, "POST", "secret/config", body)
    assert status == 400 and reply["errors"], reply
    _, reply = await call(dev, "GET", "secret/config")
    assert reply["data"] == {"max_versions": 0, "cas_required": False, "delete_version_after": "0s"}


async def test_delete_version_after_takes_the_smaller_setting(dev: DevServer) -> None:
    await call(dev, "POST", "secret/config", {"delete_version_after": "1h"})
    written = await put(dev, "mount-only", {"a": 1})
    gap = when(written["deletion_time"]) - when(written["created_time"])
    assert gap == timedelta(hours=1)

    await call(dev, "POST", "secret/metadata/both", {"delete_version_after": "30m"})
    written = await put(dev, "both", {"a": 1})
    assert when(written["deletion_time"]) - when(written["created_time"]) == timedelta(minutes=30)

    await call(dev, "POST", "secret/config", {"delete_version_after": -1})  # disabled
    assert (await put(dev, "both", {"a": 2}))["deletion_time"] == ""


async def test_expired_versions_read_as_deleted(dev: DevServer) -> None:
    await call(dev, "POST", "secret/metadata/brief", {"delete_version_after": "1s"})
    written = await put(dev, "brief", {"a": 1})
    assert when(written["deletion_time"]) - when(written["created_time"]) == timedelta(seconds=1)
    assert (await call(dev, "GET", "secret/data/brief"))[0] == 200
    await asyncio.sleep(1.05)
    status, reply = await call(dev, "GET", "secret/data/brief")
    assert status == 404 and reply["data"]["metadata"]["deletion_time"] == written["deletion_time"]


# -- delete/, undelete/, destroy/ ----------------------------------------------------------


async def test_version_operations_need_versions(dev: DevServer) -> None:
    await put(dev, "v", {"a": 1})
    bodies: list[dict[str, Any]] = [{}, {"versions": []}, {"versions": ""}]
    for op in ("delete", "undelete", "destroy"):
        for body in bodies:
            status, reply = await call(dev, "POST", f"secret/{op}/v", body)
            assert (status, reply["errors"]) == (400, ["No version number provided"]), (op, body)
        status, _ = await call(dev, "POST", f"secret/{op}/v", {"versions": ["one"]})
        assert status == 400
        assert (await call(dev, "POST", f"secret/{op}/missing", {"versions": [1]}))[0] == 204


async def test_delete_and_undelete_versions(dev: DevServer) -> None:
    for i in range(3):
        await put(dev, "dv", {"i": i})
    assert (await call(dev, "POST", "secret/delete/dv", {"versions": "1,2,9"}))[0] == 204
    meta = await metadata(dev, "dv")
    assert meta["versions"]["1"]["deletion_time"] and meta["versions"]["2"]["deletion_time"]
    assert meta["versions"]["3"]["deletion_time"] == ""
    assert (await call(dev, "GET", "secret/data/dv", params={"version": "2"}))[0] == 404

    assert (await call(dev, "POST", "secret/undelete/dv", {"versions": [2]}))[0] == 204
    _, reply = await call(dev, "GET", "secret/data/dv", params={"version": "2"})
    assert reply["data"]["data"] == {"i": 1} and reply["data"]["metadata"]["deletion_time"] == ""
    assert (await call(dev, "GET", "secret/data/dv", params={"version": "1"}))[0] == 404


async def test_undelete_reapplies_delete_version_after(dev: DevServer) -> None:
    await call(dev, "POST", "secret/metadata/re", {"delete_version_after": "2h"})
    await put(dev, "re", {"a": 1})
    await call(dev, "POST", "secret/delete/re", {"versions": [1]})
    before_undelete = datetime.now().astimezone()
    await call(dev, "POST", "secret/undelete/re", {"versions": [1]})
    status, reply = await call(dev, "GET", "secret/data/re")
    assert status == 200
    expires = when(reply["data"]["metadata"]["deletion_time"])
    assert timedelta(hours=2) <= expires - before_undelete < timedelta(hours=2, minutes=1)


async def test_destroy_purges_data_for_good(dev: DevServer) -> None:
    await put(dev, "ds", {"a": 1})
    await put(dev, "ds", {"a": 2})
    records = len(await _version_records(dev))
    assert (await call(dev, "POST", "secret/destroy/ds", {"versions": [1]}))[0] == 204
    assert len(await _version_records(dev)) == records - 1
    status, reply = await call(dev, "GET", "secret/data/ds", params={"version": "1"})
    assert status == 404 and reply["data"]["metadata"]["destroyed"] is True
    assert reply["data"]["data"] is None
    # neither undelete nor delete touches a destroyed version
    await call(dev, "POST", "secret/undelete/ds", {"versions": [1]})
    await call(dev, "POST", "secret/delete/ds", {"versions": [1]})
    version = (await metadata(dev, "ds"))["versions"]["1"]
    assert version == {**version, "destroyed": True, "deletion_time": ""}
    assert (await call(dev, "GET", "secret/data/ds", params={"version": "1"}))[0] == 404
    _, reply = await call(dev, "GET", "secret/data/ds")
    assert reply["data"]["data"] == {"a": 2}


# -- roots, invalid paths and help -------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "data"),
        ("GET", "data/"),
        ("POST", "data/"),
        ("GET", "metadata"),
        ("GET", "metadata/"),
        ("DELETE", "metadata/"),
        ("POST", "delete/"),
        ("POST", "undelete"),
        ("POST", "destroy/"),
        ("GET", "subkeys/"),
    ],
)
async def test_non_list_operations_on_roots(dev: DevServer, method: str, path: str) -> None:
    body = {"data": {"a": 1}} if method == "POST" else None
    status, reply = await call(dev, method, f"secret/{path}", body)
    assert status == 404
    assert reply["warnings"] == [ROOT_WARNING] and reply["data"] is None


@pytest.mark.parametrize(
    ("method", "path", "command"),
    [
        ("GET", "plain", "get"),
        ("POST", "plain", "put"),
        ("DELETE", "plain/deeper", "delete"),
        ("LIST", "plain", "list"),
        ("LIST", "data", "list"),
        ("GET", "metadataX", "get"),
    ],
)
async def test_invalid_paths_hint_at_the_v2_api(
    dev: DevServer, method: str, path: str, command: str
) -> None:
    body = {"a": 1} if method == "POST" else None
    status, reply = await call(dev, method, f"secret/{path}", body)
    assert status == 404 and reply["data"] is None
    (warning,) = reply["warnings"]
    assert warning.startswith("Invalid path for a versioned K/V secrets engine.")
    assert f"'coffer kv {command}'" in warning


async def test_unsupported_operations_are_405(dev: DevServer) -> None:
    assert (await call(dev, "DELETE", "secret/config"))[0] == 405
    assert (await call(dev, "PATCH", "secret/destroy/x", {"versions": [1]}, headers=MERGE))[
        0
    ] == 405
    assert (await call(dev, "DELETE", "secret/subkeys/x"))[0] == 405


async def test_help_documents_paths_and_fields(dev: DevServer) -> None:
    status, reply = await call(dev, "GET", "secret/data/x", params={"help": "1"})
    assert status == 200 and "JSON\nmerge patch (RFC 7386)" in reply["help"]
    (operations,) = reply["openapi"]["paths"].values()
    assert {"get", "post", "patch", "delete"} <= set(operations)
    document = json.dumps(reply["openapi"])
    assert "Write options. 'cas': check-and-set version" in document
    assert "Version to read; 0 or absent means the current one." in document

    status, reply = await call(dev, "GET", "secret/", params={"help": "1"})
    assert status == 200
    for row in ("config", "data", "metadata", "subkeys", "delete", "undelete", "destroy"):
        suffix = "" if row == "config" else "/{path}"
        assert f"secret/{row}{suffix}" in reply["help"], row
    for field in ("custom_metadata", "delete_version_after", "max_versions", "depth", "versions"):
        assert f"`{field}`" in reply["help"], field
    assert "Read the key structure of a secret without its values." in reply["help"]


# -- KV version 1 ---------------------------------------------------------------------------


async def test_kv_v1_basics(dev: DevServer) -> None:
    status, _ = await call(dev, "POST", "sys/mounts/flat", {"type": "kv"})
    assert status in (200, 204)
    assert (await call(dev, "POST", "flat/app/db", {"user": "u", "n": 1}))[0] == 204
    assert (await call(dev, "POST", "flat/app/cache", {"ttl": "1h"}))[0] == 204
    status, reply = await call(dev, "GET", "flat/app/db")
    assert status == 200 and reply["data"] == {"user": "u", "n": 1}
    assert await call(dev, "GET", "flat/app/missing") == (404, {"errors": []})
    assert await call(dev, "GET", "flat/app/") == (404, {"errors": []})

    _, reply = await call(dev, "LIST", "flat/")
    assert reply["data"]["keys"] == ["app/"]
    _, reply = await call(dev, "LIST", "flat/app")
    assert reply["data"]["keys"] == ["cache", "db"]
    assert await call(dev, "LIST", "flat/app/db") == (404, {"errors": []})  # a key, not a folder

    status, reply = await call(dev, "POST", "flat/app/empty", {})
    assert (status, reply["errors"]) == (400, ["missing data fields"])
    assert (await call(dev, "POST", "flat/app//bad", {"a": 1}))[0] == 400
    assert (await call(dev, "PATCH", "flat/app/db", {"n": 2}, headers=MERGE))[0] == 405

    assert (await call(dev, "DELETE", "flat/app/db"))[0] == 204
    assert (await call(dev, "GET", "flat/app/db"))[0] == 404
    assert (await call(dev, "DELETE", "flat/app/db"))[0] == 204
    _, reply = await call(dev, "LIST", "flat/app/")
    assert reply["data"]["keys"] == ["cache"]
