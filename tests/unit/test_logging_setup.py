"""``kafkapy.logging_setup``: level names, and one JSON line per log call whatever logs it.

The output checks run a child Python process (configuring logging changes the process's
root logger, which pytest's own log capture also uses), reading its stderr.
"""
from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap

import pytest

from kafkapy.logging_setup import level_number, parse_logger_levels


def test_log4j_level_names_any_case():
    assert [level_number(n) for n in ("debug", "INFO", "Warn", "ERROR", "fatal")] == [
        logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR, logging.CRITICAL]
    assert level_number("TRACE") < logging.DEBUG < logging.CRITICAL < level_number("OFF")
    assert level_number("ALL") > logging.NOTSET  # NOTSET would mean "inherit"
    for bad in ("LOUD", "", "WARNING!"):
        with pytest.raises(ValueError):
            level_number(bad)


def test_logger_levels_items():
    assert parse_logger_levels(["kazoo=WARN", " kafkapy.server = debug "]) == {
        "kazoo": logging.WARNING, "kafkapy.server": logging.DEBUG}
    for bad in (["kazoo"], ["=WARN"], ["kazoo=LOUD"]):
        with pytest.raises(ValueError):
            parse_logger_levels(bad)


CHILD = textwrap.dedent("""
    import logging, warnings
    import structlog
    from kafkapy.logging_setup import configure_logging
    configure_logging("console")          # as server_start does before the config is read
    configure_logging("json", "INFO", ["kazoo=WARN", "kafkapy.server=DEBUG"])
    structlog.get_logger("kafkapy.server").debug("server debug", n=1)
    structlog.get_logger("kafkapy.log").debug("log debug")
    structlog.get_logger("kafkapy.log").info("positional %s", "arg")
    logging.getLogger("kazoo.client").info("kazoo info")
    logging.getLogger("kazoo.client").warning("kazoo warning %d", 7)
    logging.getLogger("asyncio").error("asyncio error")
    warnings.warn("python warning")
    try:
        1 / 0
    except ZeroDivisionError:
        structlog.get_logger("kafkapy.x").exception("handled")
    raise RuntimeError("not handled")
""")


def test_every_line_is_json_and_levels_apply_per_logger():
    result = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 1
    assert result.stdout == ""
    entries = [json.loads(line) for line in result.stderr.splitlines()]
    got = [(e["logger"], e["level"], e["event"].strip()) for e in entries]
    assert got[:5] == [
        ("kafkapy.server", "debug", "server debug"),
        ("kafkapy.log", "info", "positional arg"),
        ("kazoo.client", "warning", "kazoo warning 7"),
        ("asyncio", "error", "asyncio error"),
        ("py.warnings", "warning", got[4][2]),
    ]
    assert "UserWarning: python warning" in got[4][2]
    handled, uncaught = entries[5:]
    assert (handled["event"], handled["level"]) == ("handled", "error")
    assert "ZeroDivisionError" in handled["exception"]
    assert (uncaught["event"], uncaught["level"]) == ("uncaught exception", "critical")
    assert "RuntimeError: not handled" in uncaught["exception"]


HELD = textwrap.dedent("""
    import structlog
    from kafkapy.logging_setup import configure_logging
    configure_logging(None)
    structlog.get_logger("kafkapy").warning("while reading the config", key="x")
    structlog.get_logger("kafkapy").debug("below the root level")
    {then}
""")


def test_held_records_take_the_format_configured_next():
    result = subprocess.run([sys.executable, "-c", HELD.format(then='configure_logging("json")')],
                            capture_output=True, text=True, timeout=60)
    [entry] = [json.loads(line) for line in result.stderr.splitlines()]
    assert (entry["event"], entry["level"], entry["key"]) == (
        "while reading the config", "warning", "x")


def test_held_records_are_written_at_exit_when_no_format_came():
    result = subprocess.run([sys.executable, "-c", HELD.format(then="raise SystemExit(1)")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    [line] = result.stderr.splitlines()
    assert "while reading the config" in line and "key=x" in line
