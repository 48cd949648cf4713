"""Token lookups reuse decoded entries only while the stored bytes are unchanged;
revocation, expiry and use counts still take effect on the next request."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import time
from dataclasses import asdict

import pytest

from node.barrier.barrier import Barrier
from node.barrier.view import BarrierView
from node.physical.inmem import InmemBackend
from node.tokens.entry import TokenEntry
from node.tokens.store import TokenStore
from sdk.errors import PermissionDeniedError


@pytest.fixture
async def view() -> BarrierView:
    barrier = Barrier(InmemBackend())
    await barrier.initialize(os.urandom(32))
    return BarrierView(barrier, "sys/token/")


def new_entry(**changes: object) -> TokenEntry:
    base = TokenEntry(
        key="", accessor="", policies=["default", "dev"], display_name="t", creation_time=1.5
    )
    return base.with_changes(**changes)


@pytest.mark.parametrize(
    "entry",
    [
        new_entry(key="k", accessor="a"),
        new_entry(
            key="k",
            accessor="a",
            parent="p",
            meta={"user": "ünïcode \u2603"},
            num_uses=3,
            expire_time=1.7e9,
            bound_cidrs=["10.0.0.0/8"],
            last_renewal_time=1.6e9,
            role="r",
            max_ttl=60,
        ),
    ],
)
def test_entry_encoding_is_unchanged(entry: TokenEntry) -> None:
    encoded = json.dumps(entry.to_json(), separators=(",", ":"))
    assert encoded == json.dumps(asdict(entry), separators=(",", ":"))
    assert TokenEntry.from_json(json.loads(encoded)) == entry
    entry.to_json()["policies"].append("x")
    assert entry.policies == ["default", "dev"]


async def test_hash_id_is_the_salted_hmac(view: BarrierView) -> None:
    store = TokenStore(view)
    salt = await store._salt_bytes()
    expected = hmac.new(salt, b"s.token", hashlib.sha256).hexdigest()
    assert await store.hash_id("s.token") == expected


async def test_lookups_share_the_decoded_entry(view: BarrierView) -> None:
    store = TokenStore(view)
    token, _ = await store.store_new(new_entry())
    first = await store.lookup(token)
    assert first is not None and await store.lookup(token) is first


async def test_revocation_takes_effect_at_once(view: BarrierView) -> None:
    store = TokenStore(view)
    token, _ = await store.store_new(new_entry())
    assert await store.lookup(token) is not None
    await store.revoke(token)
    assert await store.lookup(token) is None


async def test_a_change_made_by_another_node_is_seen(view: BarrierView) -> None:
    """Another store over the same storage stands for the active node, whose
    writes reach this node's storage through Raft: the bytes change."""
    here, active = TokenStore(view), TokenStore(view)
    token, _ = await here.store_new(new_entry())
    entry = await here.lookup(token)
    assert entry is not None and entry.policies == ["default", "dev"]
    await active.save(entry.with_changes(policies=["default"]))
    changed = await here.lookup(token)
    assert changed is not None and changed.policies == ["default"]
    await active.revoke(token)
    assert await here.lookup(token) is None


async def test_expiry_is_checked_on_every_lookup(
    view: BarrierView, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = TokenStore(view)
    now = time.time()
    token, _ = await store.store_new(new_entry(expire_time=now + 100))
    assert await store.lookup(token) is not None
    monkeypatch.setattr(time, "time", lambda: now + 101)
    assert await store.lookup(token) is None


async def test_use_counts_are_spent_through_the_memo(view: BarrierView) -> None:
    store = TokenStore(view)
    token, _ = await store.store_new(new_entry(num_uses=2))
    for left in (1, -1):
        entry = await store.lookup(token)
        assert entry is not None
        assert (await store.use(entry)).num_uses == left
    assert await store.lookup(token) is None  # used up (-1), even before revocation
    entry = await store.get_by_key(await store.hash_id(token))
    assert entry is not None
    with pytest.raises(PermissionDeniedError):
        await store.use(entry)


async def test_seal_drops_decoded_entries(view: BarrierView) -> None:
    store = TokenStore(view)
    token, _ = await store.store_new(new_entry())
    first = await store.lookup(token)
    store.forget_cached_salt()
    again = await store.lookup(token)
    assert again == first and again is not first
