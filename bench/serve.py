"""``coffer server`` with benchmark switches, without touching the server's own code.

    python -m bench.serve [--uvloop|--asyncio] [--stdlib-json] [--profile OUT] -- server ...

``--asyncio`` runs the server on asyncio's own loop instead of uvloop (the
server's default since the second performance pass); ``--uvloop`` installs
uvloop's event-loop policy, which puts an older revision (whose server called
``asyncio.run``) on uvloop. ``--stdlib-json`` puts the standard library's ``json``
back in the API edge's encoder and decoder (the state before the first pass).
``--profile`` samples the event-loop thread with pyinstrument until the server
exits and writes the top frames as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

__all__ = ["main"]


def _use_stdlib_json() -> None:
    import api.envelope
    import api.translate
    from sdk import jsoncodec

    # Both modules look their codec up at call time.
    api.envelope.encode_json = jsoncodec.stdlib_dumps  # type: ignore[assignment]  # names its argument differently
    api.translate.decode_bounded = jsoncodec.stdlib_loads


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.serve")
    parser.add_argument("--uvloop", action="store_true")
    parser.add_argument("--asyncio", action="store_true")
    parser.add_argument("--stdlib-json", action="store_true")
    parser.add_argument("--profile", default="")
    parser.add_argument("server_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    rest = [a for a in args.server_args if a != "--"]
    if args.uvloop:
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    if args.asyncio:
        import api.server

        api.server.LOOP_FACTORY = None
    if args.stdlib_json:
        _use_stdlib_json()
    from api.entrypoint import main as entry

    if not args.profile:
        return entry(rest)
    from bench.profiling import profiled

    return profiled(lambda: entry(rest), args.profile)


if __name__ == "__main__":
    sys.exit(main())
