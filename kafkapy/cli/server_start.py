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
import sys

import structlog

from kafkapy.config.broker import BrokerConfig, ConfigError
from kafkapy.config.group_configs import check_broker_settings
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
        check_broker_settings(config)    # the group.consumer.* bounds, as Kafka 4.x at start
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
    # Imported once the configuration is valid: the whole broker takes a second or more to
    # import, which --help and a configuration error need not wait for.
    from kafkapy.server import serve
    return runner(serve(config))
