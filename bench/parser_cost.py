"""What the server's HTTP parsing costs per request: aiohttp's C parser behind the
method tunnel (api/method_tunnel.py, which carries ``LIST`` past it) against
aiohttp's pure-Python parts, which the server used before the tunnel
(``AIOHTTP_NO_EXTENSIONS``: it also serialises response headers in Python).
Each setting runs in its own process (aiohttp reads the switch at import):

    PYTHONPATH=$PWD python -m bench.parser_cost
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import timeit

__all__ = ["main"]

#: A KV v2 read as hvac sends it (python-requests' headers).
REQUEST = (
    b"GET /v1/secret/data/app/config HTTP/1.1\r\nHost: 127.0.0.1:8200\r\n"
    b"User-Agent: python-requests/2.32.3\r\nAccept-Encoding: gzip, deflate\r\n"
    b"Accept: */*\r\nConnection: keep-alive\r\n"
    b"X-Vault-Token: hvs.CAESIJ0aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789ab\r\n"
    b"X-Vault-Request: true\r\n\r\n"
)
_ROUNDS = 20_000


def _one() -> None:
    """Print µs per request for parsing ``REQUEST`` and serialising a reply's headers."""
    from aiohttp import http, http_writer
    from aiohttp.base_protocol import BaseProtocol
    from multidict import CIMultiDict

    loop = asyncio.new_event_loop()
    parser = http.HttpRequestParser(BaseProtocol(loop), loop, 2**16)
    parse = timeit.timeit(lambda: parser.feed_data(REQUEST), number=_ROUNDS) / _ROUNDS
    headers = CIMultiDict(
        {
            "Cache-Control": "no-store",
            "Content-Type": "application/json",
            "X-Request-Id": "a102c708-59df-4781-a9ba-c0fa87a9b2ea",
            "Content-Length": "400",
            "Date": "Wed, 25 Nov 2026 10:16:15 GMT",
            "Server": "Coffer",
        }
    )
    serialize = http_writer._serialize_headers  # the C or Python one, as selected
    write = timeit.timeit(lambda: serialize("HTTP/1.1 200 OK", headers), number=_ROUNDS) / _ROUNDS
    loop.close()
    from api.method_tunnel import MethodTunnel

    tunnel = MethodTunnel()
    native = timeit.timeit(lambda: tunnel.feed(REQUEST), number=_ROUNDS) / _ROUNDS
    listing = REQUEST.replace(b"GET ", b"LIST ", 1)
    extension = timeit.timeit(lambda: tunnel.feed(listing), number=_ROUNDS) / _ROUNDS
    print(f"{parse * 1e6:.2f} {write * 1e6:.2f} {native * 1e6:.2f} {extension * 1e6:.2f}")


def main() -> None:
    rows: list[tuple[str, float, float, float, float]] = []
    for label, switch in (("C (llhttp)", ""), ("pure Python", "1")):
        env = {k: v for k, v in os.environ.items() if k != "AIOHTTP_NO_EXTENSIONS"}
        if switch:
            env["AIOHTTP_NO_EXTENSIONS"] = switch
        out = subprocess.run(
            [sys.executable, "-m", "bench.parser_cost", "--one"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        parse, write, native, extension = map(float, out)
        rows.append((label, parse, write, native, extension))
    (_, c_parse, c_write, native, extension), (_, py_parse, py_write, _, _) = rows
    print(f"{'aiohttp parts':<14} {'parse µs':>9} {'headers µs':>11} {'total µs':>9}")
    for label, parse, write, *_ in rows:
        print(f"{label:<14} {parse:>9.2f} {write:>11.2f} {parse + write:>9.2f}")
    print(f"the tunnel, per GET: {native:.2f} µs; per LIST (rewritten): {extension:.2f} µs")
    server = c_parse + c_write + native
    print(
        f"the server (C parser and the tunnel, GET): {server:.2f} µs; "
        f"pure Python costs {py_parse + py_write - server:.2f} µs more per request"
    )


if __name__ == "__main__":
    if sys.argv[1:] == ["--one"]:
        _one()
    else:
        main()
