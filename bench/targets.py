"""What a benchmark drives: a set of server processes and the URLs to send load to."""

from __future__ import annotations

import shutil
import sys
import tempfile
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.procs import Proc
from harness.ports import free_port
from harness.rest import call
from harness.wait import wait_until

__all__ = ["CeilingTarget", "Endpoints", "Target"]


@dataclass
class Endpoints:
    """Where writes go (one base URL) and where reads go (round-robin by worker)."""

    write: str
    reads: list[str]
    token: str = ""
    headers: dict[str, str] = field(default_factory=dict)

    def read_url(self, worker: int) -> str:
        return self.reads[worker % len(self.reads)]


class Target(ABC):
    """A running system under test. ``start`` leaves it ready for load."""

    #: "coffer", "etcd" or "ceiling": which workload implementations apply.
    kind: str = ""

    def __init__(self, name: str, workdir: Path | None = None) -> None:
        self.name = name
        self._owned_dir = workdir is None
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix=f"bench-{name}-"))
        self.procs: list[Proc] = []
        self.info: dict[str, Any] = {}

    @abstractmethod
    def start(self) -> None: ...

    @abstractmethod
    def endpoints(self, view: str) -> Endpoints: ...

    def command(self) -> str:
        """How the processes are started, for the docs."""
        return " ; ".join(" ".join(p.argv) for p in self.procs)

    def pids(self) -> list[int]:
        return [p.pid for p in self.procs if p.running]

    def check_alive(self) -> None:
        for proc in self.procs:
            proc.check_alive()

    def stop(self) -> None:
        for proc in self.procs:
            proc.stop()

    def cleanup(self) -> None:
        self.stop()
        if self._owned_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> Target:
        try:
            self.start()
        except BaseException:
            # The servers' logs are what tell why a start failed: kept, and named.
            self._owned_dir = False
            self.cleanup()
            print(f"# {self.name} did not start; its logs are in {self.workdir}", flush=True)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()


class CeilingTarget(Target):
    """``bench/ceiling.py``: the fastest any aiohttp handler answers on this machine."""

    kind = "ceiling"

    def __init__(self, uvloop: bool = False) -> None:
        super().__init__("ceiling-uvloop" if uvloop else "ceiling")
        self.uvloop = uvloop
        self.port = 0

    def start(self) -> None:
        self.port = free_port()
        argv = [sys.executable, "-m", "bench.ceiling", "--port", str(self.port)]
        if self.uvloop:
            argv.append("--uvloop")
        proc = Proc(self.name, argv, self.workdir / "ceiling.log").start()
        self.procs.append(proc)

        def up() -> bool:
            proc.check_alive()
            return call(self.port, "GET", "/", timeout=2).status == 200

        wait_until(up, 30, "ceiling up")

    def endpoints(self, view: str) -> Endpoints:
        url = f"http://127.0.0.1:{self.port}"
        return Endpoints(write=url, reads=[url])
