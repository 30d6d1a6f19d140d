"""The broker's log output, read from a real broker process in ZooKeeper mode.

ZooKeeper mode brings kazoo, a library logging through plain ``logging``, so these tests see
both kinds of logger.  With ``kafkapy.log.format=json`` every line the process writes (stdout
and stderr together, start-up to clean shutdown) must be one JSON object; kazoo's lines
among them, and the warnings given while the config naming the format was being read.
``kafkapy.log.level`` and ``kafkapy.log.levels`` decide which lines appear, for kafkapy's
structlog loggers and kazoo's alike.  A bad level stops start-up with a config
error naming the key.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.broker_process import SERVER_PROPERTIES, BrokerProcess, free_port
from tests.support.zookeeper_server import zk_connect, zookeeper_server  # noqa: F401  (fixtures)


def run_broker_lines(tmp_path, zk_connect: str, **overrides: str) -> list[dict]:  # noqa: F811
    """Start and stop a ZooKeeper-mode broker; its output lines, each parsed as JSON."""
    broker = BrokerProcess(tmp_path / "logs", overrides={
        "zookeeper.connect": zk_connect, "kafkapy.log.format": "json", **overrides})
    broker.start()
    assert broker.stop() == 0
    lines = broker.output_path.read_text().splitlines()
    assert lines
    parsed = []
    for line in lines:
        try:
            parsed.append(json.loads(line))
        except ValueError:
            pytest.fail(f"not a JSON line: {line!r}")
    return parsed


def test_json_format_puts_every_line_kazoos_included_in_json(tmp_path, zk_connect):  # noqa: F811
    # An unknown key is warned about while the config, format included, is being read.
    entries = run_broker_lines(tmp_path, zk_connect, **{"no.such.key": "1"})
    assert all({"event", "level", "logger", "timestamp"} <= entry.keys() for entry in entries)
    loggers = {entry["logger"] for entry in entries}
    assert any(name.startswith("kazoo") for name in loggers), loggers
    events = [entry["event"] for entry in entries]
    assert "kafkapy broker started" in events and "shut down cleanly" in events
    assert "config.unknown_key" in events
    # The default root level is INFO: no debug line from anyone.
    assert {entry["level"] for entry in entries} <= {"info", "warning", "error", "critical"}


def test_root_and_per_logger_levels(tmp_path, zk_connect):  # noqa: F811
    entries = run_broker_lines(tmp_path, zk_connect, **{
        "kafkapy.log.level": "warn", "kafkapy.log.levels": "kazoo=DEBUG"})
    kazoo = [e for e in entries if e["logger"].startswith("kazoo")]
    others = [e for e in entries if not e["logger"].startswith("kazoo")]
    # kazoo (and its child loggers) at DEBUG: its request traces show.
    assert any(e["level"] == "debug" for e in kazoo), kazoo
    # Everyone else at WARN: the broker's info lines are gone.
    assert all(e["level"] in ("warning", "error", "critical") for e in others), others


def test_a_logger_can_be_silenced(tmp_path, zk_connect):  # noqa: F811
    entries = run_broker_lines(tmp_path, zk_connect, **{"kafkapy.log.levels": "kazoo=OFF"})
    assert not [e for e in entries if e["logger"].startswith("kazoo")]
    assert "kafkapy broker started" in [e["event"] for e in entries]


@pytest.mark.parametrize("key, value", [("kafkapy.log.level", "LOUD"),
                                        ("kafkapy.log.levels", "kazoo=LOUD"),
                                        ("kafkapy.log.levels", "kazoo")])
def test_a_bad_level_is_a_config_error_naming_the_key(tmp_path, key, value):
    result = subprocess.run(
        [sys.executable, "-m", "kafkapy", str(SERVER_PROPERTIES),
         "--override", f"listeners=PLAINTEXT://127.0.0.1:{free_port()}",
         "--override", f"log.dirs={tmp_path / 'logs'}", "--override", f"{key}={value}"],
        capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert f"Invalid value {value} for configuration {key}" in result.stderr.replace(
        f"[{value}]", value), result.stderr
