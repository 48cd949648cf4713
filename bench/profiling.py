"""pyinstrument around a server's main thread; the top frames as JSON for the docs.

Wall-clock samples of the event-loop thread (``async_mode="disabled"``: a sample is
where the thread really is). Time in the selector's ``select``/``epoll`` is the
loop waiting for work and is reported apart as idle. Raft's and argon2's worker
threads are not sampled.
"""

from __future__ import annotations

import json
import re
import signal
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from types import FrameType
from typing import Any

__all__ = ["area_of", "area_of_short", "profiled", "summarise_collapsed", "summarise_frames"]

_IDLE = ("select", "poll", "epoll", "_run_once")


def area_of(path: str) -> str:
    """A coarse owner for a source file: package (``node/engines``, ``aiohttp``, ...)."""
    norm = path.replace("\\", "/")
    for marker in ("/site-packages/", "/lib/python3"):
        if marker in norm:
            tail = norm.split(marker, 1)[1]
            parts = tail.split("/")
            if marker == "/lib/python3":
                parts = parts[1:]  # "11/asyncio/..." → "asyncio/..."
                if parts and parts[0] == "site-packages":
                    parts = parts[1:]
            head = parts[0].removesuffix(".py") if parts else tail
            return head if head else tail
    for root in ("api/", "node/", "consensus/", "bench/"):
        index = norm.find("/" + root)
        if index >= 0 or norm.startswith(root):
            rest = norm[index + 1 :] if index >= 0 else norm
            parts = rest.split("/")
            return "/".join(parts[:2]) if parts[0] == "node" else parts[0]
    if norm.startswith("<"):
        return "builtin"
    return norm.rsplit("/", 1)[-1]


def area_of_short(path: str) -> str:
    """``area_of`` for py-spy's short paths (``node/barrier/aead.py``, ``uuid.py``)."""
    if path == "<string>":
        return "dataclasses"  # generated __init__/__eq__
    parts = path.split("/")
    if parts[0] == "node" and len(parts) > 2:
        return "/".join(parts[:2])
    if len(parts) > 1:
        return parts[0]
    return path.removesuffix(".py").strip("<>").replace("frozen ", "")


_FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*):(?P<line>\d+)\)$")


#: Frames every request passes through (loop, HTTP server, the edge): their
#: inclusive time is everything, so the inclusive table leaves them out.
_PLUMBING = (
    "(asyncio/",
    "(threading.py",
    "(aiohttp/",
    "(<frozen",
    "(bench/",
    "(api/edge.py",
    "(api/forwarding.py",
    "(api/routes_logical.py",
    "(api/server.py",
    "(api/entrypoint.py",
    "(node/core/core.py",
    "(node/core/pipeline.py",
)


#: Leaves py-spy sometimes reports as running that are a thread waiting for work.
_IDLE_LEAVES = frozenset(
    {
        "_worker (concurrent/futures/thread.py)",
        "PollPoller.poll (pysyncobj/poller.py)",
        "EpollSelector.select (selectors.py)",
        "Condition.wait (threading.py)",
        "Event.wait (threading.py)",
    }
)


def _plumbing(function: str) -> bool:
    return any(marker in function for marker in _PLUMBING)


def _function(frame: str) -> str:
    """``f (file.py:12)`` → ``f (file.py)``: one entry per function, whatever the line."""
    match = _FRAME.match(frame)
    return f"{match['func']} ({match['file']})" if match else frame


def summarise_collapsed(lines: Iterable[str], rate: int, top: int = 15) -> dict[str, Any]:
    """py-spy ``--format raw`` stacks → the same summary as ``summarise_frames``.

    A sample's leaf is the Python function running (C calls count for it);
    inclusive figures leave out the frames on every stack (the event loop's own).
    """
    self_time: Counter[str] = Counter()
    total_time: Counter[str] = Counter()
    area_time: Counter[str] = Counter()
    samples = 0
    idle = 0
    for line in lines:
        stack, _, count_text = line.rstrip().rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_function(f.strip()) for f in stack.split(";")]
        leaf = frames[-1]
        if leaf in _IDLE_LEAVES:
            idle += count
            continue
        self_time[leaf] += count
        area_time[area_of_short(leaf.rpartition(" (")[2].rstrip(")"))] += count
        for frame in set(frames):
            total_time[frame] += count
        samples += count

    def rows(counter: Counter[str], limit: float = 101.0) -> list[dict[str, Any]]:
        out = []
        for name, n in counter.most_common():
            pct = 100 * n / samples if samples else 0.0
            if pct < limit:
                out.append({"name": name, "s": round(n / rate, 3), "pct": round(pct, 1)})
            if len(out) >= top:
                break
        return out

    return {
        "busy_s": round(samples / rate, 3),
        "idle_s": round(idle / rate, 3),
        "samples": samples,
        "self": rows(self_time),
        "total": rows(
            Counter({k: v for k, v in total_time.items() if not _plumbing(k)}), limit=90.0
        ),
        "areas": rows(area_time),
    }


def _own_time(frame: Any) -> float:
    return max(0.0, float(frame.time) - sum(float(c.time) for c in frame.children))


def summarise_frames(root: Any, top: int = 15) -> dict[str, Any]:
    """Self and inclusive time per function and self time per area, busiest first.

    Self time is what a frame spent outside its children; pyinstrument's synthetic
    ``[self]`` frames and C built-ins count for the Python function that called
    them in the per-area figures (AES-GCM time shows under ``node/barrier``).
    """
    self_time: defaultdict[str, float] = defaultdict(float)
    total_time: defaultdict[str, float] = defaultdict(float)
    area_time: defaultdict[str, float] = defaultdict(float)
    idle = 0.0
    # (frame, key of the nearest real Python caller, its area, keys above)
    stack: list[tuple[Any, str, str, frozenset[str]]] = [(root, "", "", frozenset())]
    while stack:
        frame, caller, caller_area, seen = stack.pop()
        path = frame.file_path or ""
        synthetic = bool(frame.is_synthetic)
        builtin = path.startswith("<") or not path
        if synthetic:
            key, area = caller, caller_area
        else:
            key = f"{frame.function} ({frame.file_path_short}:{frame.line_no})"
            area = caller_area if builtin and caller_area else area_of(path)
        own = _own_time(frame)
        if frame.function in _IDLE and not frame.children:
            idle += own
        elif own:
            self_time[key] += own
            area_time[area or "other"] += own
        if not synthetic and key not in seen:
            total_time[key] += float(frame.time)
        here_key = key if not builtin or not caller else caller
        here_area = area
        stack.extend(
            (child, here_key if not synthetic else caller, here_area, seen | {key})
            for child in frame.children
        )
    busy = sum(self_time.values())

    def rows(counter: dict[str, float]) -> list[dict[str, Any]]:
        ranked = sorted(counter.items(), key=lambda kv: kv[1], reverse=True)[:top]
        return [
            {"name": name, "s": round(t, 3), "pct": round(100 * t / busy, 1) if busy else 0.0}
            for name, t in ranked
        ]

    return {
        "busy_s": round(busy, 3),
        "idle_s": round(idle, 3),
        "self": rows(self_time),
        "total": rows(total_time),
        "areas": rows(area_time),
    }


def profiled(run: Callable[[], int], out: str) -> int:
    """Run ``run``; sample from SIGUSR1 until SIGUSR2, then write ``out`` (and ``.txt``)."""
    from pyinstrument import Profiler

    profiler = Profiler(interval=0.0005, async_mode="disabled")

    def begin(signum: int, frame: FrameType | None) -> None:
        if not profiler.is_running:
            profiler.start()

    def end(signum: int, frame: FrameType | None) -> None:
        if not profiler.is_running:
            return
        session = profiler.stop()
        root = session.root_frame()
        summary = summarise_frames(root) if root is not None else {}
        Path(out).with_suffix(".txt").write_text(
            profiler.output_text(unicode=False, color=False, show_all=False)
        )
        Path(out).write_text(json.dumps(summary, indent=1))  # last: its presence means done

    signal.signal(signal.SIGUSR1, begin)
    signal.signal(signal.SIGUSR2, end)
    return run()
