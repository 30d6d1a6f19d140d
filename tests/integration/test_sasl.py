"""SCRAM users and SASL logins against a real kafkapy broker on a real ZooKeeper.

- ``kafkapy-configs --entity-type users`` adds, describes and deletes SCRAM credentials;
  the znode they leave is Kafka's format (keys in Kafka's order, keys derivable from the
  password and salt);
- Kafka 3.9's own ``kafka-configs.sh --bootstrap-server`` adds a user on kafkapy;
- with a SASL_PLAINTEXT listener (once the connection's SASL gate serves it): stock
  clients log in with PLAIN and SCRAM, a wrong password gets SASL_AUTHENTICATION_FAILED and
  no data, bad handshakes close only their own connection.
"""
from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from kafkapy.cli import configs
from kafkapy.security.sasl import credentials
from tests.broker_process import ROOT, BrokerProcess
from tests.zookeeper_server import zk_connect, zookeeper_server  # noqa: F401 (fixtures)

KAFKA_HOME = Path(os.environ.get("KAFKA_HOME", ROOT.parent / "shared" / "kafka_2.13-3.9.0"))


@pytest.fixture
def zk_broker(tmp_path, zk_connect):  # noqa: F811
    broker = BrokerProcess(tmp_path / "logs", overrides={"zookeeper.connect": zk_connect}).start()
    zk = KazooClient(zk_connect)
    zk.start()
    try:
        yield broker, zk
    finally:
        zk.stop()
        broker.stop()


def _configs(capsys, broker, *args) -> tuple[int, str, str]:
    code = configs.main(["--bootstrap-server", broker.bootstrap, *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def _check_credential(text: str, mechanism: str, password: str, iterations: int) -> None:
    stored = credentials.ScramCredential.from_string(text)
    assert stored.iterations == iterations
    again = credentials.generate(mechanism, password, iterations, stored.salt)
    assert again == stored


def test_configs_cli_users(zk_broker, capsys):
    broker, zk = zk_broker
    code, out, err = _configs(capsys, broker, "--alter", "--add-config",
                              "SCRAM-SHA-256=[iterations=8192,password=alice-secret],"
                              "SCRAM-SHA-512=[password=alice-secret]",
                              "--entity-type", "users", "--entity-name", "alice")
    assert (code, out, err) == (0, "Completed updating config for user alice.\n", "")
    data, _ = zk.get("/config/users/alice")
    stored = json.loads(data)
    assert stored["version"] == 1 and list(stored["config"]) == ["SCRAM-SHA-512", "SCRAM-SHA-256"]
    _check_credential(stored["config"]["SCRAM-SHA-256"], "SCRAM-SHA-256", "alice-secret", 8192)
    _check_credential(stored["config"]["SCRAM-SHA-512"], "SCRAM-SHA-512", "alice-secret", 4096)
    changes = [json.loads(zk.get(f"/config/changes/{c}")[0])
               for c in sorted(zk.get_children("/config/changes"))]
    assert {"version": 2, "entity_path": "users/alice"} in changes

    code, out, _ = _configs(capsys, broker, "--describe", "--entity-type", "users",
                            "--entity-name", "alice")
    assert out == ("SCRAM credential configs for user-principal 'alice' are "
                   "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n")

    code, out, _ = _configs(capsys, broker, "--alter", "--delete-config", "SCRAM-SHA-512",
                            "--entity-type", "users", "--entity-name", "alice")
    assert code == 0
    assert list(json.loads(zk.get("/config/users/alice")[0])["config"]) == ["SCRAM-SHA-256"]

    code, out, err = _configs(capsys, broker, "--alter", "--delete-config", "SCRAM-SHA-512",
                              "--entity-type", "users", "--entity-name", "alice")
    assert code == 1 and "Attempt to delete a user credential that does not exist" in err

    code, out, err = _configs(capsys, broker, "--alter", "--add-config",
                              "SCRAM-SHA-256=[iterations=100,password=x]",
                              "--entity-type", "users", "--entity-name", "bob")
    assert code == 1
    assert "Iterations 100 is less than the minimum 4096 required for SCRAM-SHA-256" in err

    code, out, _ = _configs(capsys, broker, "--alter", "--delete-config", "SCRAM-SHA-256",
                            "--entity-type", "users", "--entity-name", "alice")
    assert code == 0 and zk.exists("/config/users/alice") is None   # Kafka drops empty users
    code, out, _ = _configs(capsys, broker, "--describe", "--entity-type", "users")
    assert (code, out) == (0, "")


@pytest.mark.skipif(not (KAFKA_HOME / "bin" / "kafka-configs.sh").exists() or not shutil.which("java"),
                    reason="Kafka 3.9 or java missing")
def test_kafka_configs_tool_adds_a_user(zk_broker, capsys):
    broker, zk = zk_broker
    run = subprocess.run(
        [str(KAFKA_HOME / "bin" / "kafka-configs.sh"), "--bootstrap-server", broker.bootstrap,
         "--alter", "--add-config", "SCRAM-SHA-256=[iterations=8192,password=carol-secret]",
         "--entity-type", "users", "--entity-name", "carol"],
        capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "Completed updating config for user carol." in run.stdout
    stored = json.loads(zk.get("/config/users/carol")[0])["config"]
    _check_credential(stored["SCRAM-SHA-256"], "SCRAM-SHA-256", "carol-secret", 8192)
    code, out, _ = _configs(capsys, broker, "--describe", "--entity-type", "users")
    assert out == ("SCRAM credential configs for user-principal 'carol' are "
                   "SCRAM-SHA-256=iterations=8192\n")
