"""Stock clients log in over SASL_PLAINTEXT and SASL_SSL with PLAIN and SCRAM.

One broker on ZooKeeper (SCRAM credentials live in ``/config/users``), three listeners:
PLAINTEXT (inter-broker, and the admin tool adding SCRAM users), SASL_PLAINTEXT and SASL_SSL
(test CA from ``tests/support/certs.py``), each enabling PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512.
Clients: kafka-python, confluent-kafka (librdkafka) and the Java client (Kafka 3.9's own
console producer and consumer, kafka-clients 3.9).  Each produces and reads back; a wrong
password gets SASL_AUTHENTICATION_FAILED and no data.  kafkapy's own inter-broker client
(``BrokerConnection`` with a ``ClientSecurity``) logs in the same way.
"""
from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from kafkapy.cli import configs
from kafkapy.network.client import BrokerConnection, SaslLoginError
from kafkapy.security.listener_setup import ClientSecurity
from tests.support.cluster import tool_env
from tests.support.broker_process import ROOT, BrokerProcess, free_port
from tests.support.certs import broker_ssl_overrides
from tests.support.certs import certs  # noqa: F401 (fixture)
from tests.support.client_common import kafka_python_values, poll_values
from tests.support.zookeeper_server import new_chroot
from tests.support.zookeeper_server import zookeeper_server  # noqa: F401 (fixture)

pytestmark = pytest.mark.timeout(600)

KAFKA_HOME = Path(os.environ.get("KAFKA_HOME", ROOT.parent / "shared" / "kafka_2.13-3.9.0"))
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'username="admin" password="admin-secret" user_admin="admin-secret" '
              'user_carol="carol-secret";')
SCRAM_JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required;'
USERS = {"PLAIN": ("carol", "carol-secret"), "SCRAM-SHA-256": ("dave", "dave-secret"),
         "SCRAM-SHA-512": ("erin", "erin-secret")}


@pytest.fixture(scope="module")
def secure_broker(tmp_path_factory, zookeeper_server, certs):  # noqa: F811
    connect = new_chroot(zookeeper_server, "security")
    port, sasl, sasl_ssl = free_port(), free_port(), free_port()
    listeners = (f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl},"
                 f"SASL_SSL://localhost:{sasl_ssl}")
    overrides = {"zookeeper.connect": connect,
                 "listeners": listeners, "advertised.listeners": listeners,
                 "inter.broker.listener.name": "PLAINTEXT",
                 "sasl.enabled.mechanisms": ",".join(MECHANISMS),
                 **broker_ssl_overrides(certs, "PKCS12", prefix="listener.name.sasl_ssl.")}
    for listener in ("sasl_plaintext", "sasl_ssl"):
        overrides[f"listener.name.{listener}.plain.sasl.jaas.config"] = PLAIN_JAAS
        for scram in ("scram-sha-256", "scram-sha-512"):
            overrides[f"listener.name.{listener}.{scram}.sasl.jaas.config"] = SCRAM_JAAS
    broker = BrokerProcess(tmp_path_factory.mktemp("security") / "logs", port=port,
                           overrides=overrides).start()
    broker.endpoints = {"SASL_PLAINTEXT": f"127.0.0.1:{sasl}", "SASL_SSL": f"localhost:{sasl_ssl}"}
    try:
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            user, password = USERS[mechanism]
            assert configs.main(["--bootstrap-server", broker.bootstrap, "--alter", "--add-config",
                                 f"{mechanism}=[iterations=4096,password={password}]",
                                 "--entity-type", "users", "--entity-name", user]) == 0
            _wait_for_login(broker, mechanism, user, password)
        yield broker
    finally:
        broker.stop()


def _login(bootstrap: str, protocol: str, mechanism: str, user: str, password: str,
           ssl_context=None) -> None:
    """kafkapy's inter-broker client logging in (raises SaslLoginError when refused)."""
    async def run():
        host, port = bootstrap.rsplit(":", 1)
        conn = BrokerConnection(security=ClientSecurity(protocol, ssl_context, mechanism,
                                                        user, password))
        await conn.connect(host, int(port), 10)
        conn.close()
    asyncio.run(run())


def _wait_for_login(broker, mechanism: str, user: str, password: str) -> None:
    """SCRAM users reach the broker's cache through a ZooKeeper notification (bounded)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            _login(broker.endpoints["SASL_PLAINTEXT"], "SASL_PLAINTEXT", mechanism, user, password)
            return
        except SaslLoginError:
            assert time.monotonic() < deadline, f"{user} cannot log in with {mechanism}"
            time.sleep(0.2)


def _kafka_python_settings(certs, protocol: str, mechanism: str, user: str, password: str):
    settings = {"security_protocol": protocol, "sasl_mechanism": mechanism,
                "sasl_plain_username": user, "sasl_plain_password": password}
    if protocol == "SASL_SSL":
        settings["ssl_cafile"] = str(certs.ca)
    return settings


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python(secure_broker, certs, protocol, mechanism):
    from kafka import KafkaConsumer, KafkaProducer
    user, password = USERS[mechanism]
    settings = _kafka_python_settings(certs, protocol, mechanism, user, password)
    bootstrap = secure_broker.endpoints[protocol]
    topic = f"kp-{protocol}-{mechanism}".lower()
    producer = KafkaProducer(bootstrap_servers=bootstrap, **settings)
    for i in range(20):
        producer.send(topic, b"%d" % i)
    producer.flush(timeout=60)
    producer.close()
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             consumer_timeout_ms=15000, **settings)
    assert kafka_python_values(consumer, 20) == [b"%d" % i for i in range(20)]


def _confluent_settings(secure_broker, certs, protocol, mechanism, user, password):
    settings = {"bootstrap.servers": secure_broker.endpoints[protocol],
                "security.protocol": protocol, "sasl.mechanism": mechanism,
                "sasl.username": user, "sasl.password": password}
    if protocol == "SASL_SSL":
        settings["ssl.ca.location"] = str(certs.ca)
    return settings


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_kafka(secure_broker, certs, protocol, mechanism):
    confluent = pytest.importorskip("confluent_kafka")
    user, password = USERS[mechanism]
    settings = _confluent_settings(secure_broker, certs, protocol, mechanism, user, password)
    topic = f"ck-{protocol}-{mechanism}".lower()
    producer = confluent.Producer(settings)
    for i in range(20):
        producer.produce(topic, b"%d" % i)
    assert producer.flush(60) == 0
    consumer = confluent.Consumer({**settings, "group.id": f"g-{topic}",
                                   "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got = poll_values(consumer, 20, timeout=60)
    assert got == [b"%d" % i for i in range(20)]


def _java_config(path: Path, certs, protocol: str, mechanism: str, user: str, password: str) -> Path:
    module = ("org.apache.kafka.common.security.plain.PlainLoginModule" if mechanism == "PLAIN"
              else "org.apache.kafka.common.security.scram.ScramLoginModule")
    lines = [f"security.protocol={protocol}", f"sasl.mechanism={mechanism}",
             f'sasl.jaas.config={module} required username="{user}" password="{password}";']
    if protocol == "SASL_SSL":
        lines += ["ssl.truststore.type=PEM", f"ssl.truststore.location={certs.ca}"]
    path.write_text("\n".join(lines) + "\n")
    return path


def _java_tool(script: str, *args: str, stdin: str | None = None, timeout: float = 120):
    env = dict(tool_env(),
               KAFKA_LOG4J_OPTS=f"-Dlog4j.configuration=file:{KAFKA_HOME}/config/tools-log4j.properties")
    return subprocess.run([str(KAFKA_HOME / "bin" / script), *args], input=stdin,
                          capture_output=True, text=True, timeout=timeout, env=env)


def _need_java() -> None:
    if not (KAFKA_HOME / "bin" / "kafka-console-producer.sh").exists() or not shutil.which("java"):
        pytest.skip("Kafka 3.9 or java missing")


@pytest.mark.java
@pytest.mark.parametrize("protocol,mechanism", [("SASL_SSL", "PLAIN"), ("SASL_SSL", "SCRAM-SHA-512"),
                                                ("SASL_PLAINTEXT", "SCRAM-SHA-256")])
def test_java_client(secure_broker, certs, tmp_path, protocol, mechanism):
    _need_java()
    user, password = USERS[mechanism]
    config = _java_config(tmp_path / "client.properties", certs, protocol, mechanism, user, password)
    bootstrap = secure_broker.endpoints[protocol]
    topic = f"java-{protocol}-{mechanism}".lower()
    values = [f"java-{i}" for i in range(10)]
    produced = _java_tool("kafka-console-producer.sh", "--bootstrap-server", bootstrap,
                          "--topic", topic, "--producer.config", str(config),
                          stdin="\n".join(values) + "\n")
    assert produced.returncode == 0, produced.stderr[-3000:]
    consumed = _java_tool("kafka-console-consumer.sh", "--bootstrap-server", bootstrap,
                          "--topic", topic, "--from-beginning", "--max-messages", "10",
                          "--timeout-ms", "60000", "--consumer.config", str(config))
    assert consumed.stdout.split() == values, consumed.stderr[-3000:]


# -- wrong passwords -----------------------------------------------------------------------------

@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_wrong_password_is_refused_by_the_login(secure_broker, certs, protocol, mechanism):
    import ssl as _ssl
    user, _ = USERS[mechanism]
    context = None
    if protocol == "SASL_SSL":
        context = _ssl.create_default_context(cafile=str(certs.ca))
    with pytest.raises(SaslLoginError, match="SASL login .* failed: Authentication failed"):
        _login(secure_broker.endpoints[protocol], protocol, mechanism, user, "wrong", context)
    _login(secure_broker.endpoints[protocol], protocol, mechanism, *USERS[mechanism],
           ssl_context=context)


def test_kafka_python_wrong_password_gets_no_data(secure_broker, certs):
    from kafka import KafkaConsumer
    from kafka.errors import KafkaError
    settings = _kafka_python_settings(certs, "SASL_SSL", "SCRAM-SHA-256", "dave", "wrong")
    with pytest.raises(KafkaError):
        consumer = KafkaConsumer("kp-sasl_ssl-scram-sha-256",
                                 bootstrap_servers=secure_broker.endpoints["SASL_SSL"],
                                 auto_offset_reset="earliest", consumer_timeout_ms=5000,
                                 bootstrap_timeout_ms=5000, **settings)
        got = [r.value for r in consumer]
        consumer.close()
        assert got == []
        raise KafkaError("no data")     # (kafka-python may give up quietly; nothing was read)


def test_confluent_wrong_password_reports_authentication_failure(secure_broker, certs):
    confluent = pytest.importorskip("confluent_kafka")
    errors = []
    settings = _confluent_settings(secure_broker, certs, "SASL_SSL", "SCRAM-SHA-512", "erin", "wrong")
    consumer = confluent.Consumer({**settings, "group.id": "wrong-password",
                                   "auto.offset.reset": "earliest",
                                   "error_cb": lambda err: errors.append(err)})
    consumer.subscribe(["ck-sasl_ssl-scram-sha-512"])
    got = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not any(
            e.code() == confluent.KafkaError._AUTHENTICATION for e in errors):
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            got.append(msg.value())
    consumer.close()
    assert got == []
    assert any(e.code() == confluent.KafkaError._AUTHENTICATION for e in errors), errors


@pytest.mark.java
def test_java_wrong_password_fails_with_sasl_authentication_failed(secure_broker, certs, tmp_path):
    _need_java()
    config = _java_config(tmp_path / "bad.properties", certs, "SASL_SSL", "PLAIN", "carol", "nope")
    consumed = _java_tool("kafka-console-consumer.sh", "--bootstrap-server",
                          secure_broker.endpoints["SASL_SSL"], "--topic", "java-sasl_ssl-plain",
                          "--from-beginning", "--max-messages", "1", "--timeout-ms", "20000",
                          "--consumer.config", str(config))
    assert consumed.stdout.strip() == ""
    assert "SaslAuthenticationException" in consumed.stderr or \
        "Authentication failed" in consumed.stderr, consumed.stderr[-3000:]
