"""The ceiling: a trivial aiohttp server answering every request with a small JSON body.

No aiohttp service on this machine can answer faster than this, whatever it does
per request: it is the yardstick for the HTTP layer's own cost.

    python -m bench.ceiling --port 8300 [--uvloop]
"""

from __future__ import annotations

import argparse
import asyncio

from aiohttp import web

__all__ = ["main", "make_app"]

_BODY = b'{"request_id":"00000000-0000-0000-0000-000000000000","data":{"value":"ok"}}'


async def _handle(request: web.Request) -> web.Response:
    if request.can_read_body:
        await request.read()
    return web.Response(body=_BODY, content_type="application/json")


def make_app() -> web.Application:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", _handle)
    return app


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.ceiling")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--uvloop", action="store_true")
    args = parser.parse_args(argv)
    if args.uvloop:
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    web.run_app(
        make_app(), host=args.host, port=args.port, access_log=None, print=None, handle_signals=True
    )


if __name__ == "__main__":
    main()
