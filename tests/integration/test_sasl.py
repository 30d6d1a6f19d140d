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

import json
import os
import shutil
import struct
import subprocess
import time

import pytest
from kazoo.client import KazooClient

from kafkapy.cli import configs
from kafkapy.security.sasl import credentials
from kafkapy.security.sasl.client import ScramClient
from tests.support.cluster import tool_env
from tests.support.broker_process import BrokerProcess, free_port
from tests.support.client_common import kafka_python_values
from tests.support.request_fields import fields
from tests.support.sasl import KAFKA_HOME, _KafkaBroker
from tests.support.wire import WireClient
from tests.support.zookeeper_server import new_chroot
from tests.support.zookeeper_server import zk_connect, zookeeper_server  # noqa: F401 (fixtures)

# KAFKAPY_SASL_REFERENCE=kafka runs the login tests against Apache Kafka 3.9 with the same
# settings: how the tests themselves are checked against the behaviour they demand.
REFERENCE = os.environ.get("KAFKAPY_SASL_REFERENCE", "")


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
        capture_output=True, text=True, timeout=120, env=tool_env())
    assert run.returncode == 0, run.stderr
    assert "Completed updating config for user carol." in run.stdout
    stored = json.loads(zk.get("/config/users/carol")[0])["config"]
    _check_credential(stored["SCRAM-SHA-256"], "SCRAM-SHA-256", "carol-secret", 8192)
    code, out, _ = _configs(capsys, broker, "--describe", "--entity-type", "users")
    assert out == ("SCRAM credential configs for user-principal 'carol' are "
                   "SCRAM-SHA-256=iterations=8192\n")
    for name in (["--entity-name", "carol"], []):       # Kafka's tool asks DescribeClientQuotas first
        run = subprocess.run(
            [str(KAFKA_HOME / "bin" / "kafka-configs.sh"), "--bootstrap-server", broker.bootstrap,
             "--describe", "--entity-type", "users", *name],
            capture_output=True, text=True, timeout=120, env=tool_env())
        assert run.returncode == 0, run.stderr
        assert run.stdout == ("SCRAM credential configs for user-principal 'carol' are "
                              "SCRAM-SHA-256=iterations=8192\n")


# -- logins on a SASL_PLAINTEXT listener -------------------------------------------------

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'username="admin" password="admin-secret" user_admin="admin-secret" '
              'user_alice="alice-secret";')
SCRAM_JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required;'


@pytest.fixture(scope="module")
def sasl_broker(tmp_path_factory, zookeeper_server):  # noqa: F811
    """A broker with a PLAINTEXT listener (inter-broker, admin) and a SASL_PLAINTEXT one."""
    connect = new_chroot(zookeeper_server, "sasl")
    port, sasl_port = free_port(), free_port()
    listeners = f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}"
    kind = _KafkaBroker if REFERENCE == "kafka" else BrokerProcess
    broker = kind(tmp_path_factory.mktemp("sasl") / "logs", port=port, overrides={
        "zookeeper.connect": connect,
        "listeners": listeners, "advertised.listeners": listeners,
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
        "connections.max.reauth.ms": "3600000",
    })
    broker.start()
    broker.sasl_bootstrap = f"127.0.0.1:{sasl_port}"
    try:
        yield broker
    finally:
        broker.stop()


def _add_user(bootstrap: str, mechanism: str, user: str, password: str) -> None:
    assert configs.main(["--bootstrap-server", bootstrap, "--alter", "--add-config",
                         f"{mechanism}=[password={password}]", "--entity-type", "users",
                         "--entity-name", user]) == 0


def _wait_for_user(broker, mechanism: str, user: str, password: str) -> None:
    """Until a SCRAM login works: brokers learn new credentials from a ZooKeeper
    notification, after the AlterUserScramCredentials answer (bounded)."""
    deadline = time.monotonic() + 30
    while True:
        conn = _sasl_connection(broker, mechanism)
        try:
            client = ScramClient(mechanism, user, password)
            first = _authenticate(conn, client.first())
            if first.error_code == 0:
                final = _authenticate(conn, client.evaluate(first.auth_bytes))
                if final.error_code == 0:
                    return
        finally:
            conn.close()
        assert time.monotonic() < deadline, f"{user} cannot log in with {mechanism}"
        time.sleep(0.2)


def _sasl_connection(broker, mechanism: str, version: int = 1) -> WireClient:
    conn = WireClient(broker.sasl_bootstrap)
    answer = conn.request(17, version, mechanism=mechanism)
    assert answer.error_code == 0 and mechanism in answer.mechanisms
    return conn


def _authenticate(conn: WireClient, token: bytes, version: int = 2):
    return conn.request(36, version, auth_bytes=token)


def _metadata(conn: WireClient):
    return conn.request(3, 12, **fields(3, topics=None, allow_auto_topic_creation=False,
                                        include_topic_authorized_operations=False))


def test_kafka_python_plain_and_scram(sasl_broker):
    from kafka import KafkaConsumer, KafkaProducer

    _add_user(sasl_broker.bootstrap, "SCRAM-SHA-256", "kp-scram", "kp-secret")
    _wait_for_user(sasl_broker, "SCRAM-SHA-256", "kp-scram", "kp-secret")
    for mechanism, user, password in (("PLAIN", "alice", "alice-secret"),
                                      ("SCRAM-SHA-256", "kp-scram", "kp-secret")):
        topic = f"kp-{mechanism.lower()}"
        settings = dict(bootstrap_servers=sasl_broker.sasl_bootstrap,
                        security_protocol="SASL_PLAINTEXT", sasl_mechanism=mechanism,
                        sasl_plain_username=user, sasl_plain_password=password)
        producer = KafkaProducer(**settings)
        producer.send(topic, b"hello " + mechanism.encode()).get(timeout=30)
        producer.close()
        consumer = KafkaConsumer(topic, auto_offset_reset="earliest",
                                 consumer_timeout_ms=15000, **settings)
        assert kafka_python_values(consumer, 1) == [b"hello " + mechanism.encode()]


def test_confluent_kafka_scram_user_from_kafkas_tool(sasl_broker):
    confluent = pytest.importorskip("confluent_kafka")
    kafka_configs = KAFKA_HOME / "bin" / "kafka-configs.sh"
    if not kafka_configs.exists() or not shutil.which("java"):
        pytest.skip("Kafka 3.9 or java missing")
    run = subprocess.run(
        [str(kafka_configs), "--bootstrap-server", sasl_broker.bootstrap, "--alter",
         "--add-config", "SCRAM-SHA-512=[iterations=8192,password=ck-secret]",
         "--entity-type", "users", "--entity-name", "ck-user"],
        capture_output=True, text=True, timeout=120, env=tool_env())
    assert run.returncode == 0, run.stderr
    _wait_for_user(sasl_broker, "SCRAM-SHA-512", "ck-user", "ck-secret")
    settings = {"bootstrap.servers": sasl_broker.sasl_bootstrap,
                "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
                "sasl.username": "ck-user", "sasl.password": "ck-secret"}
    producer = confluent.Producer(settings)
    producer.produce("ck-topic", b"v1")
    assert producer.flush(30) == 0
    consumer = confluent.Consumer({**settings, "group.id": "ck-group",
                                   "auto.offset.reset": "earliest"})
    consumer.subscribe(["ck-topic"])
    got = None
    deadline = time.monotonic() + 30
    while got is None and time.monotonic() < deadline:
        message = consumer.poll(1.0)
        if message is not None and message.error() is None:
            got = message.value()
    consumer.close()
    assert got == b"v1"


def test_wrong_password_fails_and_gets_no_data(sasl_broker):
    conn = _sasl_connection(sasl_broker, "PLAIN")
    answer = _authenticate(conn, b"\0alice\0wrong")
    assert (answer.error_code, answer.error_message) == (
        58, "Authentication failed: Invalid username or password")
    assert conn.is_closed()

    _add_user(sasl_broker.bootstrap, "SCRAM-SHA-256", "wp-user", "right")
    _wait_for_user(sasl_broker, "SCRAM-SHA-256", "wp-user", "right")
    conn = _sasl_connection(sasl_broker, "SCRAM-SHA-256")
    client = ScramClient("SCRAM-SHA-256", "wp-user", "wrong")
    first = _authenticate(conn, client.first())
    final = _authenticate(conn, client.evaluate(first.auth_bytes))
    assert final.error_code == 58
    assert final.error_message == ("Authentication failed during authentication due to "
                                   "invalid credentials with SASL mechanism SCRAM-SHA-256")
    assert conn.is_closed()

    conn = WireClient(sasl_broker.sasl_bootstrap)         # no authentication at all
    correlation, data = conn.encode(3, 12, **fields(3, topics=None, allow_auto_topic_creation=False,
                                                    include_topic_authorized_operations=False))
    conn.send_raw(data)
    assert conn.is_closed()


def test_scram_login_and_session_lifetime(sasl_broker):
    _add_user(sasl_broker.bootstrap, "SCRAM-SHA-512", "sl-user", "sl-secret")
    _wait_for_user(sasl_broker, "SCRAM-SHA-512", "sl-user", "sl-secret")
    conn = _sasl_connection(sasl_broker, "SCRAM-SHA-512")
    client = ScramClient("SCRAM-SHA-512", "sl-user", "sl-secret")
    first = _authenticate(conn, client.first())
    assert first.error_code == 0 and first.session_lifetime_ms == 0
    final = _authenticate(conn, client.evaluate(first.auth_bytes))
    assert final.error_code == 0 and final.session_lifetime_ms == 3600000
    assert client.evaluate(final.auth_bytes) == b"" and client.complete
    assert _metadata(conn).brokers
    again = _authenticate(conn, b"x")          # after authentication: Kafka's KafkaApis answer
    assert again.error_code == 34


def test_unknown_mechanism(sasl_broker):
    conn = WireClient(sasl_broker.sasl_bootstrap)
    answer = conn.request(17, 1, mechanism="GSSAPI")
    assert answer.error_code == 33
    # Kafka lists them in Java hash order, not as configured.
    assert answer.mechanisms == ["PLAIN", "SCRAM-SHA-512", "SCRAM-SHA-256"]
    assert conn.is_closed()


def test_legacy_v0_handshake_with_raw_tokens(sasl_broker):
    conn = _sasl_connection(sasl_broker, "PLAIN", version=0)
    token = b"\0alice\0alice-secret"
    conn.send_raw(struct.pack(">i", len(token)) + token)
    assert conn.recv_frame() == b""                 # PlainSaslServer's empty challenge
    assert _metadata(conn).brokers


def test_bad_input_closes_only_that_connection(sasl_broker):
    bystander = _sasl_connection(sasl_broker, "PLAIN")
    assert _authenticate(bystander, b"\0alice\0alice-secret").error_code == 0

    big = _sasl_connection(sasl_broker, "PLAIN")    # past sasl.server.max.receive.size
    big.send_raw(struct.pack(">i", 524288 + 1000) + b"\0" * 4096)
    assert big.is_closed()

    truncated = WireClient(sasl_broker.sasl_bootstrap)
    correlation, data = truncated.encode(17, 1, mechanism="PLAIN")
    truncated.send_raw(data[:len(data) // 2])
    truncated.close()

    garbage = WireClient(sasl_broker.sasl_bootstrap)
    garbage.send_raw(struct.pack(">i", 12) + b"\xff" * 12)
    assert garbage.is_closed()

    assert _metadata(bystander).brokers             # the others are still served
    fresh = _sasl_connection(sasl_broker, "PLAIN")
    assert _authenticate(fresh, b"\0alice\0alice-secret").error_code == 0


def test_credentials_reach_every_broker(tmp_path, zookeeper_server):  # noqa: F811
    """A user altered on the controller logs in at another broker (which learns it from the
    /config/changes notification), and a deleted one no longer does."""
    connect = new_chroot(zookeeper_server, "sasl2")
    brokers = []
    try:
        for node_id in (1, 2):
            port, sasl_port = free_port(), free_port()
            listeners = f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}"
            broker = BrokerProcess(tmp_path / f"b{node_id}" / "logs", port=port, node_id=node_id,
                                   overrides={
                "zookeeper.connect": connect,
                "listeners": listeners, "advertised.listeners": listeners,
                "inter.broker.listener.name": "PLAINTEXT",
                "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "SCRAM-SHA-256",
                "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS})
            broker.start()
            broker.sasl_bootstrap = f"127.0.0.1:{sasl_port}"
            brokers.append(broker)
        # Each broker loads its credential cache on its first SCRAM login, then follows
        # notifications: log in once on both before the user exists.
        for broker in brokers:
            conn = _sasl_connection(broker, "SCRAM-SHA-256")
            assert _authenticate(conn, ScramClient("SCRAM-SHA-256", "x", "y").first()).error_code == 58
        _add_user(brokers[0].bootstrap, "SCRAM-SHA-256", "everywhere", "pw-everywhere")
        for broker in brokers:
            _wait_for_user(broker, "SCRAM-SHA-256", "everywhere", "pw-everywhere")
        assert configs.main(["--bootstrap-server", brokers[1].bootstrap, "--alter",
                             "--delete-config", "SCRAM-SHA-256", "--entity-type", "users",
                             "--entity-name", "everywhere"]) == 0
        for broker in brokers:
            deadline = time.monotonic() + 30
            while True:
                conn = _sasl_connection(broker, "SCRAM-SHA-256")
                client = ScramClient("SCRAM-SHA-256", "everywhere", "pw-everywhere")
                refused = _authenticate(conn, client.first()).error_code == 58
                conn.close()
                if refused:
                    break
                assert time.monotonic() < deadline, "a deleted user still logs in"
                time.sleep(0.2)
    finally:
        for broker in brokers:
            broker.stop()
