"""Storage conformance: every physical backend honours the same contract.

Each test runs once per entry of ``BACKEND_FACTORIES`` (see ``conftest.py``)
through the ``backend`` fixture, and only uses the ``PhysicalBackend``
protocol, so a new backend is covered by registering its factory.
"""

from __future__ import annotations

import asyncio

import pytest

from sdk.errors import InvalidRequestError, RevisionMismatchError
from sdk.physical import Check, Delete, Entry, PhysicalBackend, Put, TxnOp

# -- get / put / delete --------------------------------------------------------


async def test_get_missing_returns_none(backend: PhysicalBackend) -> None:
    assert await backend.get("missing") is None
    assert await backend.get("no/such/nested/key") is None


async def test_put_get_round_trip(backend: PhysicalBackend) -> None:
    revision = await backend.put("greeting", b"hello")

    entry = await backend.get("greeting")

    assert entry == Entry("greeting", b"hello", revision)
    assert isinstance(revision, int)
    assert revision > 0


async def test_every_byte_value_round_trips(backend: PhysicalBackend) -> None:
    value = bytes(range(256)) + bytes(reversed(range(256)))

    revision = await backend.put("binary", value)

    entry = await backend.get("binary")
    assert entry is not None
    assert entry.value == value
    assert type(entry.value) is bytes
    assert entry.revision == revision


async def test_empty_value_is_stored_not_missing(backend: PhysicalBackend) -> None:
    revision = await backend.put("empty", b"")

    assert await backend.get("empty") == Entry("empty", b"", revision)
    assert await backend.list("") == ["empty"]


async def test_large_value_round_trips(backend: PhysicalBackend) -> None:
    value = bytes(range(256)) * 4096  # 1 MiB

    await backend.put("large", value)

    entry = await backend.get("large")
    assert entry is not None
    assert entry.value == value


async def test_overwrite_replaces_value_and_bumps_revision(backend: PhysicalBackend) -> None:
    first = await backend.put("key", b"one")
    second = await backend.put("key", b"two")

    assert second > first
    assert await backend.get("key") == Entry("key", b"two", second)


async def test_revisions_strictly_increase_across_keys(backend: PhysicalBackend) -> None:
    revisions = [
        await backend.put("a", b"1"),
        await backend.put("b", b"2"),
        await backend.put("c/d", b"3"),
        await backend.put("a", b"4"),
        await backend.commit([Put("e", b"5")]),
        await backend.put("b", b"6"),
    ]

    assert revisions == sorted(revisions)
    assert len(set(revisions)) == len(revisions)


async def test_delete_then_recreate_never_reuses_a_revision(backend: PhysicalBackend) -> None:
    first = await backend.put("key", b"v1")
    await backend.delete("key")
    assert await backend.get("key") is None

    second = await backend.put("key", b"v1")

    assert second > first
    entry = await backend.get("key")
    assert entry is not None
    assert entry.revision == second


async def test_deleting_the_newest_key_does_not_rewind_the_counter(
    backend: PhysicalBackend,
) -> None:
    await backend.put("older", b"x")
    newest = await backend.put("newest", b"x")
    await backend.delete("newest")

    assert await backend.put("other", b"x") > newest
    assert await backend.put("newest", b"x") > newest


async def test_delete_removes_key(backend: PhysicalBackend) -> None:
    await backend.put("keep", b"k")
    await backend.put("drop", b"d")

    await backend.delete("drop")

    assert await backend.get("drop") is None
    assert await backend.get("keep") is not None
    assert await backend.list("") == ["keep"]


async def test_delete_missing_key_is_fine(backend: PhysicalBackend) -> None:
    await backend.delete("never-written")
    await backend.delete("never/written/either")
    await backend.put("key", b"v")
    await backend.delete("key")
    await backend.delete("key")

    assert await backend.get("key") is None
    assert await backend.list("") == []


# -- list ------------------------------------------------------------------------


async def _put_all(backend: PhysicalBackend, *keys: str) -> None:
    for key in keys:
        await backend.put(key, key.encode())


async def test_list_immediate_children_sorted_with_folder_suffix(
    backend: PhysicalBackend,
) -> None:
    await _put_all(backend, "zeta", "alpha", "mid/inner", "beta/x/y", "beta/z", "Alpha")

    assert await backend.list("") == ["Alpha", "alpha", "beta/", "mid/", "zeta"]
    assert await backend.list("beta/") == ["x/", "z"]
    assert await backend.list("beta/x/") == ["y"]
    assert await backend.list("mid/") == ["inner"]


async def test_list_deeply_nested(backend: PhysicalBackend) -> None:
    await backend.put("a/b/c/d/e", b"deep")

    assert await backend.list("") == ["a/"]
    assert await backend.list("a/") == ["b/"]
    assert await backend.list("a/b/") == ["c/"]
    assert await backend.list("a/b/c/") == ["d/"]
    assert await backend.list("a/b/c/d/") == ["e"]
    assert await backend.list("a/b/c/d/e/") == []


async def test_list_empty_store_and_unknown_prefix(backend: PhysicalBackend) -> None:
    assert await backend.list("") == []

    await backend.put("present/key", b"v")

    assert await backend.list("absent/") == []
    assert await backend.list("present/key/") == []
    assert await backend.list("present/nothing/") == []


async def test_list_partial_prefix_strips_the_prefix(backend: PhysicalBackend) -> None:
    await _put_all(backend, "apple", "apricot/x", "banana", "dir/apple", "dir/avocado/y")

    assert await backend.list("ap") == ["ple", "ricot/"]
    assert await backend.list("dir/a") == ["pple", "vocado/"]
    assert await backend.list("c") == []


async def test_list_does_not_count_a_leaf_as_a_folder(backend: PhysicalBackend) -> None:
    await backend.put("leaf", b"v")

    assert await backend.list("leaf/") == []
    assert await backend.list("") == ["leaf"]


async def test_folder_disappears_when_its_last_key_is_deleted(backend: PhysicalBackend) -> None:
    await _put_all(backend, "dir/sub/one", "dir/sub/two", "top")

    await backend.delete("dir/sub/one")
    assert await backend.list("") == ["dir/", "top"]
    assert await backend.list("dir/") == ["sub/"]

    await backend.delete("dir/sub/two")
    assert await backend.list("") == ["top"]
    assert await backend.list("dir/") == []
    assert await backend.list("dir/sub/") == []

    await backend.put("dir/sub/again", b"v")
    assert await backend.list("") == ["dir/", "top"]
    assert await backend.list("dir/sub/") == ["again"]


async def test_leaf_and_folder_with_the_same_name_coexist(backend: PhysicalBackend) -> None:
    leaf = await backend.put("a", b"leaf")
    child = await backend.put("a/b", b"child")

    assert await backend.get("a") == Entry("a", b"leaf", leaf)
    assert await backend.get("a/b") == Entry("a/b", b"child", child)
    assert await backend.list("") == ["a", "a/"]
    assert await backend.list("a/") == ["b"]

    await backend.delete("a")
    assert await backend.get("a/b") is not None
    assert await backend.list("") == ["a/"]

    await backend.put("a", b"leaf again")
    await backend.delete("a/b")
    assert await backend.get("a") is not None
    assert await backend.list("") == ["a"]


ODD_KEYS = [
    "with space",
    "trailing space ",
    "ünïcødé",
    "日本語/キー",
    "emoji-🔑",
    "100%",
    "%2F",
    "%5Fx",
    "%",
    "under_score",
    "_x",
    "_x/inner",
    "x",
    "__double",
    "plus+sign",
    "semi;colon:and=equals&amp",
    "question?hash#",
    "quote'double\"",
    "back\\slash",
    "tilde~star*",
    ".hidden",
    ".config/settings",
    "..dots",
    "dots..",
    "name.tmp",
    "CaseSensitive",
    "casesensitive",
]


async def test_keys_with_odd_characters_round_trip(backend: PhysicalBackend) -> None:
    revisions = {key: await backend.put(key, key.encode()) for key in ODD_KEYS}

    for key, revision in revisions.items():
        assert await backend.get(key) == Entry(key, key.encode(), revision), key


async def test_keys_with_odd_characters_list_correctly(backend: PhysicalBackend) -> None:
    await _put_all(backend, *ODD_KEYS)

    top = sorted({key.split("/")[0] + ("/" if "/" in key else "") for key in ODD_KEYS})
    assert await backend.list("") == top
    assert await backend.list("_x/") == ["inner"]
    assert await backend.list("日本語/") == ["キー"]
    assert await backend.list(".config/") == ["settings"]


async def test_underscore_leaf_and_folder_do_not_collide(backend: PhysicalBackend) -> None:
    values = {
        "x": b"leaf x",
        "_x": b"leaf _x",
        "_x/y": b"child of folder _x",
        "%5Fx": b"leaf %5Fx",
    }
    revisions = {key: await backend.put(key, value) for key, value in values.items()}

    for key, value in values.items():
        assert await backend.get(key) == Entry(key, value, revisions[key])
    assert await backend.list("") == ["%5Fx", "_x", "_x/", "x"]

    await backend.delete("_x")
    assert await backend.get("x") == Entry("x", b"leaf x", revisions["x"])
    assert await backend.get("_x/y") is not None
    assert await backend.list("") == ["%5Fx", "_x/", "x"]


INVALID_KEYS = [
    "",
    "/",
    "/leading",
    "trailing/",
    "a//b",
    "..",
    "a/../b",
    "../up",
    "a/..",
    ".",
    "./a",
]


@pytest.mark.parametrize("key", INVALID_KEYS)
async def test_invalid_keys_are_rejected_on_write(backend: PhysicalBackend, key: str) -> None:
    with pytest.raises(InvalidRequestError):
        await backend.put(key, b"v")
    with pytest.raises(InvalidRequestError):
        await backend.delete(key)
    with pytest.raises(InvalidRequestError):
        await backend.commit([Put(key, b"v")])
    with pytest.raises(InvalidRequestError):
        await backend.commit([Delete(key)])
    with pytest.raises(InvalidRequestError):
        await backend.commit([Check(key, 0)])

    assert await backend.list("") == []


@pytest.mark.parametrize("key", INVALID_KEYS)
async def test_invalid_keys_are_rejected_on_read(backend: PhysicalBackend, key: str) -> None:
    with pytest.raises(InvalidRequestError):
        await backend.get(key)


async def test_nul_in_key_is_rejected(backend: PhysicalBackend) -> None:
    with pytest.raises(InvalidRequestError):
        await backend.put("a\x00b", b"v")
    assert await backend.list("") == []


@pytest.mark.parametrize("prefix", ["/", "../", "./", "a//", "a/../", "a/./"])
async def test_list_with_an_invalid_prefix_finds_nothing(
    backend: PhysicalBackend, prefix: str
) -> None:
    await _put_all(backend, "a/x", "b", "data/y")

    assert await backend.list(prefix) == []


# -- transactions ------------------------------------------------------------------


async def test_commit_writes_share_one_revision(backend: PhysicalBackend) -> None:
    before = await backend.put("gone", b"x")

    revision = await backend.commit([Put("a", b"1"), Put("b/c", b"2"), Delete("gone")])

    assert revision > before
    assert await backend.get("a") == Entry("a", b"1", revision)
    assert await backend.get("b/c") == Entry("b/c", b"2", revision)
    assert await backend.get("gone") is None
    assert await backend.put("later", b"x") > revision


async def test_expect_zero_creates_only_if_absent(backend: PhysicalBackend) -> None:
    revision = await backend.commit([Put("key", b"first", expect=0)])
    assert await backend.get("key") == Entry("key", b"first", revision)

    with pytest.raises(RevisionMismatchError) as caught:
        await backend.commit([Put("key", b"second", expect=0)])

    assert caught.value.key == "key"
    assert caught.value.expected == 0
    assert caught.value.actual == revision
    assert await backend.get("key") == Entry("key", b"first", revision)


async def test_expect_current_revision_succeeds_and_stale_fails(backend: PhysicalBackend) -> None:
    first = await backend.put("key", b"v1")

    second = await backend.commit([Put("key", b"v2", expect=first)])
    assert second > first
    assert await backend.get("key") == Entry("key", b"v2", second)

    with pytest.raises(RevisionMismatchError) as caught:
        await backend.commit([Put("key", b"v3", expect=first)])
    assert (caught.value.expected, caught.value.actual) == (first, second)
    assert await backend.get("key") == Entry("key", b"v2", second)


async def test_expect_on_missing_key_fails_unless_zero(backend: PhysicalBackend) -> None:
    with pytest.raises(RevisionMismatchError) as caught:
        await backend.commit([Put("missing", b"v", expect=1)])

    assert caught.value.actual == 0
    assert await backend.get("missing") is None


async def test_expect_sees_deleted_key_as_absent(backend: PhysicalBackend) -> None:
    revision = await backend.put("key", b"v")
    await backend.delete("key")

    with pytest.raises(RevisionMismatchError):
        await backend.commit([Put("key", b"again", expect=revision)])
    assert await backend.commit([Put("key", b"again", expect=0)]) > revision


async def test_delete_with_expect(backend: PhysicalBackend) -> None:
    revision = await backend.put("key", b"v")

    with pytest.raises(RevisionMismatchError):
        await backend.commit([Delete("key", expect=revision + 1000)])
    with pytest.raises(RevisionMismatchError):
        await backend.commit([Delete("key", expect=0)])
    assert await backend.get("key") == Entry("key", b"v", revision)

    await backend.commit([Delete("key", expect=revision)])
    assert await backend.get("key") is None
    assert await backend.list("") == []

    with pytest.raises(RevisionMismatchError):
        await backend.commit([Delete("key", expect=revision)])
    await backend.commit([Delete("key", expect=0)])


async def test_check_only_transaction(backend: PhysicalBackend) -> None:
    revision = await backend.put("key", b"v")

    await backend.commit([Check("key", revision)])
    await backend.commit([Check("absent", 0)])

    assert await backend.get("key") == Entry("key", b"v", revision)
    assert await backend.get("absent") is None
    with pytest.raises(RevisionMismatchError):
        await backend.commit([Check("key", revision + 1)])
    with pytest.raises(RevisionMismatchError):
        await backend.commit([Check("key", 0)])
    with pytest.raises(RevisionMismatchError):
        await backend.commit([Check("absent", revision)])


async def test_check_guards_writes_to_other_keys(backend: PhysicalBackend) -> None:
    guard = await backend.put("guard", b"g")

    revision = await backend.commit([Check("guard", guard), Put("target", b"t")])
    assert await backend.get("target") == Entry("target", b"t", revision)
    assert await backend.get("guard") == Entry("guard", b"g", guard)

    await backend.put("guard", b"moved on")
    with pytest.raises(RevisionMismatchError):
        await backend.commit([Check("guard", guard), Put("target", b"stale")])
    assert await backend.get("target") == Entry("target", b"t", revision)


def _failing_op(kind: str, revision: int) -> TxnOp:
    stale = revision + 1000
    return {
        "check": Check("existing", stale),
        "put": Put("existing", b"clobbered", expect=stale),
        "put-exists": Put("existing", b"clobbered", expect=0),
        "delete": Delete("existing", expect=stale),
    }[kind]


@pytest.mark.parametrize("kind", ["check", "put", "put-exists", "delete"])
@pytest.mark.parametrize("position", [0, 2, 4])
async def test_failed_check_applies_nothing(
    backend: PhysicalBackend, kind: str, position: int
) -> None:
    existing = await backend.put("existing", b"original")
    doomed = await backend.put("doomed", b"still here")
    ops: list[TxnOp] = [
        Put("new/one", b"1"),
        Delete("doomed"),
        Put("new/two", b"2"),
        Put("doomed-too", b"3", expect=0),
    ]
    ops.insert(position, _failing_op(kind, existing))

    with pytest.raises(RevisionMismatchError):
        await backend.commit(ops)

    assert await backend.get("existing") == Entry("existing", b"original", existing)
    assert await backend.get("doomed") == Entry("doomed", b"still here", doomed)
    assert await backend.get("new/one") is None
    assert await backend.get("new/two") is None
    assert await backend.get("doomed-too") is None
    assert await backend.list("") == ["doomed", "existing"]


@pytest.mark.parametrize("position", [0, 1, 2])
async def test_invalid_key_in_a_transaction_applies_nothing(
    backend: PhysicalBackend, position: int
) -> None:
    existing = await backend.put("existing", b"original")
    ops: list[TxnOp] = [Put("existing", b"changed"), Put("fresh", b"new")]
    ops.insert(position, Put("/invalid", b"x"))

    with pytest.raises(InvalidRequestError):
        await backend.commit(ops)

    assert await backend.get("existing") == Entry("existing", b"original", existing)
    assert await backend.get("fresh") is None
    assert await backend.list("") == ["existing"]
    # The store stays usable and its counter stays ahead of every write.
    assert await backend.commit([Put("fresh", b"new"), Put("other", b"x")]) > existing


async def test_same_key_twice_in_one_transaction_last_write_wins(
    backend: PhysicalBackend,
) -> None:
    revision = await backend.commit([Put("key", b"first"), Put("key", b"second")])

    assert await backend.get("key") == Entry("key", b"second", revision)


async def test_concurrent_conditional_increments_lose_no_update(
    backend: PhysicalBackend,
) -> None:
    writers = 50
    conflicts = 0

    async def increment() -> int:
        nonlocal conflicts
        while True:
            entry = await backend.get("counter")
            current = int(entry.value) if entry else 0
            expect = entry.revision if entry else 0
            await asyncio.sleep(0)  # let the other writers read the same revision
            try:
                return await backend.commit([Put("counter", b"%d" % (current + 1), expect)])
            except RevisionMismatchError:
                conflicts += 1

    revisions = await asyncio.gather(*(increment() for _ in range(writers)))

    final = await backend.get("counter")
    assert final is not None
    assert int(final.value) == writers
    assert final.revision == max(revisions)
    assert len(set(revisions)) == writers
    assert conflicts > 0, "the writers never raced, so the test proved nothing"


async def test_concurrent_unconditional_writes_get_distinct_revisions(
    backend: PhysicalBackend,
) -> None:
    revisions = await asyncio.gather(*(backend.put(f"k/{i}", b"%d" % i) for i in range(30)))

    assert len(set(revisions)) == 30
    assert len(await backend.list("k/")) == 30
    for i, revision in enumerate(revisions):
        assert await backend.get(f"k/{i}") == Entry(f"k/{i}", b"%d" % i, revision)
