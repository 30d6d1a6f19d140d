"""KAFKA_* environment variables -> server.properties (kafkapy.config.from_env).

The names follow Apache Kafka's image (and Confluent's cp-kafka): ``_`` -> ``.``,
``__`` -> ``_``, ``___`` -> ``-``, lower-cased, launcher variables excluded.
"""
from __future__ import annotations

import os

import pytest

from kafkapy.config import from_env
from kafkapy.config.broker import BrokerConfig
from kafkapy.config.properties import load_properties, parse_properties


@pytest.mark.parametrize("env, prop", [
    ("KAFKA_BROKER_ID", "broker.id"),
    ("KAFKA_ZOOKEEPER_CONNECT", "zookeeper.connect"),
    ("KAFKA_LISTENERS", "listeners"),
    ("KAFKA_ADVERTISED_LISTENERS", "advertised.listeners"),
    ("KAFKA_LOG_DIRS", "log.dirs"),
    ("KAFKA_LISTENER_SECURITY_PROTOCOL_MAP", "listener.security.protocol.map"),
    ("KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR", "offsets.topic.replication.factor"),
    # Kafka's own examples (docker/examples/README.md): abc_def and abc-def.
    ("KAFKA_ABC__DEF", "abc_def"),
    ("KAFKA_ABC___DEF", "abc-def"),
    ("KAFKA_ABC_DEF", "abc.def"),
    # Per-listener keys keep their underscore-free listener names; mixed forms work.
    ("KAFKA_LISTENER_NAME_INTERNAL_SSL_KEYSTORE_LOCATION", "listener.name.internal.ssl.keystore.location"),
    ("KAFKA_LISTENER_NAME_SASL___PLAIN_X__Y", "listener.name.sasl-plain.x_y"),
    ("KAFKA_KAFKAPY_METRICS_PORT", "kafkapy.metrics.port"),
    ("LOG_DIRS", "log.dirs"),  # prefix optional
])
def test_env_key_to_property(env, prop):
    assert from_env.env_key_to_property(env) == prop


def test_only_kafka_variables_and_no_launcher_ones():
    env = {
        "KAFKA_BROKER_ID": "3",
        "KAFKA_HEAP_OPTS": "-Xmx1g",          # JVM options: never properties
        "KAFKA_OPTS": "-Dx=y",
        "KAFKA_LOG4J_OPTS": "x",
        "KAFKA_JMX_PORT": "9999",
        "KAFKA_VERSION": "3.9.0",
        "KAFKA_": "nothing after the prefix",
        "KAFKAPY_PROPERTIES": "/etc/kafkapy/server.properties",
        "PATH": "/usr/bin",
        "ZOOKEEPER_CLIENT_PORT": "2181",
    }
    assert from_env.properties_from_env(env) == {"broker.id": "3"}


def test_env_overrides_base_and_empty_value_unsets():
    base = {"broker.id": "0", "listeners": "PLAINTEXT://127.0.0.1:9092", "num.partitions": "1"}
    env = {"KAFKA_BROKER_ID": "2", "KAFKA_NUM_PARTITIONS": "", "KAFKA_LOG_DIRS": "/data"}
    assert from_env.merge(base, env) == {
        "broker.id": "2", "listeners": "PLAINTEXT://127.0.0.1:9092", "log.dirs": "/data"}


@pytest.mark.parametrize("value", [
    "PLAINTEXT://127.0.0.1:9092,SSL://[::1]:9093",
    "a=b:c",
    "  leading blanks kept",
    "C:\\path\\with\\backslashes",
    "multi\nline\ttab",
    "#not a comment",
    "non-ASCII: caf\u00e9 \u20ac",
    "trailing blank ",
    "",
])
def test_render_reads_back_exactly(value):
    props = {"some.key": value, "weird key=with:separators": "v", "!bang": "x"}
    assert parse_properties(from_env.render(props)) == props


def test_render_is_sorted_and_latin1_safe():
    text = from_env.render({"b": "\u20ac", "a": "1"})
    lines = [ln for ln in text.splitlines() if not ln.startswith("#")]
    assert lines == ["a=1", "b=\\u20ac"]
    text.encode("ascii")  # the reader decodes ISO-8859-1, as Kafka does


def test_main_writes_a_file_the_broker_accepts(tmp_path, monkeypatch):
    base = tmp_path / "base.properties"
    base.write_text("broker.id=0\nlisteners=PLAINTEXT://127.0.0.1:9092\nlog.dirs=/var/lib/x\n")
    out = tmp_path / "server.properties"
    for k in [k for k in list(os.environ) if k.startswith("KAFKA_")]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("KAFKA_BROKER_ID", "7")
    monkeypatch.setenv("KAFKA_ZOOKEEPER_CONNECT", "127.0.0.1:2181/kafkapy")
    monkeypatch.setenv("KAFKA_LOG_DIRS", str(tmp_path / "data"))
    monkeypatch.setenv("KAFKA_DEFAULT_REPLICATION_FACTOR", "3")
    monkeypatch.setenv("KAFKA_MIN_INSYNC_REPLICAS", "2")
    monkeypatch.setenv("KAFKA_HEAP_OPTS", "-Xmx1g")
    assert from_env.main(["--base", str(base), "--output", str(out)]) == 0
    props = load_properties(out)
    assert props == {
        "broker.id": "7", "listeners": "PLAINTEXT://127.0.0.1:9092",
        "log.dirs": str(tmp_path / "data"), "zookeeper.connect": "127.0.0.1:2181/kafkapy",
        "default.replication.factor": "3", "min.insync.replicas": "2"}
    config = BrokerConfig.from_properties(props, {})
    assert config["broker.id"] == 7
    assert config["zookeeper.connect"] == "127.0.0.1:2181/kafkapy"
    assert config["min.insync.replicas"] == 2


def test_main_without_base(tmp_path, monkeypatch):
    out = tmp_path / "server.properties"
    monkeypatch.setattr(from_env.os, "environ", {"KAFKA_BROKER_ID": "1"})
    assert from_env.main(["--output", str(out)]) == 0
    assert load_properties(out) == {"broker.id": "1"}
