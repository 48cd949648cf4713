"""``bench.raft_cpu --main-thread`` keeps the event-loop thread's py-spy stacks alone."""

from __future__ import annotations

from bench.raft_cpu import _main_thread_only


def test_only_the_main_thread_s_stacks_are_kept_without_the_thread_frame() -> None:
    lines = [
        "thread (0x10): MainThread;run (a.py:1);handle (b.py:2) 7\n",
        "thread (0x11): coffer-raft-node1;_run (c.py:3) 4\n",
        "thread (0x12);poll (d.py:4) 1\n",
        "garbage\n",
    ]
    assert list(_main_thread_only(lines)) == ["run (a.py:1);handle (b.py:2) 7\n"]
