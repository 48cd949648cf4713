"""The AES-256-GCM barrier and prefix-jailed views, over in-memory storage."""

from __future__ import annotations

import os
import re

import pytest

from node.barrier.aead import FRAME_VERSION, frame_term
from node.barrier.barrier import KEYRING_PATH, Barrier
from node.barrier.view import BarrierView
from node.physical.inmem import InmemBackend
from sdk.errors import InvalidRequestError, RevisionMismatchError, SealedError, StorageError
from sdk.physical import Check, Delete, Put

SECRET = b"correct horse battery staple"
HEADER, NONCE, TAG = 5, 12, 16


@pytest.fixture
def root_key() -> bytes:
    return os.urandom(32)


@pytest.fixture
def physical() -> InmemBackend:
    return InmemBackend()


@pytest.fixture
async def barrier(physical: InmemBackend, root_key: bytes) -> Barrier:
    barrier = Barrier(physical)
    await barrier.initialize(root_key)
    return barrier


async def raw(physical: InmemBackend, key: str) -> bytes:
    entry = await physical.get(key)
    assert entry is not None, key
    return entry.value


async def value_of(storage: Barrier | BarrierView | InmemBackend, key: str) -> bytes:
    found = await storage.get(key)
    assert found is not None, key
    return found.value


async def revision_of(storage: Barrier | BarrierView | InmemBackend, key: str) -> int:
    found = await storage.get(key)
    assert found is not None, key
    return found.revision


# -- sealed ------------------------------------------------------------------------


async def test_new_barrier_is_sealed_and_refuses_everything(physical: InmemBackend) -> None:
    await physical.put("existing", b"ciphertext")
    barrier = Barrier(physical)

    assert barrier.sealed
    with pytest.raises(SealedError):
        await barrier.get("existing")
    with pytest.raises(SealedError):
        await barrier.get("missing")
    with pytest.raises(SealedError):
        await barrier.put("key", b"v")
    with pytest.raises(SealedError):
        await barrier.delete("existing")
    with pytest.raises(SealedError):
        await barrier.list("")
    with pytest.raises(SealedError):
        await barrier.commit([Put("key", b"v")])
    with pytest.raises(SealedError):
        await barrier.commit([Delete("existing")])
    with pytest.raises(SealedError):
        await barrier.rotate()
    with pytest.raises(SealedError):
        barrier.key_status()
    assert await physical.get("existing") is not None
    assert await physical.get("key") is None


async def test_sealing_drops_access(barrier: Barrier, physical: InmemBackend) -> None:
    await barrier.put("key", SECRET)
    assert not barrier.sealed

    barrier.seal()

    assert barrier.sealed
    with pytest.raises(SealedError):
        await barrier.get("key")
    with pytest.raises(SealedError):
        await barrier.get("never-written")
    with pytest.raises(SealedError):
        await barrier.put("key", b"overwrite")
    with pytest.raises(SealedError):
        await barrier.delete("key")
    assert await physical.get("key") is not None


async def test_sealed_view_refuses_reads(barrier: Barrier) -> None:
    view = BarrierView(barrier, "logical/mount/")
    barrier.seal()

    with pytest.raises(SealedError):
        await view.get("missing")
    with pytest.raises(SealedError):
        await view.list()


# -- round trip and ciphertext ----------------------------------------------------------


async def test_put_get_round_trip(barrier: Barrier, physical: InmemBackend) -> None:
    revision = await barrier.put("secret/path", SECRET)

    stored = await barrier.get("secret/path")

    assert stored is not None
    assert (stored.key, stored.value, stored.revision) == ("secret/path", SECRET, revision)
    assert await revision_of(physical, "secret/path") == revision
    assert await barrier.get("missing") is None


async def test_binary_and_empty_values_round_trip(barrier: Barrier) -> None:
    await barrier.put("binary", bytes(range(256)))
    await barrier.put("empty", b"")

    assert await value_of(barrier, "binary") == bytes(range(256))
    assert await value_of(barrier, "empty") == b""


async def test_physical_storage_holds_only_ciphertext(
    barrier: Barrier, physical: InmemBackend
) -> None:
    await barrier.put("key", SECRET)

    frame = await raw(physical, "key")

    assert SECRET not in frame
    assert b"horse" not in frame
    assert frame[0] == FRAME_VERSION
    assert frame_term(frame) == 1
    assert len(frame) == HEADER + NONCE + len(SECRET) + TAG


async def test_same_plaintext_encrypts_differently_each_time(
    barrier: Barrier, physical: InmemBackend
) -> None:
    await barrier.put("a", SECRET)
    await barrier.put("b", SECRET)
    first = await raw(physical, "a")
    await barrier.put("a", SECRET)

    assert first != await raw(physical, "a")
    assert first[HEADER : HEADER + NONCE] != (await raw(physical, "b"))[HEADER : HEADER + NONCE]


async def test_keyring_is_stored_encrypted(barrier: Barrier, physical: InmemBackend) -> None:
    frame = await raw(physical, KEYRING_PATH)

    assert b"terms" not in frame
    assert b"install_time" not in frame
    assert frame_term(frame) == 0


async def test_commit_encrypts_puts_and_keeps_expect(
    barrier: Barrier, physical: InmemBackend
) -> None:
    revision = await barrier.commit([Put("a", SECRET, expect=0), Put("b", b"other")])

    assert SECRET not in await raw(physical, "a")
    assert await value_of(barrier, "a") == SECRET
    assert await revision_of(barrier, "b") == revision
    with pytest.raises(RevisionMismatchError):
        await barrier.commit([Put("a", b"clobber", expect=0)])
    await barrier.commit([Check("a", revision), Delete("b", expect=revision)])
    assert await barrier.get("b") is None
    assert await value_of(barrier, "a") == SECRET


async def test_delete_and_list_pass_through(barrier: Barrier) -> None:
    await barrier.put("dir/one", b"1")
    await barrier.put("dir/two", b"2")

    await barrier.delete("dir/one")

    assert await barrier.get("dir/one") is None
    assert await barrier.list("dir/") == ["two"]
    assert await barrier.list("") == ["core/", "dir/"]


# -- integrity ------------------------------------------------------------------------


async def test_ciphertext_moved_to_another_key_fails_to_decrypt(
    barrier: Barrier, physical: InmemBackend
) -> None:
    await barrier.put("mount-a/secret", SECRET)

    await physical.put("mount-b/secret", await raw(physical, "mount-a/secret"))

    with pytest.raises(StorageError):
        await barrier.get("mount-b/secret")
    assert await value_of(barrier, "mount-a/secret") == SECRET


@pytest.mark.parametrize(
    "offset",
    [0, 1, 4, HEADER, HEADER + NONCE - 1, HEADER + NONCE, HEADER + NONCE + 10, -1],
    ids=["version", "term-high", "term-low", "nonce", "nonce-end", "body", "body-mid", "tag"],
)
async def test_flipping_any_byte_fails_to_decrypt(
    barrier: Barrier, physical: InmemBackend, offset: int
) -> None:
    await barrier.put("key", SECRET)
    frame = bytearray(await raw(physical, "key"))

    frame[offset] ^= 0x01
    await physical.put("key", bytes(frame))

    with pytest.raises(StorageError):
        await barrier.get("key")


@pytest.mark.parametrize("length", [0, 1, HEADER + NONCE, HEADER + NONCE + TAG - 1])
async def test_truncated_frame_fails_to_decrypt(
    barrier: Barrier, physical: InmemBackend, length: int
) -> None:
    await barrier.put("key", SECRET)
    await physical.put("key", (await raw(physical, "key"))[:length])

    with pytest.raises(StorageError):
        await barrier.get("key")


async def test_plaintext_written_below_the_barrier_is_rejected(
    barrier: Barrier, physical: InmemBackend
) -> None:
    await physical.put("planted", b"\x01" + bytes(64))

    with pytest.raises(StorageError):
        await barrier.get("planted")


# -- rotation -----------------------------------------------------------------------


async def test_rotate_adds_a_term_and_keeps_old_values_readable(
    barrier: Barrier, physical: InmemBackend
) -> None:
    await barrier.put("old", b"written under term 1")
    term, install_time, encryptions = barrier.key_status()
    assert (term, encryptions) == (1, 1)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT[\d:.]+Z", install_time)

    assert await barrier.rotate() == 2

    assert barrier.key_status()[0] == 2
    assert barrier.key_status()[2] == 0
    await barrier.put("new", b"written under term 2")
    assert barrier.key_status()[2] == 1
    assert frame_term(await raw(physical, "old")) == 1
    assert frame_term(await raw(physical, "new")) == 2
    assert await value_of(barrier, "old") == b"written under term 1"
    assert await value_of(barrier, "new") == b"written under term 2"

    await barrier.put("old", b"rewritten")
    assert frame_term(await raw(physical, "old")) == 2


async def test_rotate_repeatedly(barrier: Barrier, physical: InmemBackend) -> None:
    for expected in range(2, 6):
        assert await barrier.rotate() == expected
        await barrier.put(f"term-{expected}", b"v")

    for term in range(2, 6):
        assert frame_term(await raw(physical, f"term-{term}")) == term
        assert await barrier.get(f"term-{term}") is not None


async def test_rotation_survives_seal_and_unseal(
    barrier: Barrier, physical: InmemBackend, root_key: bytes
) -> None:
    await barrier.put("old", b"1")
    await barrier.rotate()
    await barrier.put("new", b"2")
    barrier.seal()

    await barrier.unseal(root_key)

    assert barrier.key_status()[0] == 2
    assert await value_of(barrier, "old") == b"1"
    assert await value_of(barrier, "new") == b"2"
    await barrier.put("newer", b"3")
    assert frame_term(await raw(physical, "newer")) == 2


async def test_other_node_reads_new_term_after_reload(
    barrier: Barrier, physical: InmemBackend, root_key: bytes
) -> None:
    standby = Barrier(physical)
    await standby.unseal(root_key)

    await barrier.rotate()
    await barrier.put("fresh", b"term 2 data")

    with pytest.raises(StorageError):
        await standby.get("fresh")  # term 2 is not in its keyring yet
    await standby.reload_keyring()
    assert standby.key_status()[0] == 2
    assert await value_of(standby, "fresh") == b"term 2 data"


async def test_rotate_builds_on_the_stored_keyring(
    barrier: Barrier, physical: InmemBackend, root_key: bytes
) -> None:
    other = Barrier(physical)
    await other.unseal(root_key)
    await other.rotate()  # term 2, stored
    await other.put("from-other", b"x")

    assert await barrier.rotate() == 3  # not a second, different term 2
    assert await value_of(barrier, "from-other") == b"x"


# -- unseal --------------------------------------------------------------------------


async def test_unseal_with_the_wrong_root_key_fails(
    barrier: Barrier, physical: InmemBackend
) -> None:
    await barrier.put("key", SECRET)
    barrier.seal()

    with pytest.raises(StorageError):
        await barrier.unseal(os.urandom(32))

    assert barrier.sealed
    with pytest.raises(SealedError):
        await barrier.get("key")


async def test_unseal_with_the_right_root_key_reads_data(
    barrier: Barrier, physical: InmemBackend, root_key: bytes
) -> None:
    await barrier.put("key", SECRET)
    barrier.seal()

    fresh = Barrier(physical)
    await fresh.unseal(root_key)
    await barrier.unseal(root_key)

    assert not barrier.sealed
    assert await value_of(barrier, "key") == SECRET
    assert await value_of(fresh, "key") == SECRET


async def test_unseal_without_a_keyring_fails(physical: InmemBackend, root_key: bytes) -> None:
    barrier = Barrier(physical)

    with pytest.raises(StorageError):
        await barrier.unseal(root_key)
    assert barrier.sealed


async def test_initialize_twice_is_refused(
    barrier: Barrier, physical: InmemBackend, root_key: bytes
) -> None:
    await barrier.put("key", SECRET)

    with pytest.raises(RevisionMismatchError):
        await Barrier(physical).initialize(os.urandom(32))

    reopened = Barrier(physical)
    await reopened.unseal(root_key)
    assert await value_of(reopened, "key") == SECRET


# -- views --------------------------------------------------------------------------


async def test_view_prefixes_every_key(barrier: Barrier, physical: InmemBackend) -> None:
    view = BarrierView(barrier, "logical/abc/")

    revision = await view.put("secret", SECRET)

    stored = await view.get("secret")
    assert stored is not None
    assert (stored.key, stored.value, stored.revision) == ("secret", SECRET, revision)
    assert await value_of(barrier, "logical/abc/secret") == SECRET
    assert await physical.get("secret") is None
    assert await view.list() == ["secret"]
    await view.delete("secret")
    assert await barrier.get("logical/abc/secret") is None


async def test_views_cannot_see_each_other(barrier: Barrier) -> None:
    mine = BarrierView(barrier, "logical/mine/")
    theirs = BarrierView(barrier, "logical/theirs/")
    await theirs.put("secret", SECRET)

    assert await mine.get("secret") is None
    assert await mine.list() == []
    await mine.delete("secret")
    assert await value_of(theirs, "secret") == SECRET


@pytest.mark.parametrize("key", ["..", "../theirs/secret", "a/../../theirs/secret", "x/.."])
async def test_view_refuses_dotdot(barrier: Barrier, key: str) -> None:
    mine = BarrierView(barrier, "logical/mine/")
    theirs = BarrierView(barrier, "logical/theirs/")
    await theirs.put("secret", SECRET)

    with pytest.raises(InvalidRequestError):
        await mine.get(key)
    with pytest.raises(InvalidRequestError):
        await mine.put(key, b"clobber")
    with pytest.raises(InvalidRequestError):
        await mine.delete(key)
    with pytest.raises(InvalidRequestError):
        await mine.list(key + "/")
    with pytest.raises(InvalidRequestError):
        await mine.commit([Put("fine", b"v"), Put(key, b"clobber")])
    with pytest.raises(InvalidRequestError):
        await mine.commit([Delete(key)])
    with pytest.raises(InvalidRequestError):
        await mine.commit([Check(key, 0)])

    assert await value_of(theirs, "secret") == SECRET
    assert await mine.list() == []


def test_view_prefix_must_end_with_a_slash(barrier: Barrier) -> None:
    with pytest.raises(ValueError):
        BarrierView(barrier, "logical/abc")


async def test_view_commit_prefixes_every_op(barrier: Barrier, physical: InmemBackend) -> None:
    view = BarrierView(barrier, "logical/abc/")
    # Same names outside the view, to catch an op that forgot the prefix.
    await barrier.put("a", b"outside a")
    await barrier.put("b", b"outside b")
    first = await view.commit([Put("a", b"1", expect=0), Put("b", b"2", expect=0)])

    second = await view.commit([Check("a", first), Put("c", b"3"), Delete("b", expect=first)])

    assert sorted(await view.list()) == ["a", "c"]
    assert await revision_of(view, "c") == second
    assert await physical.get("logical/abc/c") is not None
    assert await physical.get("c") is None
    assert await value_of(barrier, "b") == b"outside b"
    with pytest.raises(RevisionMismatchError) as caught:
        await view.commit([Check("a", second)])
    assert caught.value.key == "logical/abc/a"


async def test_sub_view_nests_prefixes(barrier: Barrier) -> None:
    view = BarrierView(barrier, "logical/abc/").sub_view("inner/")

    await view.put("key", b"v")

    assert view.prefix == "logical/abc/inner/"
    assert await value_of(barrier, "logical/abc/inner/key") == b"v"


async def test_view_json_and_recursive_listing(barrier: Barrier) -> None:
    view = BarrierView(barrier, "logical/abc/")
    await view.put_json("config", {"ttl": 30, "name": "x"})
    await view.put("data/one", b"1")
    await view.put("data/nested/two", b"2")

    assert await view.get_json("config") == {"ttl": 30, "name": "x"}
    assert await view.get_json("absent") is None
    assert sorted(await view.list_recursive()) == ["config", "data/nested/two", "data/one"]
    assert await view.list_recursive("data/") == ["data/nested/two", "data/one"]


async def test_view_ciphertext_is_bound_to_the_full_path(
    barrier: Barrier, physical: InmemBackend
) -> None:
    mine = BarrierView(barrier, "logical/mine/")
    theirs = BarrierView(barrier, "logical/theirs/")
    await theirs.put("secret", SECRET)

    await physical.put("logical/mine/secret", await raw(physical, "logical/theirs/secret"))

    with pytest.raises(StorageError):
        await mine.get("secret")
