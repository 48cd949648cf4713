"""Hypothesis strategies for what a client writes on one HTTP connection: requests
with any verb, bodies framed by ``Content-Length`` or chunked (with extensions and
trailers), bodies that look like requests, and cuts into separate reads. Shared by
the method tunnel's tests against aiohttp's parsers and over a real socket."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

__all__ = ["Sent", "requests", "split"]


@dataclass(frozen=True)
class Sent:
    method: str
    path: str
    body: bytes
    framing: str  # "none", "length" or "chunked"
    chunks: tuple[int, ...]  # chunk sizes when chunked
    extension: bool = False  # a chunk extension on every chunk-size line
    trailer: bool = False

    def encode(self, seq: int | None = None) -> bytes:
        head = [f"{self.method} {self.path} HTTP/1.1", "Host: coffer", "X-A: LIST / HTTP/1.1"]
        if seq is not None:
            head.append(f"X-Seq: {seq}")
        if self.framing == "length":
            head.append(f"Content-Length: {len(self.body)}")
        if self.framing == "chunked":
            head.append("Transfer-Encoding: chunked")
        out = [("\r\n".join(head) + "\r\n\r\n").encode()]
        if self.framing == "length":
            out.append(self.body)
        elif self.framing == "chunked":
            ext = b";name=LIST" if self.extension else b""
            rest = self.body
            for size in self.chunks:
                piece, rest = rest[:size], rest[size:]
                if piece:
                    out.append(b"%x%s\r\n%s\r\n" % (len(piece), ext, piece))
            if rest:
                out.append(b"%x%s\r\n%s\r\n" % (len(rest), ext, rest))
            out.append(b"0\r\nX-Trailer: 1\r\n\r\n" if self.trailer else b"0\r\n\r\n")
        return b"".join(out)


#: Bodies that look like requests, so a reader that lost its place would take them for one.
LOOKALIKES = [b"LIST /v1/x HTTP/1.1\r\nHost: a\r\n\r\n", b"\r\n\r\n", b"0\r\n\r\n", b"HELP "]


@st.composite
def requests(draw: st.DrawFn, methods: list[str]) -> Sent:
    method = draw(st.sampled_from(methods))
    path = "/v1/" + draw(st.text("abcxyz019/-_.?=&", max_size=30))
    framing = draw(st.sampled_from(["none", "length", "chunked"]))
    body = b""
    if framing != "none":
        parts = draw(st.lists(st.one_of(st.binary(max_size=40), st.sampled_from(LOOKALIKES))))
        body = b"".join(parts)
    chunks = tuple(draw(st.lists(st.integers(1, 64), max_size=6)))
    return Sent(method, path, body, framing, chunks, draw(st.booleans()), draw(st.booleans()))


def split(stream: bytes, cuts: list[float]) -> list[bytes]:
    """``stream`` cut at each fraction of its length in ``cuts``."""
    offsets = sorted({int(cut * len(stream)) for cut in cuts} - {0})
    return [stream[a:b] for a, b in zip([0, *offsets], [*offsets, len(stream)], strict=True)]
