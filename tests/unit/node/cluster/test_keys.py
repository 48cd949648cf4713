"""The cluster's derived keys, the join challenge and signed statements."""

from __future__ import annotations

import asyncio
import base64
import os
import time
from pathlib import Path

import pytest

from consensus.local import read_local_state
from harness.raft import open_single_node
from node.cluster.join import Challenges
from node.cluster.secrets import (
    challenge_key,
    forwarding_key,
    open_challenge,
    raft_secret,
    seal_challenge,
    sign,
    verify,
)
from sdk.errors import InvalidRequestError, PermissionDeniedError


def test_keys_are_distinct_and_deterministic() -> None:
    root = os.urandom(32)
    keys = {raft_secret(root), challenge_key(root), forwarding_key(raft_secret(root))}
    assert len(keys) == 3
    assert raft_secret(root) == raft_secret(root)
    assert raft_secret(os.urandom(32)) != raft_secret(root)


def test_only_the_root_key_holder_opens_a_challenge() -> None:
    root, other = os.urandom(32), os.urandom(32)
    nonce = os.urandom(32)
    challenge = seal_challenge(challenge_key(root), "node-2", nonce)
    assert open_challenge(challenge_key(root), "node-2", challenge) == nonce
    with pytest.raises(InvalidRequestError, match="another cluster"):
        open_challenge(challenge_key(other), "node-2", challenge)
    with pytest.raises(InvalidRequestError):
        open_challenge(challenge_key(root), "node-3", challenge)  # bound to the server id


def test_answers_are_checked_once_in_constant_time() -> None:
    challenges = Challenges()
    challenges.remember("n2", b"secret-nonce", "10.0.0.2")
    with pytest.raises(PermissionDeniedError):
        challenges.check("n2", base64.b64encode(b"wrong").decode())
    challenges.check("n2", base64.b64encode(b"secret-nonce").decode())
    with pytest.raises(InvalidRequestError, match="no challenge"):
        challenges.check("n2", base64.b64encode(b"secret-nonce").decode())


def test_signatures_bind_every_part_and_expire() -> None:
    key = os.urandom(32)
    signature = sign(key, "10.0.0.1", "GET", "/v1/x")
    assert verify(key, signature, "10.0.0.1", "GET", "/v1/x")
    assert not verify(key, signature, "10.0.0.2", "GET", "/v1/x")
    assert not verify(os.urandom(32), signature, "10.0.0.1", "GET", "/v1/x")
    old = sign(key, "a", now=time.time() - 3600)
    assert not verify(key, old, "a")
    assert not verify(key, "garbage", "a")


async def test_a_sealed_node_reads_its_own_files(tmp_path: Path) -> None:
    backend = await open_single_node(tmp_path / "raft")
    try:
        await backend.put("core/seal-config", b"cfg")
        await backend.put("core/root-key", b"blob")
        await backend.delete("core/root-key")
        await backend.put("core/root-key", b"blob2")
    finally:
        await backend.close()
    state = await asyncio.to_thread(read_local_state, tmp_path / "raft")
    config = state.get("core/seal-config")
    assert config is not None and config[0] == b"cfg"
    found = state.get("core/root-key")
    assert found is not None and found[0] == b"blob2"
    assert state.list("core/") == ["root-key", "seal-config"]
