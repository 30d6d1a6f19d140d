"""Dynamic broker configs on one real broker, with either metadata store: set, described,
applied, deleted and kept across a restart, through kafkapy-configs and Kafka 3.9's own
kafka-configs.sh (which must print the same lines).

A per-broker value and a cluster default are stored in /config/brokers/0 and <default>;
DescribeConfigs shows them with Kafka's sources and synonyms; a lowered cluster-default
message.max.bytes reaches an existing topic's log at once (a larger record is refused with
MESSAGE_TOO_LARGE) and deleting it lifts the limit again.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from kafka import KafkaProducer
from kafka.errors import MessageSizeTooLargeError

from tests.support.cluster import tool_env
from tests.support.broker_process import BrokerProcess
from tests.support.zookeeper_server import zk_connect, zookeeper_server  # noqa: F401  (fixtures)

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
KAFKA_HOME = Path(os.environ.get("KAFKA_HOME", ROOT.parent / "shared" / "kafka_2.13-3.9.0"))


@pytest.fixture(params=["zookeeper", "embedded"])
def broker(request, tmp_path):
    overrides = {"offsets.topic.replication.factor": "1"}
    if request.param == "zookeeper":
        overrides["zookeeper.connect"] = request.getfixturevalue("zk_connect")
    else:
        overrides["kafkapy.metadata.store"] = "embedded"
    process = BrokerProcess(tmp_path / "logs", overrides=overrides)
    yield process.start()
    process.kill()


def configs(broker, *args: str) -> subprocess.CompletedProcess:
    exe = BIN / "kafkapy-configs"
    assert exe.is_file(), f"{exe} is missing: install the console scripts (pip install -e .)"
    return subprocess.run([str(exe), "--bootstrap-server", broker.bootstrap, *args],
                          capture_output=True, text=True, timeout=120)


def kafka_configs(broker, *args: str) -> subprocess.CompletedProcess:
    script = KAFKA_HOME / "bin" / "kafka-configs.sh"
    if not script.is_file() or shutil.which("java") is None:
        pytest.skip(f"no Kafka 3.9 scripts at {script.parent} or no java")
    env = tool_env(broker.log_dir.parent / "kafka-tool-logs")
    return subprocess.run([str(script), "--bootstrap-server", broker.bootstrap, *args],
                          capture_output=True, text=True, timeout=120, env=env,
                          stdin=subprocess.DEVNULL)


def ok(result: subprocess.CompletedProcess) -> list[str]:
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.splitlines()


BROKER_0 = ("--entity-type", "brokers", "--entity-name", "0")
DEFAULT = ("--entity-type", "brokers", "--entity-default")


def test_set_describe_delete(broker):
    assert ok(configs(broker, *BROKER_0, "--alter", "--add-config",
                      "log.cleaner.backoff.ms=20000,leader.replication.throttled.rate=1000")) == [
        "Completed updating config for broker 0."]
    assert ok(configs(broker, *DEFAULT, "--alter", "--add-config",
                      "log.cleaner.backoff.ms=19000,log.retention.ms=3600000")) == [
        "Completed updating default config for brokers in the cluster."]
    assert ok(configs(broker, *BROKER_0, "--describe")) == [
        "Dynamic configs for broker 0 are:",
        "  leader.replication.throttled.rate=1000 sensitive=false "
        "synonyms={DYNAMIC_BROKER_CONFIG:leader.replication.throttled.rate=1000}",
        "  log.cleaner.backoff.ms=20000 sensitive=false "
        "synonyms={DYNAMIC_BROKER_CONFIG:log.cleaner.backoff.ms=20000, "
        "DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.backoff.ms=19000, "
        "DEFAULT_CONFIG:log.cleaner.backoff.ms=15000}"]
    assert ok(configs(broker, *DEFAULT, "--describe")) == [
        "Default configs for brokers in the cluster are:",
        "  log.cleaner.backoff.ms=19000 sensitive=false "
        "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.backoff.ms=19000}",
        "  log.retention.ms=3600000 sensitive=false "
        "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=3600000}"]
    # A topic without an override takes the new broker default (Kafka's synonym order).
    topic = f"dyn-{uuid.uuid4().hex[:8]}"
    ok(subprocess.run([str(BIN / "kafkapy-topics"), "--bootstrap-server", broker.bootstrap,
                       "--create", "--topic", topic], capture_output=True, text=True, timeout=60))
    retention = [line for line in ok(configs(broker, "--entity-type", "topics", "--entity-name",
                                             topic, "--describe", "--all"))
                 if line.startswith("  retention.ms=")]
    assert retention == [
        "  retention.ms=3600000 sensitive=false synonyms={"
        "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=3600000, "
        "STATIC_BROKER_CONFIG:log.retention.hours=168, DEFAULT_CONFIG:log.retention.hours=168}"]

    ok(configs(broker, *BROKER_0, "--alter", "--delete-config",
               "log.cleaner.backoff.ms,leader.replication.throttled.rate"))
    ok(configs(broker, *DEFAULT, "--alter", "--delete-config", "log.retention.ms"))
    assert ok(configs(broker, *BROKER_0, "--describe")) == ["Dynamic configs for broker 0 are:"]
    all_lines = ok(configs(broker, *BROKER_0, "--describe", "--all"))
    assert ("  log.cleaner.backoff.ms=19000 sensitive=false synonyms={"
            "DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.backoff.ms=19000, "
            "DEFAULT_CONFIG:log.cleaner.backoff.ms=15000}") in all_lines
    assert not [line for line in all_lines if "throttled.rate" in line]


def test_refusals(broker):
    result = configs(broker, *BROKER_0, "--alter", "--add-config", "broker.id=3")
    assert result.returncode == 1
    assert "Cannot update these configs dynamically: Set(broker.id)" in result.stderr
    result = configs(broker, *DEFAULT, "--alter", "--add-config", "ssl.client.auth=required")
    assert result.returncode == 1
    assert ("Cannot update these configs at default cluster level, broker id must be "
            "specified: Set(ssl.client.auth)") in result.stderr
    result = configs(broker, *BROKER_0, "--alter", "--add-config", "num.io.threads=100")
    assert result.returncode == 1
    assert ("Dynamic thread count update validation failed for num.io.threads=100, value should "
            "not be greater than double the current value 8") in result.stderr
    result = configs(broker, *BROKER_0, "--alter", "--add-config",
                     "listeners=PLAINTEXT://127.0.0.1:1")
    assert result.returncode == 1 and "kafkapy cannot apply" in result.stderr
    assert ok(configs(broker, *BROKER_0, "--describe")) == ["Dynamic configs for broker 0 are:"]


def _send(producer: KafkaProducer, topic: str, size: int) -> None:
    producer.send(topic, b"x" * size).get(timeout=30)


def test_default_message_max_bytes_reaches_existing_logs(broker):
    topic = f"dyn-size-{uuid.uuid4().hex[:8]}"
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, max_request_size=4_000_000,
                             retries=0, acks="all", linger_ms=0)
    try:
        _send(producer, topic, 5000)                       # auto-creates the topic
        ok(configs(broker, *DEFAULT, "--alter", "--add-config", "message.max.bytes=2000"))
        with pytest.raises(MessageSizeTooLargeError):
            _send(producer, topic, 5000)
        _send(producer, topic, 500)
        ok(configs(broker, *DEFAULT, "--alter", "--delete-config", "message.max.bytes"))
        _send(producer, topic, 5000)
    finally:
        producer.close(timeout=5)


def test_survive_restart(broker):
    ok(configs(broker, *BROKER_0, "--alter", "--add-config",
               "follower.replication.throttled.rate=4096"))
    ok(configs(broker, *DEFAULT, "--alter", "--add-config", "log.cleaner.backoff.ms=18000"))
    before = ok(configs(broker, *BROKER_0, "--describe", "--all"))
    broker.stop()
    broker.start()
    after = ok(configs(broker, *BROKER_0, "--describe", "--all"))
    assert after == before
    assert ("  follower.replication.throttled.rate=4096 sensitive=false synonyms={"
            "DYNAMIC_BROKER_CONFIG:follower.replication.throttled.rate=4096}") in after
    assert ok(configs(broker, *DEFAULT, "--describe")) == [
        "Default configs for brokers in the cluster are:",
        "  log.cleaner.backoff.ms=18000 sensitive=false "
        "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.backoff.ms=18000}"]


def test_kafka_configs_sh(broker):
    """Kafka's own tool changes and describes kafkapy's dynamic configs, and prints what
    kafkapy-configs prints."""
    assert ok(kafka_configs(broker, *BROKER_0, "--alter", "--add-config",
                            "leader.replication.throttled.rate=3000,log.cleaner.backoff.ms=21000")) == [
        "Completed updating config for broker 0."]
    assert ok(kafka_configs(broker, *DEFAULT, "--alter", "--add-config",
                            "log.cleaner.backoff.ms=17000")) == [
        "Completed updating default config for brokers in the cluster."]
    ok(kafka_configs(broker, *BROKER_0, "--alter", "--delete-config", "log.cleaner.backoff.ms"))
    for args in (BROKER_0, DEFAULT, ("--entity-type", "brokers")):
        theirs = ok(kafka_configs(broker, *args, "--describe"))
        ours = ok(configs(broker, *args, "--describe"))
        assert sorted(theirs) == sorted(ours), args
    assert ("  leader.replication.throttled.rate=3000 sensitive=false "
            "synonyms={DYNAMIC_BROKER_CONFIG:leader.replication.throttled.rate=3000}") in ours
    refused = kafka_configs(broker, *BROKER_0, "--alter", "--add-config", "broker.id=3")
    assert refused.returncode != 0
    assert ("InvalidRequestException: Cannot update these configs dynamically: Set(broker.id)"
            in refused.stdout + refused.stderr)
