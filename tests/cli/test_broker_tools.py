"""``kafkapy-broker-api-versions`` and ``kafkapy-server-stop`` against real brokers.

broker-api-versions: the output is deterministic, so (marked ``java``) it must be byte-equal
to Kafka 3.9's ``kafka-broker-api-versions.sh`` run against the same kafkapy broker; without
Java the layout and the broker's advertised ranges are checked.

server-stop: other tests and helpers run kafkapy brokers on this machine at the same time,
so every run of the tool here is filtered to brokers this test started: ``--node-id`` with a
per-run random broker id far above any other test's (``reserved.broker.max.id`` raised to
allow it), or a ``--process-role`` no broker has. The tool without a filter is run only
against a fake ``/proc`` (its ``_PROC``), where "No kafka server to stop" is checked too.
"""
from __future__ import annotations

import os
import random
import re
import subprocess
from pathlib import Path

import pytest
from kafka import KafkaAdminClient
from kafka.protocol.metadata import ApiVersionsRequest, MetadataResponse

from kafkapy.cli import broker_api_versions, server_stop
from kafkapy.cli._common import send
from tests.support.broker_process import BrokerProcess
from tests.support.cli_tools import tool

ROOT = Path(__file__).resolve().parents[2]
KAFKA_HOME = Path(os.environ.get("KAFKA_HOME", ROOT.parent / "shared" / "kafka_2.13-3.9.0"))


# -- kafkapy-broker-api-versions -------------------------------------------------------------

def advertised(broker) -> dict[int, tuple[int, int]]:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        response = send(admin, ApiVersionsRequest(client_software_name="test",
                                                  client_software_version="1"), 0)
    finally:
        admin.close()
    return {api.api_key: (api.min_version, api.max_version) for api in response.api_keys}


def test_a_node_missing_from_the_bootstrap_metadata_is_looked_up(broker):
    """A node id from a later answer (DescribeCluster's controller) that the client's
    metadata does not list, as when it was bootstrapped before the broker's first
    UpdateMetadata, is found by refreshing the metadata, not refused as unknown."""
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        cluster = admin._manager.cluster
        [known] = cluster.brokers()
        # Metadata that lists only another node (the same address under another id).
        cluster.update_metadata(MetadataResponse[1](
            brokers=[(known.node_id + 1, known.host, known.port, None)], controller_id=-1,
            topics=[]))
        assert cluster.broker_metadata(known.node_id) is None
        response = send(admin, ApiVersionsRequest(client_software_name="test",
                                                  client_software_version="1"), known.node_id)
    finally:
        admin.close()
    assert response.error_code == 0


def test_broker_api_versions_layout(broker):
    result = tool("broker-api-versions", "--bootstrap-server", broker.bootstrap)
    assert result.returncode == 0, result.stderr
    first, *apis, last = result.stdout.split("\n")[:-1]
    assert result.stdout.endswith(")\n")
    assert first == f"{broker.bootstrap} (id: 0 rack: null) -> ("
    assert last == ")"
    ranges = advertised(broker)
    listed = {}
    for line in apis:
        # the usable part: Kafka 3.9's client version, none that fits (the share group APIs'
        # v1+ against its v0 preview) or nothing for an API it does not know (90-92)
        found = re.fullmatch(r"\t(\w+)\((\d+)\): (?:(\d+)(?: to (\d+))?"
                             r"(?: \[usable: \d+\]| \[unusable: node too (?:old|new)\])?"
                             r"|UNSUPPORTED),?", line)
        assert found, line
        key = int(found.group(2))
        listed[key] = found
        if found.group(3) is None:
            assert key not in ranges
        else:
            low, high = int(found.group(3)), int(found.group(4) or found.group(3))
            assert ranges[key] == (low, high)
    assert set(ranges) <= set(listed)
    assert list(listed) == sorted(listed)
    assert listed[0].group(0) == "\tProduce(0): 0 to 12 [usable: 11],"
    assert listed[78].group(0) == "\tShareFetch(78): 1 to 2 [unusable: node too new],"
    assert all(line.endswith(",") for line in apis[:-1]) and not apis[-1].endswith(",")


def test_versions_text_follows_kafkas_node_api_versions():
    text = broker_api_versions.versions_text({0: (0, 11), 18: (3, 3), 1: (20, 30),
                                              3: (0, 0), 1000: (1, 2)})
    lines = text.split("\n")
    assert lines[0] == "(" and lines[-1] == ")"
    assert "\tProduce(0): 0 to 11 [usable: 11]," in lines
    assert "\tFetch(1): 20 to 30 [unusable: node too new]," in lines
    assert "\tApiVersions(18): 3 [usable: 3]," in lines
    assert "\tListOffsets(2): UNSUPPORTED," in lines
    assert lines[-2] == "\tUNKNOWN(1000): 1 to 2"            # no usable part, last: no comma
    assert "\tVote(52): UNSUPPORTED," not in lines            # controller-only: not listed


def test_broker_api_versions_unreachable_server():
    result = tool("broker-api-versions", "--bootstrap-server", "127.0.0.1:1")
    assert result.returncode == 1
    assert "could not be established" in result.stderr


@pytest.mark.java
def test_broker_api_versions_matches_kafkas_tool(broker):
    script = KAFKA_HOME / "bin" / "kafka-broker-api-versions.sh"
    assert script.is_file(), f"{script} is missing"
    kafka = subprocess.run([str(script), "--bootstrap-server", broker.bootstrap],
                           capture_output=True, text=True, timeout=120)
    assert kafka.returncode == 0, kafka.stderr
    ours = tool("broker-api-versions", "--bootstrap-server", broker.bootstrap)
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == kafka.stdout


# -- kafkapy-server-stop ---------------------------------------------------------------------

def own_id() -> int:
    """A broker id no other test uses (they stay below 1001)."""
    return random.randrange(100_000, 2_000_000_000)


def own_broker(tmp_path: Path, node_id: int) -> BrokerProcess:
    return BrokerProcess(tmp_path / f"logs-{node_id}", node_id=node_id,
                         overrides={"reserved.broker.max.id": str(node_id)}).start()


def stop(*args: str) -> subprocess.CompletedProcess:
    return tool("server-stop", *args)


def test_server_stop_by_node_id_is_a_clean_controlled_shutdown(tmp_path):
    first_id, second_id = own_id(), own_id()
    first, second = own_broker(tmp_path, first_id), own_broker(tmp_path, second_id)
    try:
        result = stop(f"--node-id={first_id}")
        assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
        assert first.proc.wait(60) == 0
        output = first.output()
        assert "Starting controlled shutdown" in output and "shut down cleanly" in output
        assert (first.log_dir / ".kafka_cleanshutdown").exists()
        assert second.proc.poll() is None          # the other broker was left alone

        spaced = stop("--node-id", str(second_id))  # the spaced form works too
        assert spaced.returncode == 0, spaced.stderr
        assert second.proc.wait(60) == 0
    finally:
        first.kill()
        second.kill()


def test_server_stop_node_id_wins_over_process_role(tmp_path):
    node_id = own_id()
    broker = own_broker(tmp_path, node_id)
    try:
        nobody = stop("--process-role=nobody-has-this-role")
        assert nobody.returncode == 0 and broker.proc.poll() is None
        both = stop("--process-role=nobody-has-this-role", f"--node-id={node_id}")
        assert both.returncode == 0
        assert both.stdout == ("When both node-id and process-role are provided, the value "
                               "for node-id will take precedence\n")
        assert broker.proc.wait(60) == 0
    finally:
        broker.kill()


def fake_process(proc: Path, pid: int, argv: list[str], cwd: Path) -> None:
    entry = proc / str(pid)
    entry.mkdir()
    (entry / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
    (entry / "cwd").symlink_to(cwd)


def test_server_stop_finds_only_broker_entry_points(tmp_path, monkeypatch, capsys):
    proc = tmp_path / "proc"
    proc.mkdir()
    config = tmp_path / "server.properties"
    config.write_text("broker.id=7\nprocess.roles=broker\n")
    python = "/usr/bin/python3.11"
    fake_process(proc, 101, [python, "-m", "kafkapy", "server.properties",
                             "--override", "broker.id=8"], tmp_path)
    fake_process(proc, 102, [python, "/venv/bin/kafkapy-server-start", str(config)], tmp_path)
    fake_process(proc, 103, ["/venv/bin/kafkapy-server-start", "server.properties"], tmp_path)
    fake_process(proc, 104, [python, "-m", "pytest", "kafkapy"], tmp_path)
    fake_process(proc, 105, ["vim", "kafkapy/server.py"], tmp_path)
    fake_process(proc, 106, [python, "-m", "kafkapy.cli.topics"], tmp_path)
    fake_process(proc, os.getpid(), [python, "-m", "kafkapy", "x"], tmp_path)
    (proc / "self").mkdir()
    monkeypatch.setattr(server_stop, "_PROC", proc)
    signalled = []
    monkeypatch.setattr(server_stop, "_signal", lambda pid, signum: signalled.append(pid) or True)

    assert [b.pid for b in server_stop.find_brokers()] == [101, 102, 103]
    assert server_stop.main(["--node-id=8"]) == 0 and signalled == [101]
    signalled.clear()
    assert server_stop.main(["--node-id=7"]) == 0 and signalled == [102, 103]
    signalled.clear()
    assert server_stop.main(["--process-role=broker"]) == 0 and signalled == [101, 102, 103]
    signalled.clear()
    monkeypatch.setenv("SIGNAL", "KILL")
    assert server_stop.main([]) == 0 and signalled == [101, 102, 103]

    for pid in ("101", "102", "103"):
        for name in ("cmdline", "cwd"):
            (proc / pid / name).unlink()
        (proc / pid).rmdir()
    signalled.clear()
    capsys.readouterr()
    assert server_stop.main([]) == 1 and signalled == []
    assert capsys.readouterr().out == "No kafka server to stop\n"


def test_server_stop_unreadable_config_is_skipped(tmp_path, monkeypatch, capsys):
    proc = tmp_path / "proc"
    proc.mkdir()
    fake_process(proc, 201, ["python3", "-m", "kafkapy", "missing.properties"], tmp_path)
    monkeypatch.setattr(server_stop, "_PROC", proc)
    signalled = []
    monkeypatch.setattr(server_stop, "_signal", lambda pid, signum: signalled.append(pid) or True)
    assert server_stop.main(["--node-id=1"]) == 0 and signalled == []
    assert "Can not find the configuration file" in capsys.readouterr().err


def test_server_stop_reports_a_broker_it_may_not_signal(tmp_path, monkeypatch, capsys):
    proc = tmp_path / "proc"
    proc.mkdir()
    fake_process(proc, 301, ["python3", "-m", "kafkapy", "server.properties"], tmp_path)
    monkeypatch.setattr(server_stop, "_PROC", proc)

    def refuse(pid: int, signum: int) -> None:
        raise PermissionError(1, "Operation not permitted")
    monkeypatch.setattr(server_stop.os, "kill", refuse)
    assert server_stop.main([]) == 1
    assert capsys.readouterr().err == "kill: (301) - Operation not permitted\n"
