"""Broker keys against Kafka 3.9: the same names, types, defaults and internal flags as
Kafka's own ConfigDef (read from the real jars by a small Java program), node.id/broker.id
synonyms, kafkapy's own keys kept out of DescribeConfigs, the BROKER_LOGGER view, and the
broker AlterConfigs checks."""
from __future__ import annotations

import logging
import shutil
import subprocess
import textwrap

import pytest

from kafkapy.config import BROKER_CONFIGS, BrokerConfig, ConfigError, ConfigSource, describe_broker
from kafkapy.config.loggers import describe_loggers, log4j_level_name, validate_logger_ops
from kafkapy.config.types import render_value
from kafkapy.config.dynamic import DynamicBrokerConfig
from kafkapy.handlers.alter_configs import apply_broker_configs
from kafkapy.protocol.errors import ErrorCode, KafkaError
from tests.conformance.brokers import find_kafka_home
from tests.support.kafka_jvm import CLIENT_JVM_FLAGS, JAVAC

STATIC = ConfigSource.STATIC_BROKER_CONFIG
_DUMP_JAVA = textwrap.dedent("""
    import org.apache.kafka.common.config.ConfigDef;
    public class DumpKeys {
      public static void main(String[] a) throws Exception {
        ConfigDef def = (ConfigDef) Class.forName("kafka.server.KafkaConfig")
            .getMethod("configDef").invoke(null);
        for (ConfigDef.ConfigKey k : def.configKeys().values()) {
          String d = !k.hasDefault() ? "<required>" : k.defaultValue == null ? "<null>"
              : ConfigDef.convertToString(k.defaultValue, k.type);
          System.out.println(k.name + "\\t" + k.type + "\\t" + d + "\\t" + k.internalConfig);
        }
      }
    }""")


def kafka_keys(tmp_path) -> dict[str, tuple[str, str, bool]]:
    """name -> (type, default string, internal) from Kafka 3.9's KafkaConfig.configDef."""
    home = find_kafka_home()
    if home is None or shutil.which("javac") is None:
        pytest.skip("needs Kafka 3.9 (../shared) and a JDK")
    (tmp_path / "DumpKeys.java").write_text(_DUMP_JAVA)
    cp = f"{home / 'libs'}/*"
    subprocess.run([*JAVAC, "-cp", cp, "DumpKeys.java"], cwd=tmp_path, check=True)
    out = subprocess.run(["java", *CLIENT_JVM_FLAGS, "-cp", f"{cp}:.", "DumpKeys"],
                         cwd=tmp_path, check=True, capture_output=True, text=True).stdout
    rows = [line.split("\t") for line in out.splitlines() if line.count("\t") == 3]
    return {name: (ctype, default, internal == "true") for name, ctype, default, internal in rows}


# The consumer group protocol (KIP-848) is served as Kafka 4.0 serves it, with Kafka 4.0's
# defaults (its GroupCoordinatorConfig): name -> (default, internal) where they differ from 3.9.
KAFKA_40_KEYS = {
    "group.coordinator.rebalance.protocols": ("classic,consumer,share", False),
    "group.consumer.assignors": ("uniform,range", False),
    "group.consumer.migration.policy": ("bidirectional", False),
}


# Keys Kafka 3.9 does not have, served as Kafka 4.2 defines them (share groups, KIP-932, and
# KIP-1191's dead-letter prefix): name -> (type, default, internal).
KAFKA_42_KEYS = {
    "group.share.max.share.sessions": ("INT", "2000", False),
    "group.share.max.size": ("INT", "200", False),
    "group.share.assignors": ("LIST", "simple", False),
    "group.share.initialize.retry.interval.ms": ("INT", "30000", True),
    "share.fetch.purgatory.purge.interval.requests": ("INT", "1000", False),
    "errors.deadletterqueue.topic.name.prefix": ("STRING", "dlq.", False),
    # ShareGroupConfig: Kafka 4.2 raised the in-flight record limit from 3.9's 200
    "group.share.partition.max.record.locks": ("INT", "2000", False),
    # ShareCoordinatorConfig
    "share.coordinator.state.topic.num.partitions": ("INT", "50", False),
    "share.coordinator.state.topic.replication.factor": ("SHORT", "3", False),
    "share.coordinator.state.topic.min.isr": ("SHORT", "2", False),
    "share.coordinator.state.topic.segment.bytes": ("INT", "104857600", False),
    "share.coordinator.state.topic.compression.codec": ("INT", "0", False),
    "share.coordinator.threads": ("INT", "1", False),
    "share.coordinator.snapshot.update.records.per.snapshot": ("INT", "500", False),
    "share.coordinator.load.buffer.size": ("INT", "5242880", False),
    "share.coordinator.append.linger.ms": ("INT", "-1", False),
    "share.coordinator.write.timeout.ms": ("INT", "5000", False),
    "share.coordinator.cached.buffer.max.bytes": ("INT", "1048588", False),
    "share.coordinator.state.topic.prune.interval.ms": ("INT", "300000", True),
    "share.coordinator.cold.partition.snapshot.interval.ms": ("INT", "300000", True),
}


def test_every_kafka_broker_key_is_defined_like_kafka(tmp_path):
    kafka = {**kafka_keys(tmp_path), **KAFKA_42_KEYS}
    assert len(kafka) > 300
    ours = {k.name: k for k in BROKER_CONFIGS if not k.name.startswith("kafkapy.") and k.name != "cluster.id"}
    assert sorted(set(kafka) - set(ours)) == [] and sorted(set(ours) - set(kafka)) == []
    for name, (ctype, default, internal) in kafka.items():
        key = ours[name]
        default, internal = KAFKA_40_KEYS.get(name, (default, internal))
        assert key.type.name == ctype, name
        assert key.internal == internal, name
        mine = "<null>" if key.default is None else render_value(key.type, key.default)
        assert mine == default, name


def test_kafkapy_own_keys_are_described_only_when_set():
    names = {e.name for e in describe_broker(BrokerConfig.from_properties({}))}
    assert not {n for n in names if n.startswith("kafkapy.")} and "cluster.id" not in names
    assert "connection.failed.authentication.delay.ms" in names
    assert "failed.authentication.delay.ms" not in names
    cfg = BrokerConfig.from_properties({"kafkapy.log.level": "debug"})
    [entry] = describe_broker(cfg, ["kafkapy.log.level"])
    assert entry.value == "debug" and entry.source == STATIC and entry.read_only


def test_node_id_and_broker_id_stand_in_for_each_other():
    cfg = BrokerConfig.from_properties({"broker.id": "1"})
    entries = {e.name: e for e in describe_broker(cfg, ["broker.id", "node.id"], True)}
    assert entries["node.id"].value == "1" and entries["node.id"].source == STATIC
    assert entries["node.id"].synonyms == [("node.id", "1", STATIC), ("node.id", "-1", ConfigSource.DEFAULT_CONFIG)]
    assert BrokerConfig.from_properties({"node.id": "3"}).node_id == 3
    assert BrokerConfig.from_properties({"node.id": "3"})["broker.id"] == 3


def test_kafka_only_keys_are_accepted_validated_and_sensitive_when_secret():
    cfg = BrokerConfig.from_properties({"sasl.jaas.config": "x required;", "group.share.max.groups": "20"})
    [jaas] = describe_broker(cfg, ["sasl.jaas.config"])
    assert jaas.is_sensitive and jaas.value is None and not jaas.read_only
    with pytest.raises(ConfigError, match="Invalid value 101 for configuration group.share.max.groups: "
                                          "Value must be no more than 100"):
        BrokerConfig.from_properties({"group.share.max.groups": "101"})


def test_zero_connections_per_ip_needs_overrides_like_kafka():
    with pytest.raises(ConfigError, match="max.connections.per.ip can be set to zero only if "
                                          "max.connections.per.ip.overrides property is set."):
        BrokerConfig.from_properties({"max.connections.per.ip": "0"})
    cfg = BrokerConfig.from_properties({"max.connections.per.ip": "0",
                                        "max.connections.per.ip.overrides": "127.0.0.1:5"})
    assert cfg["max.connections.per.ip"] == 0


def test_broker_logger_view():
    logging.getLogger("kafkapy.test.loggers").setLevel(logging.WARNING)
    entries = describe_loggers(["kafkapy.test.loggers", "root", "kafka.server.KafkaApis"])
    assert [e.name for e in entries] == ["root", "kafkapy.test.loggers"]
    mine = entries[1]
    assert (mine.value, mine.source, mine.read_only, mine.is_sensitive, mine.documentation) == \
        ("WARN", ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG, False, False, "")
    assert [log4j_level_name(n) for n in (5, 10, 20, 30, 40, 50, 60)] == \
        ["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF"]


class _Broker:
    node_id = 1

    def __init__(self) -> None:
        self.config = BrokerConfig.from_properties({"broker.id": "1"})
        self.dynamic_config = DynamicBrokerConfig(self.config, None, self.node_id)


def _refusal(configs, validate_only):
    try:
        apply_broker_configs(_Broker(), "1", configs, validate_only)
    except KafkaError as err:
        return err.code, err.message
    return None


def test_broker_alter_checks_like_kafka():
    assert _refusal({"log.cleaner.threads": "2"}, True) is None
    assert _refusal({"no.such.key": "1"}, True) is None
    assert _refusal({"broker.id": "5"}, True) == (
        ErrorCode.INVALID_REQUEST, "Cannot update these configs dynamically: Set(broker.id)")
    assert _refusal({"log.cleaner.threads": "x"}, True) == (
        ErrorCode.INVALID_REQUEST,
        "Invalid value x for configuration log.cleaner.threads: Not a number of type INT")
    # Applying a valid change (no validate_only) is tests/unit/config/test_dynamic.py's.


def _logger_refusal(ops):
    try:
        validate_logger_ops(ops)
    except KafkaError as err:
        return err.code, err.message
    return None


def test_logger_changes_checked_like_kafka():
    assert _logger_refusal([("root", 0, "DEBUG"), ("root", 0, "TRACE")]) is None
    assert _logger_refusal([("no.such.logger", 0, "DEBUG")]) == (
        ErrorCode.INVALID_CONFIG, "Logger no.such.logger does not exist!")
    assert _logger_refusal([("root", 0, "debug")]) == (
        ErrorCode.INVALID_CONFIG, "Cannot set the log level of root to debug as it is not a supported "
                                  "log level. Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN")
    assert _logger_refusal([("root", 1, None)]) == (
        ErrorCode.INVALID_REQUEST, "Removing the log level of the root logger is not allowed")
    assert _logger_refusal([("root", 3, "x")]) == (
        ErrorCode.INVALID_REQUEST, "SUBTRACT operation is not allowed for the BROKER_LOGGER resource")
    assert _logger_refusal([("root", 7, "x")])[0] == ErrorCode.INVALID_REQUEST
