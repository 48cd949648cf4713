"""Map an older tree's test ids onto this tree's, to time the same tests on both.

Why: tests move and get renamed as the tree is reorganised (issue 15 mirrored
tests/unit onto the source tree), so "is ``make test`` slower than before?" needs the
old test set found in the new layout. A test is matched by its name (with its
parameters); where the name is not unique, by the path words it shares with the old
file (``tests/unit/test_cli_kv.py`` → ``tests/unit/cli/test_kv.py``).

    pytest --collect-only -q tests > old.txt        # in the old tree, then in this one
    python scripts/map_test_ids.py old.txt new.txt mapped.txt
    python scripts/test_suite.py --cov-floor 0 @mapped.txt
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path


def _words(path: str) -> set[str]:
    return set(re.split(r"[/_.]", path))


def map_ids(old: list[str], new: list[str]) -> tuple[list[str], list[str]]:
    """The new ids of the old tests (in old order), and the old ids not found."""
    by_name: dict[str, list[str]] = defaultdict(list)
    for node_id in new:
        by_name[node_id.split("::", 1)[1]].append(node_id)
    mapped: list[str] = []
    missing: list[str] = []
    for node_id in old:
        path, name = node_id.split("::", 1)
        candidates = by_name.get(name, [])
        if len(candidates) > 1:
            shared = {c: len(_words(path) & _words(c.split("::", 1)[0])) for c in candidates}
            best = max(shared.values())
            candidates = [c for c in candidates if shared[c] == best]
        if len(candidates) == 1:
            mapped.append(candidates[0])
        else:
            missing.append(node_id)
    return mapped, missing


def _ids(path: str) -> list[str]:
    return [line.strip() for line in Path(path).read_text().splitlines() if "::" in line]


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    old, new = _ids(argv[0]), _ids(argv[1])
    mapped, missing = map_ids(old, new)
    Path(argv[2]).write_text("".join(f"{node_id}\n" for node_id in dict.fromkeys(mapped)))
    print(f"{len(old)} old tests: {len(mapped)} found, {len(missing)} not found")
    for node_id in missing:
        print(f"  not found: {node_id}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
