"""The sinks and the broker against real files and sockets, on the event loop."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from node.audit.broker import AuditBroker, AuditFailedError
from node.audit.device import AuditDevice, DeviceConfig
from node.audit.entry import AuditInput
from node.audit.file_sink import FileSink
from node.audit.lines import parse_log
from node.audit.socket_sink import SocketSink
from node.audit.syslog_sink import SyslogSink
from node.logical.request import Operation, Request

AUDIT = AuditInput(Request(Operation.READ, "secret/data/x", id="r1"), "secret/data/x", "root")


async def test_file_sink_appends_and_reopens_after_rename(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    sink = FileSink(str(path), "0640")
    await sink.check()
    await sink.write(b"one\n")
    os.rename(path, tmp_path / "audit.log.1")
    await sink.write(b"two\n")  # the open file, now renamed
    sink.reopen()
    await sink.write(b"three\n")
    await sink.close()
    assert (tmp_path / "audit.log.1").read_bytes() == b"one\ntwo\n"
    assert path.read_bytes() == b"three\n"
    assert path.stat().st_mode & 0o777 == 0o640


async def test_file_sink_fails_while_unwritable_and_recovers(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    path.mkdir()
    sink = FileSink(str(path))
    with pytest.raises(OSError):
        await sink.check()
    with pytest.raises(OSError):
        await sink.write(b"lost\n")
    path.rmdir()
    await sink.write(b"kept\n")
    await sink.close()
    assert path.read_bytes() == b"kept\n"
    assert path.stat().st_mode & 0o777 == 0o600


async def test_discard_records_nothing_and_never_fails(tmp_path: Path) -> None:
    sink = FileSink("discard")
    await sink.check()
    await sink.write(b"gone\n")
    await sink.close()


@contextlib.asynccontextmanager
async def collector(port: int = 0) -> AsyncIterator[tuple[asyncio.Server, list[bytes]]]:
    received: list[bytes] = []
    clients: list[tuple[asyncio.StreamWriter, asyncio.Task[None]]] = []

    async def read(reader: asyncio.StreamReader) -> None:
        with contextlib.suppress(ConnectionError):
            while line := await reader.readline():
                received.append(line)

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        clients.append((writer, task))
        await read(reader)

    server = await asyncio.start_server(on_client, "127.0.0.1", port)
    try:
        yield server, received
    finally:
        server.close()  # no new connections; then the open ones go too (the listener is gone)
        for writer, task in clients:
            writer.close()
            await task
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
        await server.wait_closed()


async def _until(check: object, timeout: float = 5) -> None:
    async with asyncio.timeout(timeout):
        while not check():  # type: ignore[operator]
            await asyncio.sleep(0.01)


async def test_socket_sink_fails_when_the_listener_is_gone_and_recovers() -> None:
    async with collector() as (server, received):
        port = server.sockets[0].getsockname()[1]
        sink = SocketSink(f"127.0.0.1:{port}", "tcp", 1.0)
        await sink.write(b"first\n")
        await _until(lambda: received == [b"first\n"])
    await asyncio.sleep(0.05)
    with pytest.raises(OSError):
        await sink.write(b"lost\n")
    async with collector(port) as (_, again):
        await sink.write(b"back\n")
        await _until(lambda: again == [b"back\n"])
    await sink.close()


async def test_syslog_sink_sends_one_datagram_per_line(tmp_path: Path) -> None:
    address = str(tmp_path / "log.sock")
    receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    receiver.bind(address)
    receiver.setblocking(False)
    loop = asyncio.get_running_loop()
    sink = SyslogSink("local3", "audit", address)
    try:
        await sink.write(b'{"type":"request"}\n')
        message = await asyncio.wait_for(loop.sock_recv(receiver, 4096), 5)
        assert message == f'<{19 * 8 + 6}>audit[{os.getpid()}]: {{"type":"request"}}'.encode()
    finally:
        receiver.close()
    with pytest.raises(OSError):
        await sink.write(b"nobody listens\n")
    await sink.close()


def _device(path: str, file_path: Path) -> AuditDevice:
    config = DeviceConfig(path, "file", options={"file_path": str(file_path)}, salt="s-" + path)
    return AuditDevice(config)


async def test_broker_needs_one_device_to_record(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    broker = AuditBroker()
    broker.devices = {
        "good/": _device("good/", tmp_path / "good.log"),
        "bad/": _device("bad/", broken),
    }
    await broker.log_request(AUDIT)  # one of two recorded it: enough
    lines = list(parse_log((tmp_path / "good.log").read_text()))
    assert [line.request["id"] for line in lines] == ["r1"]
    del broker.devices["good/"]
    with pytest.raises(AuditFailedError) as refused:
        await broker.log_response(AUDIT, None)
    assert refused.value.status == 500
    broken.rmdir()
    await broker.log_response(AUDIT, None)  # the device recovered
    assert [line.type for line in parse_log(broken.read_text())] == ["response"]
    for device in broker.devices.values():
        await device.sink.close()


async def test_socket_sink_over_a_unix_stream_socket(tmp_path: Path) -> None:
    received: list[bytes] = []

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received.append(await reader.readline())
        writer.close()

    address = str(tmp_path / "audit.sock")
    server = await asyncio.start_unix_server(on_client, address)
    sink = SocketSink(address, "unix", 1.0)
    try:
        await sink.write(b"over unix\n")
        await _until(lambda: received == [b"over unix\n"])
    finally:
        await sink.close()
        server.close()
        await server.wait_closed()


async def test_socket_sink_over_udp() -> None:
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.setblocking(False)
    port = receiver.getsockname()[1]
    try:
        sink = SocketSink(f"127.0.0.1:{port}", "udp", 1.0)
        await sink.write(b"one datagram\n")
        loop = asyncio.get_running_loop()
        assert await asyncio.wait_for(loop.sock_recv(receiver, 4096), 5) == b"one datagram\n"
        await sink.close()
    finally:
        receiver.close()


async def test_stdout_gets_the_lines(capfd: pytest.CaptureFixture[str]) -> None:
    sink = FileSink("stdout")
    await sink.check()
    await sink.write(b'{"type":"request"}\n')
    await sink.close()
    assert capfd.readouterr().out == '{"type":"request"}\n'
