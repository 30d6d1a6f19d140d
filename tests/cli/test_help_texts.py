"""Every option of every console script in pyproject.toml has a ``--help`` description.

Each script's ``main`` is called in-process with ``--help``; ``ArgumentParser.parse_known_args``
is intercepted so the parser the tool built is captured (nothing runs, nothing prints), then
the parser and all its sub-command parsers are walked. An option whose help is missing or
empty fails the test; ``argparse.SUPPRESS`` (a deliberately hidden option) is allowed.
"""
from __future__ import annotations

import argparse
import importlib
import tomllib
from pathlib import Path

import pytest

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
SCRIPTS = tomllib.loads(PYPROJECT.read_text())["project"]["scripts"]


class _Captured(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__(parser.prog)
        self.parser = parser


def built_parser(entry_point: str, monkeypatch) -> argparse.ArgumentParser:
    module_name, function = entry_point.split(":")
    main = getattr(importlib.import_module(module_name), function)

    def capture(self, args=None, namespace=None):
        raise _Captured(self)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_known_args", capture)
    with pytest.raises(_Captured) as caught:
        main(["--help"])
    return caught.value.parser


def undescribed(parser: argparse.ArgumentParser) -> list[str]:
    """``prog: option`` for each action of ``parser`` and its sub-parsers lacking a help."""
    missing = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):  # aliases share a parser
                missing += undescribed(sub)
            continue
        if action.help == argparse.SUPPRESS:
            continue
        if not (action.help or "").strip():
            name = "/".join(action.option_strings) or action.dest
            missing.append(f"{parser.prog}: {name}")
    return missing


def test_the_console_scripts_are_found():
    assert "kafkapy-leader-election" in SCRIPTS and "kafkapy-server-start" in SCRIPTS


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_every_option_has_a_description(script, monkeypatch):
    parser = built_parser(SCRIPTS[script], monkeypatch)
    assert parser.prog == script
    assert undescribed(parser) == []


# Kafka 3.9's kafka-reassign-partitions.sh --help, option by option (its ZooKeeper-era
# --zookeeper is gone in 3.x; --bootstrap-controller is not in 3.9).
KAFKA_REASSIGN_OPTIONS = {
    "--additional", "--bootstrap-server", "--broker-list", "--cancel", "--command-config",
    "--disable-rack-aware", "--execute", "--generate", "--help", "--list",
    "--preserve-throttles", "--reassignment-json-file", "--replica-alter-log-dirs-throttle",
    "--throttle", "--timeout", "--topics-to-move-json-file", "--verify", "--version",
}


def test_reassign_partitions_offers_kafkas_options(monkeypatch):
    parser = built_parser(SCRIPTS["kafkapy-reassign-partitions"], monkeypatch)
    offered = {s for a in parser._actions for s in a.option_strings if s.startswith("--")}
    assert offered == KAFKA_REASSIGN_OPTIONS
    # Kafka's option parser takes no abbreviations ("--boot" is not --bootstrap-server).
    assert parser.allow_abbrev is False
    assert parser.description == "This tool helps to move topic partitions between replicas."
