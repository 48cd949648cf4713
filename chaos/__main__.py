"""``python -m chaos {process|compose} ...``: dispatch to a chaos runner.

``process``: real ``coffer server`` processes on loopback (``chaos.process``);
``compose``: the Docker compose cluster (``chaos.compose``, also ``python -m chaos.compose``).
"""

from __future__ import annotations

import importlib
import sys

RUNNERS = {"process": "chaos.process.__main__", "compose": "chaos.compose.__main__"}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in RUNNERS:
        print(f"usage: python -m chaos {{{'|'.join(RUNNERS)}}} ...\n\n{__doc__}", file=sys.stderr)
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    runner = importlib.import_module(RUNNERS[argv[0]])
    code: int = runner.main(argv[1:])
    return code


if __name__ == "__main__":
    sys.exit(main())
