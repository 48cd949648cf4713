"""Partition a node by dropping its Raft IP with iptables, and always take the rules out.

``iptables -I INPUT -s IP -j DROP`` and ``-d IP``: on loopback every packet between
two nodes passes INPUT once, so the two rules cut both directions of every Raft
link of the node that owns IP, and nothing else. Each rule carries a comment naming
this process (``coffer-chaos pid=N``); the rules are removed by :meth:`heal`, by
:meth:`close`, at interpreter exit, and rules left by a chaos process that no
longer exists (killed with SIGKILL) are removed by :func:`remove_stale_rules`.
"""

from __future__ import annotations

import atexit
import os
import re
import shlex
import shutil
import subprocess
import threading

__all__ = ["Firewall", "FirewallError", "iptables_available", "remove_stale_rules"]

TAG = "coffer-chaos"
_live: set[Firewall] = set()
_live_lock = threading.Lock()


class FirewallError(RuntimeError):
    pass


def _iptables(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["iptables", "-w", "5", *args], capture_output=True, text=True, check=False
    )


def iptables_available() -> tuple[bool, str]:
    """(usable, why not): iptables installed, run as root, and the INPUT chain readable."""
    if shutil.which("iptables") is None:
        return False, "iptables is not installed"
    if os.geteuid() != 0:
        return False, "iptables needs root"
    listed = _iptables("-S", "INPUT")
    if listed.returncode != 0:
        return False, f"iptables -S INPUT failed: {listed.stderr.strip()}"
    return True, ""


def remove_stale_rules() -> int:
    """Delete rules tagged by chaos processes that are gone; returns how many."""
    listed = _iptables("-S", "INPUT")
    removed = 0
    for line in listed.stdout.splitlines():
        match = re.search(rf'--comment "?{TAG} pid=(\d+)"?', line)
        if not match or not line.startswith("-A INPUT "):
            continue
        pid = int(match.group(1))
        if pid == os.getpid() or _alive(pid):
            continue
        spec = shlex.split(line.removeprefix("-A INPUT "))
        if _iptables("-D", "INPUT", *spec).returncode == 0:
            removed += 1
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Firewall:
    """The DROP rules this run added, so that every one of them comes out again."""

    def __init__(self) -> None:
        self._rules: list[tuple[str, ...]] = []
        self._lock = threading.Lock()
        with _live_lock:
            _live.add(self)

    @property
    def isolated(self) -> list[str]:
        with self._lock:
            return sorted({rule[1] for rule in self._rules})

    def isolate(self, ip: str) -> None:
        """Drop every packet from and to ``ip``."""
        for flag in ("-s", "-d"):
            rule = (flag, ip, "-m", "comment", "--comment", f"{TAG} pid={os.getpid()}")
            done = _iptables("-I", "INPUT", *rule, "-j", "DROP")
            if done.returncode != 0:
                self.heal(ip)
                raise FirewallError(f"iptables -I INPUT {flag} {ip} failed: {done.stderr.strip()}")
            with self._lock:
                self._rules.append(rule)

    def heal(self, ip: str | None = None) -> list[str]:
        """Remove this run's rules (for ``ip``, or all); returns errors, if any."""
        errors = []
        with self._lock:
            chosen = [r for r in self._rules if ip is None or r[1] == ip]
            for rule in chosen:
                done = _iptables("-D", "INPUT", *rule, "-j", "DROP")
                if done.returncode != 0:
                    errors.append(f"iptables -D INPUT {' '.join(rule)}: {done.stderr.strip()}")
                self._rules.remove(rule)
        return errors

    def close(self) -> list[str]:
        errors = self.heal()
        with _live_lock:
            _live.discard(self)
        return errors


@atexit.register
def _heal_all() -> None:
    with _live_lock:
        live = list(_live)
    for firewall in live:
        firewall.close()
