"""The baseline: an etcd cluster from Debian's ``etcd-server`` package on loopback.

Members listen on 127.0.0.1 (client and peer ports), default settings otherwise
(so the WAL is fsynced on every commit batch, as Coffer's strict durability is).
The load goes through etcd's JSON gateway (``/v3/kv/put``, ``/v3/kv/range``).
Views: ``leader`` (everything to the leader) and ``followers`` (reads round-robin
over the followers with ``serializable: true``, writes to the leader).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from bench.procs import Proc
from bench.targets import Endpoints, Target
from harness.ports import free_port
from harness.rest import call
from harness.wait import wait_until

__all__ = ["EtcdCluster", "etcd_binary", "etcd_version"]


def etcd_binary() -> str:
    found = shutil.which("etcd") or "/usr/bin/etcd"
    if not Path(found).exists():
        raise RuntimeError("etcd is not installed: apt-get install -y etcd-server")
    return found


def etcd_version() -> str:
    out = subprocess.run([etcd_binary(), "--version"], capture_output=True, text=True, check=False)
    first = out.stdout.splitlines()[0] if out.stdout else "unknown"
    return first.replace("etcd Version:", "").strip()


class EtcdCluster(Target):
    kind = "etcd"

    def __init__(self, size: int = 3) -> None:
        super().__init__(f"etcd{size}")
        self.size = size
        self.client_ports = [free_port() for _ in range(size)]
        self.peer_ports = [free_port() for _ in range(size)]
        self.leader_index = 0

    def _argv(self, index: int, initial: str) -> list[str]:
        name = f"e{index + 1}"
        client = f"http://127.0.0.1:{self.client_ports[index]}"
        peer = f"http://127.0.0.1:{self.peer_ports[index]}"
        return [
            etcd_binary(),
            f"--name={name}",
            f"--data-dir={self.workdir / name}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster={initial}",
            "--initial-cluster-state=new",
            "--initial-cluster-token=coffer-bench",
            "--logger=zap",
            "--log-level=warn",
        ]

    def start(self) -> None:
        initial = ",".join(
            f"e{i + 1}=http://127.0.0.1:{port}" for i, port in enumerate(self.peer_ports)
        )
        self.procs = [
            Proc(f"etcd-e{i + 1}", self._argv(i, initial), self.workdir / f"e{i + 1}.log").start()
            for i in range(self.size)
        ]

        def leader() -> int | None:
            for proc in self.procs:
                proc.check_alive()
            for index, port in enumerate(self.client_ports):
                reply = call(port, "POST", "/v3/maintenance/status", {}, timeout=2)
                status, body = reply.status, reply.doc
                if status != 200 or not body.get("leader"):
                    return None
                if body["leader"] == body["header"]["member_id"]:
                    self.leader_index = index
                    return index + 1
            return None

        wait_until(leader, 60, "etcd leader", every=0.2)
        self.info["version"] = etcd_version()

    def endpoints(self, view: str) -> Endpoints:
        urls = [f"http://127.0.0.1:{port}" for port in self.client_ports]
        leader = urls[self.leader_index]
        if view == "leader":
            return Endpoints(write=leader, reads=[leader])
        if view == "followers":
            reads = [u for i, u in enumerate(urls) if i != self.leader_index]
            return Endpoints(write=leader, reads=reads)
        raise ValueError(f"unknown view {view!r}")
