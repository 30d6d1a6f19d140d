"""BrokerConfig: Kafka 3.9 defaults, validation messages, precedence, topic configs."""
from __future__ import annotations

from pathlib import Path

import pytest

from kafkapy.config import BROKER_CONFIGS, TOPIC_CONFIGS, BrokerConfig, ConfigError, Endpoint, load_properties
from kafkapy.config.broker import validate_topic_configs


def cfg(**props: str) -> BrokerConfig:
    return BrokerConfig.from_properties({k.replace("_", "."): v for k, v in props.items()})


def make(props: dict[str, str], **kw) -> BrokerConfig:
    return BrokerConfig.from_properties(props, **kw)


KAFKA_DEFAULTS = {
    "message.max.bytes": 1048588, "log.segment.bytes": 1073741824, "log.retention.hours": 168,
    "log.index.interval.bytes": 4096, "log.index.size.max.bytes": 10485760,
    "socket.request.max.bytes": 104857600, "connections.max.idle.ms": 600000,
    "offsets.topic.num.partitions": 50, "offsets.topic.replication.factor": 3,
    "transaction.state.log.num.partitions": 50, "transaction.state.log.replication.factor": 3,
    "transaction.state.log.min.isr": 2, "transaction.state.log.segment.bytes": 104857600,
    "group.initial.rebalance.delay.ms": 3000, "listeners": "PLAINTEXT://:9092", "num.partitions": 1,
    "default.replication.factor": 1, "auto.create.topics.enable": True, "delete.topic.enable": True,
    "unclean.leader.election.enable": False, "min.insync.replicas": 1, "replica.lag.time.max.ms": 30000,
    "replica.fetch.wait.max.ms": 500, "log.retention.check.interval.ms": 300000, "log.retention.bytes": -1,
    "log.segment.delete.delay.ms": 60000, "log.cleanup.policy": ["delete"], "log.cleaner.enable": True,
    "log.cleaner.min.cleanable.ratio": 0.5, "log.cleaner.delete.retention.ms": 86400000,
    "log.message.timestamp.type": "CreateTime", "compression.type": "producer", "log.dir": "/tmp/kafka-logs",
    "group.min.session.timeout.ms": 6000, "group.max.session.timeout.ms": 1800000,
    "offsets.retention.minutes": 10080, "transaction.max.timeout.ms": 900000,
    "transactional.id.expiration.ms": 604800000, "producer.id.expiration.ms": 86400000,
    "fetch.purgatory.purge.interval.requests": 1000, "producer.purgatory.purge.interval.requests": 1000,
    "leader.imbalance.check.interval.seconds": 300, "leader.imbalance.per.broker.percentage": 10,
    "zookeeper.session.timeout.ms": 18000, "reserved.broker.max.id": 1000, "num.network.threads": 3,
    "num.io.threads": 8, "queued.max.requests": 500, "socket.send.buffer.bytes": 102400,
    "log.flush.interval.messages": 2 ** 63 - 1, "offset.metadata.max.bytes": 4096,
    "kafkapy.metrics.port": -1, "kafkapy.log.format": "console",
    "kafkapy.max.inflight.requests.per.connection": 100, "kafkapy.fetch.sendfile.enable": True,
}


@pytest.mark.parametrize("key,expected", sorted(KAFKA_DEFAULTS.items()))
def test_defaults_equal_kafka(key, expected):
    assert make({})[key] == expected


def test_every_default_passes_its_own_validator():
    for registry in (BROKER_CONFIGS, TOPIC_CONFIGS):
        for key in registry:
            if key.default is not None and key.validator is not None:
                key.validator(key.name, key.default)


def test_derived_defaults():
    c = make({})
    assert c.node_id == -1 and c.log_retention_ms == 604800000 and c.log_roll_ms == 604800000
    assert c.log_roll_jitter_ms == 0 and c.log_flush_interval_ms == 2 ** 63 - 1
    assert c.listeners == [Endpoint("PLAINTEXT", "", 9092)] == c.advertised_listeners
    assert c.inter_broker_listener_name == "PLAINTEXT" and c.metadata_store == "embedded"
    assert c.zookeeper_connection_timeout_ms == 18000


@pytest.mark.parametrize("key,value,reason", [
    ("log.segment.bytes", "abc", "Not a number of type INT"),
    ("log.segment.bytes", "2147483648", "Not a number of type INT"),
    ("log.segment.bytes", "13", "Value must be at least 14"),
    ("log.retention.bytes", "1_000", "Not a number of type LONG"),
    ("offsets.topic.replication.factor", "40000", "Not a number of type SHORT"),
    ("auto.create.topics.enable", "yes", "Expected value to be either true or false"),
    ("log.cleaner.min.cleanable.ratio", "1.5", "Value must be no more than 1"),
    ("log.cleaner.min.cleanable.ratio", "nan", "Not a number of type DOUBLE"),
    ("log.message.timestamp.type", "createtime", "String must be one of: CreateTime, LogAppendTime"),
    ("log.cleanup.policy", "delete,purge", "String must be one of: compact, delete"),
    ("compression.type", "brotli", "String must be one of"),
])
def test_bad_value_names_key_and_value(key, value, reason):
    with pytest.raises(ConfigError) as e:
        make({key: value})
    assert e.value.key == key
    assert str(e.value).startswith("Invalid value ")
    assert key in str(e.value) and reason in str(e.value)


def test_message_format_exact():
    with pytest.raises(ConfigError, match=r"^Invalid value abc for configuration log\.segment\.bytes: "
                                          r"Not a number of type INT$"):
        make({"log.segment.bytes": "abc"})


def test_values_are_trimmed_and_java_parsed():
    c = make({"log.segment.bytes": "  +2000000\t", "auto.create.topics.enable": " TRUE ",
              "log.cleaner.min.cleanable.ratio": "5e-1", "log.cleaner.io.buffer.load.factor": "0.75d",
              "log.cleanup.policy": " compact , delete "})
    assert c["log.segment.bytes"] == 2000000 and c["auto.create.topics.enable"] is True
    assert c["log.cleaner.min.cleanable.ratio"] == 0.5 and c["log.cleaner.io.buffer.load.factor"] == 0.75
    assert c["log.cleanup.policy"] == ["compact", "delete"]


def test_overrides_win_and_sources():
    c = make({"num.partitions": "3", "log.segment.bytes": "2000000"}, overrides={"num.partitions": "7"})
    assert c["num.partitions"] == 7 and c.originals["num.partitions"] == "7"
    assert c.source("num.partitions") == "STATIC_BROKER_CONFIG"
    assert c.source("num.io.threads") == "DEFAULT_CONFIG"


def test_unknown_keys_warned_and_kept():
    events = []

    class Log:
        def warning(self, event, **kw):
            events.append((event, kw))

    c = make({"no.such.key": "1", "listener.name.plaintext.x": "y"}, log=Log())
    assert c.unknown_keys == ["no.such.key", "listener.name.plaintext.x"]
    assert [kw["key"] for _, kw in events] == ["no.such.key"]
    assert c.originals["no.such.key"] == "1"


@pytest.mark.parametrize("props,expected", [
    ({}, 168 * 3600000),
    ({"log.retention.hours": "1"}, 3600000),
    ({"log.retention.hours": "1", "log.retention.minutes": "5"}, 300000),
    ({"log.retention.hours": "1", "log.retention.minutes": "5", "log.retention.ms": "42"}, 42),
    ({"log.retention.ms": "-5"}, -1),
    ({"log.retention.hours": "-1"}, -1),
])
def test_retention_precedence(props, expected):
    c = make(props)
    assert c.log_retention_ms == expected == c.topic_defaults()["retention.ms"]


def test_roll_jitter_flush_precedence():
    c = make({"log.roll.hours": "2", "log.roll.jitter.hours": "1", "log.flush.scheduler.interval.ms": "77"})
    assert (c.log_roll_ms, c.log_roll_jitter_ms, c.log_flush_interval_ms) == (7200000, 3600000, 77)
    c = make({"log.roll.hours": "2", "log.roll.ms": "5", "log.roll.jitter.ms": "3", "log.flush.interval.ms": "9"})
    assert (c.log_roll_ms, c.log_roll_jitter_ms, c.log_flush_interval_ms) == (5, 3, 9)
    d = c.topic_defaults()
    assert (d["segment.ms"], d["segment.jitter.ms"], d["flush.ms"]) == (5, 3, 9)


def test_node_id_and_broker_id():
    assert make({"broker.id": "4"}).node_id == 4
    assert make({"node.id": "5"}).node_id == 5
    assert make({"broker.id": "-1"}).node_id == -1    # drawn at start-up
    with pytest.raises(ConfigError, match="node.id"):
        make({"broker.id": "1", "node.id": "2"})
    with pytest.raises(ConfigError, match="reserved.broker.max.id"):
        make({"broker.id": "1001"})


def test_log_dirs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert make({"log.dir": "a"}).log_dirs == [str(tmp_path / "a")]
    assert make({"log.dir": "a", "log.dirs": "/x, y ,"}).log_dirs == ["/x", str(tmp_path / "y")]
    with pytest.raises(ConfigError, match="At least one log directory"):
        make({"log.dirs": " , "})


def test_listeners():
    c = make({"listeners": "PLAINTEXT://0.0.0.0:9092,internal://[::1]:9093",
              "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
              "advertised.listeners": "PLAINTEXT://h1:9092,INTERNAL://h2:9093",
              "inter.broker.listener.name": "internal"})
    assert c.listeners == [Endpoint("PLAINTEXT", "0.0.0.0", 9092), Endpoint("INTERNAL", "::1", 9093)]
    assert c.advertised_listeners[1] == Endpoint("INTERNAL", "h2", 9093)
    assert c.inter_broker_listener_name == "INTERNAL"


@pytest.mark.parametrize("props,match", [
    ({"listeners": "PLAINTEXT:/x:1"}, "Unable to parse"),
    ({"listeners": "FOO://:9092"}, "No security protocol defined for listener FOO"),
    ({"listeners": "PLAINTEXT://:9092,PLAINTEXT://:9093"}, "different name"),
    ({"listeners": "PLAINTEXT://:9092,SSL://:9092"}, "different port"),
    ({"listeners": "PLAINTEXT://0.0.0.0:9092"}, "0.0.0.0"),
    ({"advertised.listeners": "SSL://h:9093"}, "subset"),
    ({"inter.broker.listener.name": "PLAINTEXT", "security.inter.broker.protocol": "PLAINTEXT"}, "Only one of"),
    ({"inter.broker.listener.name": "SSL"}, "inter.broker.listener.name must be"),
    ({"kafkapy.metadata.store": "zookeeper"}, "zookeeper.connect"),
    ({"replica.fetch.wait.max.ms": "40000"}, "replica.socket.timeout.ms"),
    ({"offsets.commit.required.acks": "4"}, "offsets.commit.required.acks"),
    ({"log.cleaner.min.compaction.lag.ms": "10", "log.cleaner.max.compaction.lag.ms": "5"}, "conflict"),
    ({"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"},
     "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer: kafkapy implements only"),
])
def test_cross_key_errors(props, match):
    with pytest.raises(ConfigError, match=match):
        make(props)


def test_metadata_store_follows_zookeeper_connect():
    assert make({"zookeeper.connect": "localhost:2181/kafka"}).metadata_store == "zookeeper"
    assert make({"zookeeper.connect": "h:1", "kafkapy.metadata.store": "embedded"}).metadata_store == "embedded"


def test_kraft_settings_refused():
    for key, value in [("process.roles", "broker,controller"), ("controller.quorum.voters", "1@h:9093"),
                       ("controller.listener.names", "CONTROLLER")]:
        with pytest.raises(ConfigError, match="KRaft mode is not supported by kafkapy") as err:
            make({key: value})
        assert err.value.key == key
    assert make({"process.roles": ""})["process.roles"] == []
    assert make({"node.id": "3"}).node_id == 3   # ZooKeeper mode takes node.id as broker.id
    with pytest.raises(ConfigError, match="process.roles"):
        make({"process.roles": "worker"})


def test_topic_defaults_through_synonyms():
    c = make({"log.segment.bytes": "2000000", "log.cleanup.policy": "compact", "message.max.bytes": "500",
              "log.message.timestamp.type": "LogAppendTime", "log.cleaner.min.cleanable.ratio": "0.25",
              "log.segment.delete.delay.ms": "10", "log.index.size.max.bytes": "4096",
              "log.message.format.version": "2.8"})
    d = c.topic_defaults()
    assert set(d) == set(TOPIC_CONFIGS.names())
    assert d["segment.bytes"] == 2000000 and d["cleanup.policy"] == ["compact"] and d["max.message.bytes"] == 500
    assert d["message.timestamp.type"] == "LogAppendTime" and d["min.cleanable.dirty.ratio"] == 0.25
    assert d["file.delete.delay.ms"] == 10 and d["segment.index.bytes"] == 4096
    assert d["message.format.version"] == "3.0-IV1"  # ignored, as Kafka 3.x does
    assert d["remote.storage.enable"] is False and d["leader.replication.throttled.replicas"] == []


def test_topic_defaults_equal_kafka_on_default_broker():
    d = make({}).topic_defaults()
    assert d["retention.ms"] == 604800000 and d["segment.ms"] == 604800000 and d["segment.bytes"] == 1073741824
    assert d["max.message.bytes"] == 1048588 and d["flush.ms"] == 2 ** 63 - 1 and d["compression.type"] == "producer"
    assert d["local.retention.ms"] == -2 and d["min.insync.replicas"] == 1 and d["delete.retention.ms"] == 86400000


def test_validate_topic_configs_ok():
    c = make({})
    out = c.validate_topic_configs({"cleanup.policy": "compact,delete", "retention.ms": "-1",
                                    "min.cleanable.dirty.ratio": "0.1", "message.format.version": "0.10.2",
                                    "leader.replication.throttled.replicas": "0:1,1:2"})
    assert out == {"cleanup.policy": ["compact", "delete"], "retention.ms": -1, "min.cleanable.dirty.ratio": 0.1,
                   "message.format.version": "0.10.2", "leader.replication.throttled.replicas": ["0:1", "1:2"]}


@pytest.mark.parametrize("configs,key,match", [
    ({"retention.hours": "1"}, "retention.hours", "Unknown topic config name: retention.hours"),
    ({"segment.bytes": "x"}, "segment.bytes", "Invalid value x for configuration segment.bytes"),
    ({"retention.ms": "-2"}, "retention.ms", "Value must be at least -1"),
    ({"segment.ms": None}, "segment.ms", "Null value"),
    ({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}, "min.compaction.lag.ms", "conflict"),
    ({"remote.storage.enable": "true"}, "remote.storage.enable", "Tiered Storage"),
    ({"follower.replication.throttled.replicas": "x"}, "follower.replication.throttled.replicas", "literal"),
])
def test_validate_topic_configs_errors(configs, key, match):
    with pytest.raises(ConfigError, match=match) as e:
        validate_topic_configs(configs)
    assert e.value.key == key


def test_sample_server_properties_loads():
    c = BrokerConfig.from_properties(load_properties(Path(__file__).parents[3] / "config" / "server.properties"))
    assert c.node_id == 0 and c.unknown_keys == []
    assert c.listeners == c.advertised_listeners == [Endpoint("PLAINTEXT", "127.0.0.1", 9092)]
    assert c["offsets.topic.replication.factor"] == 1 and c["transaction.state.log.min.isr"] == 1
    assert c["group.initial.rebalance.delay.ms"] == 0 and c.metadata_store == "embedded"
    assert c.log_dirs[0].endswith("data/kafka-logs")
