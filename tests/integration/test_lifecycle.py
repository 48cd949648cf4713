"""Init, unseal, seal, restart and crash of a real server on file storage."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from harness.server import CofferFactory, ServerProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def seal_status(server: ServerProcess) -> dict:
    response = server.request("GET", "/v1/sys/seal-status")
    assert response.status == 200, response
    return response.json


def submit(server: ServerProcess, key: str) -> tuple[int, dict]:
    response = server.request("PUT", "/v1/sys/unseal", {"key": key})
    return response.status, response.json


def assert_sealed_everywhere(server: ServerProcess, token: str) -> None:
    assert server.health() == 503
    assert server.request("HEAD", "/v1/sys/health").status == 503
    assert server.request("GET", "/v1/sys/health?sealedcode=299").status == 299
    for path in ("/v1/secret/data/app/db", "/v1/sys/mounts"):
        response = server.request("GET", path, token=token)
        assert response.status == 503, response
        assert response.errors, response
        assert all(isinstance(e, str) and e for e in response.errors), response


def test_init_unseal_seal_restart_with_another_quorum(coffer: CofferFactory) -> None:
    server = coffer.file_server().start()

    # Uninitialised: health 501, init status false, sealed-only paths refuse.
    assert server.health() == 501
    assert server.request("GET", "/v1/sys/init").json == {"initialized": False}
    assert server.request("GET", "/v1/secret/data/x", token="nope").status == 503

    init = server.init(5, 3)
    keys_hex, keys_b64, root = init["keys"], init["keys_base64"], init["root_token"]
    assert len(set(keys_hex)) == 5
    for hex_key, b64_key in zip(keys_hex, keys_b64, strict=True):
        assert bytes.fromhex(hex_key) == base64.b64decode(b64_key)
    assert server.request("GET", "/v1/sys/init").json == {"initialized": True}
    # A second init is refused and does not change the keys.
    again = server.request("PUT", "/v1/sys/init", {"secret_shares": 1, "secret_threshold": 1})
    assert again.status == 400, again

    status = seal_status(server)
    assert (status["sealed"], status["t"], status["n"], status["progress"]) == (True, 3, 5, 0)
    assert server.health() == 503

    code, first = submit(server, keys_hex[0])
    assert code == 200
    assert (first["sealed"], first["progress"], first["t"], first["n"]) == (True, 1, 3, 5)
    assert first["nonce"]
    code, second = submit(server, keys_hex[1])
    assert code == 200
    assert (second["sealed"], second["progress"]) == (True, 2)
    assert second["nonce"] == first["nonce"]
    assert seal_status(server)["progress"] == 2
    code, third = submit(server, keys_hex[2])
    assert code == 200
    assert third["sealed"] is False
    assert third["progress"] == 0
    assert server.health() == 200

    # Unauthenticated and wrongly authenticated writes are refused.
    denied = server.request("PUT", "/v1/secret/data/app/db", {"data": {"x": "y"}})
    assert denied.status == 403, denied
    denied = server.request("PUT", "/v1/secret/data/app/db", {"data": {"x": "y"}}, token="bad")
    assert denied.status == 403, denied

    secret = {"username": "admin", "password": "s3cr3t-\u00e9\u00e8", "n": 42}
    written = server.kv_put(root, "app/db", secret)
    assert written.json["data"]["version"] == 1
    assert server.kv_get(root, "app/db") == secret
    server.kv_put(root, "app/db", {**secret, "n": 43})  # version 2

    sealed = server.request("PUT", "/v1/sys/seal", token=root)
    assert sealed.status in (200, 204), sealed
    assert_sealed_everywhere(server, root)
    status = seal_status(server)
    assert (status["sealed"], status["progress"]) == (True, 0)

    # Restart on the same data directory: still initialised, still sealed.
    old_pid = server.pid
    assert server.stop() == 0
    assert server.count_events("server.stopping") == 1
    server.start()
    assert server.pid != old_pid
    assert server.health() == 503
    assert server.request("GET", "/v1/sys/init").json == {"initialized": True}
    status = seal_status(server)
    assert (status["sealed"], status["t"], status["n"], status["progress"]) == (True, 3, 5, 0)
    assert_sealed_everywhere(server, root)

    # A different quorum of hex keys opens it; everything written is there.
    server.unseal([keys_hex[2], keys_hex[3], keys_hex[4]])
    assert server.kv_get(root, "app/db") == {**secret, "n": 43}
    v1 = server.request("GET", "/v1/secret/data/app/db?version=1", token=root)
    assert v1.status == 200 and v1.json["data"]["data"] == secret, v1
    mounts = server.request("GET", "/v1/sys/mounts", token=root)
    assert mounts.status == 200 and "secret/" in mounts.json["data"], mounts
    server.kv_put(root, "app/second", {"k": "v"})

    # Once more with base64 keys, in another order and another combination.
    assert server.stop() == 0
    server.start()
    assert server.health() == 503
    server.unseal([keys_b64[4], keys_b64[0], keys_b64[3]])
    assert server.health() == 200
    assert server.kv_get(root, "app/db") == {**secret, "n": 43}
    assert server.kv_get(root, "app/second") == {"k": "v"}
    assert server.request("GET", "/v1/sys/key-status", token=root).status == 200
    assert server.stop() == 0


def test_wrong_keys_are_rejected_and_reset_progress(coffer: CofferFactory) -> None:
    server = coffer.file_server().start()
    other = coffer.inmem_server().start()
    keys = server.init(5, 3)["keys"]
    foreign = other.init(5, 3)["keys"]
    assert other.stop() == 0

    # A share from another initialisation: the quorum combines to the wrong key.
    for bad in foreign[:2]:
        assert submit(server, keys[0])[0] == 200
        assert submit(server, keys[1])[0] == 200
        code, body = submit(server, bad)
        assert code == 400, body
        assert body["errors"], body
        status = seal_status(server)
        assert (status["sealed"], status["progress"], status["nonce"]) == (True, 0, "")

    # A corrupted share (one y byte flipped, x coordinate intact), in any position.
    raw = bytearray(bytes.fromhex(keys[2]))
    raw[0] ^= 0x5A
    corrupted = raw.hex()
    for order in ([corrupted, keys[0], keys[1]], [keys[3], corrupted, keys[4]]):
        for key in order[:-1]:
            assert submit(server, key)[0] == 200
        code, body = submit(server, order[-1])
        assert code == 400, body
        assert seal_status(server)["progress"] == 0
        assert server.health() == 503

    # Duplicate key in the same attempt: 400, and the attempt keeps its progress.
    code, first = submit(server, keys[1])
    assert (code, first["progress"]) == (200, 1)
    code, body = submit(server, keys[1])
    assert code == 400, body
    assert body["errors"], body
    # The same share in base64 is still the same share.
    code, body = submit(server, base64.b64encode(bytes.fromhex(keys[1])).decode())
    assert code == 400, body
    status = seal_status(server)
    assert (status["progress"], status["nonce"]) == (1, first["nonce"])

    # Malformed keys are rejected without touching the attempt.
    for junk in ("not a key!", "zz" * 33):
        code, body = submit(server, junk)
        assert code == 400, body
    assert server.request("PUT", "/v1/sys/unseal", {}).status == 400
    assert seal_status(server)["progress"] == 1

    # reset discards the entered share: two more keys are then not enough.
    reset = server.request("PUT", "/v1/sys/unseal", {"reset": True})
    assert reset.status == 200, reset
    assert (reset.json["sealed"], reset.json["progress"], reset.json["nonce"]) == (True, 0, "")
    code, body = submit(server, keys[2])
    assert (code, body["progress"], body["sealed"]) == (200, 1, True)
    assert body["nonce"] != first["nonce"]
    code, body = submit(server, keys[3])
    assert (code, body["progress"], body["sealed"]) == (200, 2, True)
    code, body = submit(server, keys[0])
    assert (code, body["sealed"]) == (200, False)
    assert server.health() == 200

    # Resetting an unsealed server is refused.
    refused = server.request("PUT", "/v1/sys/unseal", {"reset": True})
    assert refused.status == 400, refused
    assert server.health() == 200


def test_acknowledged_write_survives_kill_9(coffer: CofferFactory) -> None:
    server = coffer.file_server().start()
    init = server.init(3, 2)
    keys, root = init["keys"], init["root_token"]
    server.unseal(keys[:2])
    written = {f"crash/item-{i}": {"value": f"v{i}", "i": i} for i in range(20)}
    for name, data in written.items():
        server.kv_put(root, name, data)
    server.kv_put(root, "crash/item-0", {"value": "overwritten"})
    # The last acknowledged write is followed immediately by SIGKILL.
    assert server.kill() == -9
    server.start()
    assert server.health() == 503
    server.unseal([keys[2], keys[0]])
    for name, data in written.items():
        expected = {"value": "overwritten"} if name == "crash/item-0" else data
        assert server.kv_get(root, name) == expected
    meta = server.request("GET", "/v1/secret/metadata/crash/item-0", token=root)
    assert meta.status == 200 and meta.json["data"]["current_version"] == 2, meta
    listing = server.request("LIST", "/v1/secret/metadata/crash/", token=root)
    assert listing.status == 200, listing
    assert sorted(listing.json["data"]["keys"]) == sorted(n.split("/")[1] for n in written)
    assert server.stop() == 0


def test_second_process_on_same_data_dir_is_refused(coffer: CofferFactory, tmp_path) -> None:
    data_dir = tmp_path / "shared"
    first = coffer.file_server(data_dir).start()
    second = coffer.file_server(data_dir)
    second.start(wait=False)
    assert second.wait_exit() != 0
    assert "in use" in second.stderr_text()
    assert first.health() == 501
    assert first.stop() == 0
    second.start()  # the lock was released on shutdown
    assert second.health() == 501
