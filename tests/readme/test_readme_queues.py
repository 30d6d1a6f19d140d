"""The README's "Queues, retries and dead letters" section, run as printed, so it cannot drift
from what works.

Job: read the section's one ``sh`` block and one ``python`` block at test time (a section or
block gone, or a second one added, fails the test), start a kafkapy broker on a free loopback
port (``config/server.properties`` with a listener and log dir of the test's own, as
``make run`` starts it), and replace the README's ``:9092`` by that port in both blocks
(``tests/support/readme.localize``).  Then, in the repository, with its ``.venv``: each command
of the ``sh`` block runs with bash after the block's variable assignments and its output is
checked; the group configs its ``--add-config`` names are read back with DescribeConfigs on the
GROUP resource; a few records are produced to the block's first topic; the ``python`` block
runs with the venv's python and must print ``handled <value>`` for each record; the
``kafkapy-share-groups ... --describe --group <group>`` command the section names in its text
runs with the block's assignments and must show the topic's partition 0, every record
accepted.

Invariants: a README command this module has no check for, or a check no command uses, fails
the test (``checks_for``), so a changed example must come with a changed check.  Traffic goes
only to 127.0.0.1.  Every wait is bounded (the python block's own loop ends after its 20 polls
of 1 s; subprocess timeouts only guard against a hang); the broker is stopped whatever happens.
"""
from __future__ import annotations

import os
import re
import subprocess
from typing import Callable

import pytest
from kafka import KafkaProducer
from kafka.admin import ConfigResource, KafkaAdminClient

from tests.support.broker_process import BrokerProcess
from tests.support.readme import ROOT, fenced_blocks, localize, logical_lines, section

HEADING = "Queues, retries and dead letters"
RECORDS = [f"job-{i}".encode() for i in range(5)]
VENV_BIN = ROOT / ".venv" / "bin"
COMMAND_S = 60.0
PYTHON_BLOCK_S = 90.0

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with BrokerProcess(tmp_path_factory.mktemp("readme-queues") / "logs").start() as b:
        yield b


@pytest.fixture(scope="module")
def ports(broker) -> dict[str, int]:
    return {"9092": broker.port}


def the_block(language: str) -> str:
    blocks = fenced_blocks(HEADING, language)
    assert len(blocks) == 1, f"'{HEADING}' should have one {language} block: {blocks!r}"
    return blocks[0]


def env() -> dict[str, str]:
    """The user's shell: the venv's scripts first on PATH (the prose names them bare)."""
    drop = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")
    values = {k: v for k, v in os.environ.items() if k not in drop}
    values["PATH"] = f"{VENV_BIN}{os.pathsep}{values.get('PATH', '')}"
    values["PYTHONUNBUFFERED"] = "1"
    return values


def bash(script: str, timeout: float = COMMAND_S) -> subprocess.CompletedProcess:
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=ROOT, env=env(),
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, (f"README command failed ({done.returncode}):\n{script}\n"
                                  f"--- stdout ---\n{done.stdout[-4000:]}\n"
                                  f"--- stderr ---\n{done.stderr[-4000:]}")
    return done


def sh_commands(ports: dict[str, int]) -> tuple[list[str], list[str]]:
    """The sh block, localized: (variable assignments, commands)."""
    lines = logical_lines(localize(the_block("sh"), ports))
    assignments = [line for line in lines if re.match(r"^[A-Za-z_]\w*=", line)]
    return assignments, [line for line in lines if line not in assignments]


def option(command: str, name: str) -> str:
    m = re.search(rf"(?:^|\s){re.escape(name)}[ =](\S+)", command)
    assert m, f"{name} not in {command!r}"
    return m.group(1)


# ---------------------------------------------------------------- the sh block's checks

def check_create(command: str, r: subprocess.CompletedProcess) -> None:
    assert f"Created topic {option(command, '--topic')}.\n" in r.stdout, r.stdout


def check_group_configs(command: str, r: subprocess.CompletedProcess) -> None:
    group = option(command, "--entity-name")
    assert option(command, "--entity-type") == "groups", command
    assert r.stdout == f"Completed updating config for group {group}.\n", r.stdout


SH_CHECKS: list[tuple[str, Callable[[str, subprocess.CompletedProcess], None]]] = [
    (r"kafkapy-topics .*--create", check_create),
    (r"kafkapy-configs .*--alter", check_group_configs),
]


def checks_for(commands: list[str]) -> list[Callable]:
    """The one check of ``SH_CHECKS`` each command matches; every check must be used."""
    checks = []
    for command in commands:
        found = [check for pattern, check in SH_CHECKS if re.search(pattern, command)]
        assert len(found) == 1, f"README command with {len(found)} checks here: {command}"
        checks.append(found[0])
    assert {id(c) for c in checks} == {id(c) for _, c in SH_CHECKS}, "unused checks"
    return checks


def added_configs(command: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in option(command, "--add-config").split(","))


def group_configs(bootstrap: str, group: str) -> dict[str, tuple[str, str]]:
    """DescribeConfigs on the GROUP resource: {name: (value, source)}."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        described = admin.describe_configs([ConfigResource("GROUP", group)], config_filter="all")
    finally:
        admin.close()
    return {k: (v["value"], v["config_source"]) for k, v in described["group"][group].items()}


def produce(bootstrap: str, topic: str) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    try:
        for value in RECORDS:
            producer.send(topic, value).get(timeout=30)
    finally:
        producer.close()


def share_groups_command(group: str) -> str:
    """The describe command the section's text names, as written there."""
    text = " ".join(section(HEADING).split())
    found = re.findall(r"`(kafkapy-share-groups \$B [^`]*)`", text)
    assert found == [f"kafkapy-share-groups $B --describe --group {group}"], found
    return found[0]


# ---------------------------------------------------------------- the section, in order

def test_queues_section_as_printed(broker, ports):
    assignments, commands = sh_commands(ports)
    for command, check in zip(commands, checks_for(commands)):
        check(command, bash("\n".join(assignments + [command])))

    (alter,) = [c for c in commands if "kafkapy-configs" in c]
    group, settings = option(alter, "--entity-name"), added_configs(alter)
    assert len(settings) == 4, settings
    described = group_configs(broker.bootstrap, group)
    assert {k: described[k] for k in settings} == {
        k: (v, "DYNAMIC_GROUP_CONFIG") for k, v in settings.items()}

    topic = option(next(c for c in commands if "kafkapy-topics" in c), "--topic")
    produce(broker.bootstrap, topic)

    python = localize(the_block("python"), ports)
    assert f'"group.id": "{group}"' in python and f'subscribe(["{topic}"])' in python, python
    done = subprocess.run([str(VENV_BIN / "python"), "-c", python], cwd=ROOT, env=env(),
                          capture_output=True, text=True, timeout=PYTHON_BLOCK_S)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(done.stdout.splitlines()) == [f"handled {v!r}" for v in RECORDS], (
        done.stdout + done.stderr)

    described = bash("\n".join(assignments + [share_groups_command(group)])).stdout
    lines = described.splitlines()
    assert lines[0] == "" and lines[1].split() == [
        "GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"], described
    assert [line.split() for line in lines[2:]] == [
        [group, topic, "0", str(len(RECORDS)), "0"]], described
