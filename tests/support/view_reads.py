"""Counting the reads a store makes through its view: what the memos of reads save."""

from __future__ import annotations

import pytest

from node.barrier.view import BarrierView

__all__ = ["count_reads"]


def count_reads(view: BarrierView, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The keys ``view.get`` is asked for from now on, in order."""
    reads: list[str] = []
    real = view.get

    async def counted(key: str) -> object:
        reads.append(key)
        return await real(key)

    monkeypatch.setattr(view, "get", counted)
    return reads
