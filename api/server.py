"""``coffer server``: load configuration, open storage, serve the API until signalled."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import uvloop
from aiohttp import web

from api.app import create_app
from api.cluster_setup import raft_core
from api.forwarding import Forwarder
from api.gc_tuning import freeze_startup_objects, set_thresholds
from api.listener import ListenerLimits
from api.listener import serve as serve_listener
from api.tls import CertificateReloader
from node.config import ConfigError, ListenerConfig, ServerConfig, dev_config, load_config
from node.core.auto_unseal import AutoUnsealer
from node.core.core import Core, CoreSettings, InitOutput
from node.observability.logging import configure_logging
from node.observability.statsd import StatsdPusher
from node.physical.factory import open_backend
from node.seal.pkcs11_token import HsmUnavailableError
from sdk.errors import CofferError

__all__ = ["main", "split_address"]

log = logging.getLogger("coffer.server")


def split_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ConfigError(f"listener address {address!r} must be HOST:PORT")
    return host.strip("[]") or "0.0.0.0", int(port)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="coffer server", description="Run a Coffer server.")
    parser.add_argument(
        "-config",
        "--config",
        action="append",
        default=[],
        help="config file or directory (repeatable)",
    )
    parser.add_argument(
        "-dev", "--dev", action="store_true", help="in-memory, initialised and unsealed dev server"
    )
    parser.add_argument(
        "-dev-listen-address",
        "--dev-listen-address",
        default=os.environ.get("COFFER_DEV_LISTEN_ADDRESS", "127.0.0.1:8200"),
    )
    parser.add_argument(
        "-dev-root-token-id",
        "--dev-root-token-id",
        default=os.environ.get("COFFER_DEV_ROOT_TOKEN_ID", ""),
    )
    parser.add_argument("-log-level", "--log-level", default="")
    return parser


_T = TypeVar("_T")

#: The server's event loop. uvloop: once the per-request Python work had been cut,
#: asyncio's own loop was ~17 % of a KV read's CPU (docs/performance.md, before and
#: after). ``None`` runs asyncio's default loop (``bench.serve --asyncio``).
LOOP_FACTORY: Callable[[], asyncio.AbstractEventLoop] | None = uvloop.new_event_loop


def run_on_server_loop(main: Coroutine[Any, Any, _T]) -> _T:
    """``asyncio.run`` on the server's event loop (:data:`LOOP_FACTORY`)."""
    with asyncio.Runner(loop_factory=LOOP_FACTORY) as runner:
        return runner.run(main)


def core_settings(config: ServerConfig) -> CoreSettings:
    return CoreSettings(
        storage_type=config.storage.type,
        cluster_name=config.cluster_name,
        api_addr=config.api_addr,
        unauthenticated_metrics=config.telemetry.unauthenticated_metrics_access,
        default_lease_ttl=config.default_lease_ttl,
        max_lease_ttl=config.max_lease_ttl,
        cache_size=config.cache_size,
        disable_cache=config.disable_cache,
        seal=config.seal,
    )


def listener_limits(listener: ListenerConfig) -> ListenerLimits:
    return ListenerLimits(
        read_header_timeout=listener.http_read_header_timeout,
        read_timeout=listener.http_read_timeout,
        idle_timeout=listener.http_idle_timeout,
        max_connections=listener.max_connections,
    )


def _join_ca_file(config: ServerConfig) -> str | None:
    for entry in config.storage.options.get("retry_join", []):
        if entry.get("leader_ca_cert_file"):
            return str(entry["leader_ca_cert_file"])
    return None


def _dev_banner(address: str, output: InitOutput) -> str:
    # Under an HSM seal the dev server holds a recovery key, not an unseal key.
    key = (
        f"Unseal Key: {output.keys_base64[0]}\n"
        if output.keys_base64
        else f"Recovery Key: {output.recovery_keys_base64[0]}\n"
    )
    return (
        "==> Coffer server started in development mode. Do not run this in production.\n\n"
        "The server is already initialised and unsealed, in memory, over plain HTTP.\n"
        f"    export COFFER_ADDR='http://{address}'\n\n"
        f"{key}"
        f"Root Token: {output.root_token}\n"
    )


async def serve(config: ServerConfig, dev: bool, dev_root_token_id: str) -> None:
    for listener in config.listeners:
        split_address(listener.address)
    if config.storage.type == "raft":
        if dev:
            raise ConfigError("-dev runs on in-memory storage, not raft")
        core = raft_core(config, core_settings(config))
    else:
        core = Core(
            open_backend(config.storage.type, config.storage.options), core_settings(config)
        )
    core.metrics.retention = config.telemetry.prometheus_retention_time
    core.replication.ring_capacity = config.replication.logshipper_buffer_length
    core.replication.ring_max_bytes = config.replication.logshipper_buffer_size
    banner = ""
    if dev:
        banner = _dev_banner(config.listener.address, await core.dev_bootstrap(dev_root_token_id))
    fatal: list[CofferError] = []
    unsealer = await _auto_unsealer(core, fatal) if not dev else None
    forwarder = Forwarder(_join_ca_file(config))
    runners: list[web.AppRunner] = []
    servers: list[asyncio.Server] = []
    reloaders: list[CertificateReloader] = []
    pushers = _pushers(config, core)
    try:
        for index, listener in enumerate(config.listeners):
            reloader = _reloader(listener)
            if reloader is not None:
                reloaders.append(reloader)
            limits = listener_limits(listener)
            app = create_app(
                core,
                listener.max_request_size,
                forwarder,
                limits,
                owns_resources=index == 0,
                ui=config.ui,
            )
            # The first runner (owning the shared resources) is cleaned up last.
            runner = web.AppRunner(app, access_log=None, handle_signals=False)
            await runner.setup()
            runners.insert(0, runner)
            host, port = split_address(listener.address)
            context = reloader.context if reloader else None
            servers.append(await serve_listener(runner, host, port, limits, context))
        for pusher in pushers:
            await pusher.start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        # SIGHUP: reload TLS certificates, and reopen audit files (log rotation).
        loop.add_signal_handler(signal.SIGHUP, _on_sighup, reloaders, core)
        for listener in config.listeners:
            log.info(
                "listening",
                extra={
                    "event": "server.listening",
                    "address": listener.address,
                    "tls": not listener.tls_disable,
                    "storage": config.storage.type,
                },
            )
        if core.cluster is not None:
            core.cluster.start_retry_join()
        if unsealer is not None:

            def give_up(exc: CofferError) -> None:
                fatal.append(exc)
                stop.set()

            unsealer.on_fatal = give_up
            unsealer.start()
        if banner:
            print(banner, flush=True)
        for listener in config.listeners:
            print(f"==> Coffer server listening on {listener.address}", flush=True)
        freeze_startup_objects()
        await stop.wait()
        if fatal:
            raise fatal[0]
    finally:
        log.info("shutting down", extra={"event": "server.stopping"})
        if unsealer is not None:
            await unsealer.stop()
        for pusher in pushers:
            await pusher.stop()
        for server in servers:
            server.close()
        for runner in runners:
            await runner.cleanup()
        await core.seal()
        await core.close()


async def _auto_unsealer(core: Core, fatal: list[CofferError]) -> AutoUnsealer | None:
    """Under an HSM seal: reach the HSM once now, so a wrong setting stops the start
    with its name; an HSM that is not there yet is retried once serving."""
    seal = core.lifecycle.auto_seal
    if seal is None:
        return None
    try:
        await seal.connect()
    except HsmUnavailableError as exc:
        log.warning(
            "the HSM is not reachable yet; the server starts sealed and keeps trying",
            extra={"event": "seal.hsm_unavailable", "error": "; ".join(exc.messages)},
        )
    return AutoUnsealer(core)


def _on_sighup(reloaders: list[CertificateReloader], core: Core) -> None:
    for reloader in reloaders:
        reloader.reload()
    core.audit.reopen()


def _reloader(listener: ListenerConfig) -> CertificateReloader | None:
    if listener.tls_disable:
        return None
    assert listener.tls_cert_file and listener.tls_key_file
    return CertificateReloader(
        listener.tls_cert_file, listener.tls_key_file, listener.tls_min_version
    )


def _pushers(config: ServerConfig, core: Core) -> list[StatsdPusher]:
    """``telemetry``'s statsd and DogStatsD sinks (UDP pushes of ``core.metrics``)."""
    telemetry = config.telemetry
    pushers = []
    if telemetry.statsd_address:
        pushers.append(StatsdPusher(core.metrics, telemetry.statsd_address))
    if telemetry.dogstatsd_addr:
        pushers.append(
            StatsdPusher(
                core.metrics,
                telemetry.dogstatsd_addr,
                dogstatsd=True,
                tags=telemetry.dogstatsd_tags,
            )
        )
    return pushers


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.dev:
            config = dev_config(args.dev_listen_address)
        elif args.config:
            config = load_config(args.config)
        else:
            print(
                "Error: a configuration file must be given with -config, or use -dev",
                file=sys.stderr,
            )
            return 1
    except ConfigError as exc:
        print(f"Error loading configuration: {exc}", file=sys.stderr)
        return 1
    configure_logging(args.log_level or config.log_level)
    set_thresholds()
    try:
        run_on_server_loop(serve(config, args.dev, args.dev_root_token_id))
    except (ConfigError, CofferError, OSError) as exc:
        message = "; ".join(exc.messages) if isinstance(exc, CofferError) else str(exc)
        print(f"Error starting server: {message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    return 0
