"""Real ``coffer server`` processes under ``seal "pkcs11"`` with a SoftHSM2 token.

Init hands out recovery keys; every restart unseals by itself, with no unseal
call; a wrong setting stops the start naming it; a token that is missing at
start is waited for.
"""

from __future__ import annotations

import base64
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from harness.server import CofferFactory, ServerProcess, file_config
from tests.hsm.softhsm import PIN, SoftHsm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def hsm_server(
    coffer: CofferFactory, softhsm: SoftHsm, token: str, data_dir: Path, **extra: str
) -> ServerProcess:
    port = coffer.free_port()
    text = file_config(f"127.0.0.1:{port}", data_dir, extra=softhsm.stanza(token, **extra))
    return coffer.with_config(text, port=port)


def seal_status(server: ServerProcess) -> dict[str, Any]:
    reply = server.request("GET", "/v1/sys/seal-status")
    assert reply.status == 200, reply
    body: dict[str, Any] = reply.json
    return body


def generate_root(server: ServerProcess, keys: list[str]) -> str:
    started = server.request("PUT", "/v1/sys/generate-root/attempt", {})
    assert started.status == 200, started
    nonce, otp = started.json["nonce"], started.json["otp"]
    reply = None
    for key in keys:
        reply = server.request("PUT", "/v1/sys/generate-root/update", {"key": key, "nonce": nonce})
        assert reply.status == 200, reply
    assert reply is not None and reply.json["complete"] is True, reply
    encoded = reply.json["encoded_token"]
    raw = base64.b64decode(encoded + "=" * (-len(encoded) % 4))
    return bytes(a ^ b for a, b in zip(raw, otp.encode(), strict=True)).decode()


def test_init_then_every_restart_unseals_by_itself(
    coffer: CofferFactory, softhsm: SoftHsm, tmp_path: Path
) -> None:
    server = hsm_server(coffer, softhsm, softhsm.init_token(), tmp_path / "data").start()
    before = seal_status(server)
    assert (before["type"], before["initialized"], before["recovery_seal"]) == (
        "pkcs11",
        False,
        True,
    )

    init = server.request("PUT", "/v1/sys/init", {"recovery_shares": 3, "recovery_threshold": 2})
    assert init.status == 200, init
    recovery, root = init.json["recovery_keys"], init.json["root_token"]
    assert init.json["keys"] == [] and len(recovery) == 3
    assert server.health() == 200  # unsealed by the HSM, no unseal call
    mounted = server.request(
        "POST", "/v1/sys/mounts/kv", {"type": "kv", "options": {"version": "2"}}, token=root
    )
    assert mounted.status in (200, 204), mounted
    wrote = server.request("PUT", "/v1/kv/data/app", {"data": {"password": "p1"}}, token=root)
    assert wrote.status == 200, wrote

    for _ in range(2):  # a clean stop, then a crash
        if server.starts == 1:
            server.restart(wait=False)
        else:
            server.kill()
            server.start(wait=False)
        server.wait_ready(healthy=True)
        read = server.request("GET", "/v1/kv/data/app", token=root)
        assert read.status == 200 and read.json["data"]["data"] == {"password": "p1"}, read

    status = seal_status(server)
    assert status["sealed"] is False and status["type"] == "pkcs11"
    assert (status["recovery_seal"], status["t"], status["n"]) == (True, 2, 3)

    refused = server.request("PUT", "/v1/sys/unseal", {"key": recovery[0]})
    assert refused.status == 400 and "cannot unseal" in refused.errors[0], refused

    token = generate_root(server, recovery[1:3])
    assert token != root
    lookup = server.request("GET", "/v1/auth/token/lookup-self", token=token)
    assert lookup.status == 200 and lookup.json["data"]["policies"] == ["root"], lookup

    assert server.count_events("core.unsealed") >= 3
    logs = server.stderr_text() + server.stdout_text()
    assert PIN not in logs and all(key not in logs for key in recovery)


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"pin": PIN + "-wrong"}, '"pin": the token'),
        ({"generate_key": "false", "key_label": "absent"}, '"key_label": no AES key labelled'),
        ({"lib": "/nonexistent/libsofthsm2.so"}, '"lib": no such file'),
        ({"mechanism": "0x1085"}, '"hmac_key_label"'),
    ],
)
def test_a_wrong_setting_stops_the_start_naming_it(
    coffer: CofferFactory, softhsm: SoftHsm, tmp_path: Path, change: dict[str, str], needle: str
) -> None:
    server = hsm_server(coffer, softhsm, softhsm.init_token(), tmp_path / "data", **change)
    config = tmp_path / f"{server.name}.hcl"
    result = coffer.run(f"-config={config}")
    assert result.returncode == 1, result
    assert needle in result.stderr, result.stderr
    assert PIN not in result.stderr


def test_a_token_missing_at_start_is_waited_for(
    coffer: CofferFactory, softhsm: SoftHsm, tmp_path: Path
) -> None:
    label = softhsm.init_token()
    server = hsm_server(coffer, softhsm, label, tmp_path / "data").start()
    init = server.request("PUT", "/v1/sys/init", {"recovery_shares": 1, "recovery_threshold": 1})
    assert init.status == 200, init
    assert server.stop() == 0

    # The token goes away (an HSM unplugged, a volume not mounted yet)...
    (token_dir,) = [p for p in softhsm.tokendir.iterdir() if p.is_dir()]
    parked = tmp_path / "parked-token"
    shutil.move(token_dir, parked)
    server.start()
    server.wait_for_event("seal.auto_unseal_retry", timeout=20)
    assert server.health() == 503 and seal_status(server)["sealed"] is True
    retry = next(e for e in server.log_events() if e.get("event") == "seal.auto_unseal_retry")
    assert f'token_label "{label}"' in retry["error"], retry

    # ... and comes back: the server unseals without anyone typing a key.
    shutil.move(parked, token_dir)
    started = time.monotonic()
    server.wait_ready(timeout=60, healthy=True)
    assert time.monotonic() - started < 60
    assert seal_status(server)["sealed"] is False
