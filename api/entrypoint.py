"""The ``coffer`` console script: ``server`` runs the HTTP edge, the rest is the client."""

from __future__ import annotations

import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "server":
        from api.server import main as server_main

        return server_main(args[1:])
    from cli.main import main as cli_main

    return int(cli_main(args))


if __name__ == "__main__":
    sys.exit(main())
