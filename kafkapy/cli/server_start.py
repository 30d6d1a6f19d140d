"""``kafkapy-server-start config/server.properties [--override key=value ...]``.

Like Kafka's ``bin/kafka-server-start.sh``: a properties file, then overrides.
A bad config stops start-up with a message naming the key and the value; a
start-up failure the operator can fix (port in use, log dir locked or unusable,
ZooKeeper unreachable...) with one line naming it; both exit with code 1.
SIGTERM and SIGINT shut the broker down gracefully.
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import signal
import sys

import structlog

from kafkapy.config.broker import BrokerConfig, ConfigError
from kafkapy.config.properties import load_properties, parse_override
from kafkapy.limits import raise_open_file_limit
from kafkapy.logging_setup import configure_logging


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="kafkapy-server-start",
        description="Start a kafkapy broker from a Kafka server.properties file.")
    parser.add_argument("properties", help="path to server.properties")
    parser.add_argument("--override", action="append", default=[], metavar="key=value",
                        help="override a property (may be repeated)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    raise_open_file_limit()
    configure_logging(None)  # held until the config names the format
    log = structlog.get_logger("kafkapy")
    try:
        props = load_properties(args.properties)
        overrides = dict(parse_override(o) for o in args.override)
        config = BrokerConfig.from_properties(props, overrides, log=log)
    except (ConfigError, OSError, ValueError) as err:
        print(f"kafkapy: configuration error: {err}", file=sys.stderr)
        return 1
    configure_logging(config["kafkapy.log.format"], config["kafkapy.log.level"],
                      config["kafkapy.log.levels"])
    return _run(config)


def _run(config: BrokerConfig) -> int:
    try:
        import uvloop   # here: a missing uvloop falls back to asyncio's own loop
        runner = uvloop.run
    except ImportError:
        runner = asyncio.run
    return runner(_serve(config))


async def _serve(config: BrokerConfig) -> int:
    # Imported once the configuration is valid: the whole broker takes a second or more to
    # import, which --help and a configuration error need not wait for.
    from kafkapy.server import Broker, StartupError

    broker = Broker(config)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, broker.request_stop)
    log = structlog.get_logger("kafkapy")
    try:
        await broker.start()
    except StartupError as err:
        # The message names the problem and where; a traceback would bury it.
        log.critical(f"start-up failed: {err}")
        await _close_after_failed_start(broker)
        return 1
    except Exception as err:    # a bug: its traceback is what a report needs
        log.exception("start-up failed", error=str(err))
        await _close_after_failed_start(broker)
        return 1
    _settle_gc()
    await broker.serve_forever()
    await broker.shutdown()
    return 0


def _settle_gc() -> None:
    """Once started: what start-up left alive (modules, registries, the logs loaded) goes
    to the permanent generation, out of every later full collection, and a full collection
    comes after 100 middle-generation ones, not 10 (young and middle ones unchanged: short
    pauses).  With the defaults, opening thousands of connections (each keeps ~7 tracked
    objects: transport, socket, protocol...) ran a full collection of the whole heap every
    few thousand connections, stalling the loop for 20-50 ms each (the p99 of
    connect + ApiVersions under many connections)."""
    gc.freeze()
    gc.set_threshold(700, 10, 100)


async def _close_after_failed_start(broker) -> None:
    try:
        await broker.shutdown(after_failed_start=True)
    except Exception as err:    # the start-up failure stays the line that matters
        structlog.get_logger("kafkapy").warning(f"cleanup after the failed start-up: {err}")
