"""The request quota (``request_percentage``, set with Kafka 3.9's kafka-configs.sh) enforced
on kafkapy and on Kafka 3.9 alike (both brokers on one ZooKeeper, own chroots,
``quota.window.num=3`` of 1 s): a client sending cheap requests as fast as it can goes over
a tiny percentage, gets throttle_time_ms > 0 (at most one window), its connection is muted
for that long and its request rate falls; an unlimited client on the same broker keeps its
rate; a consumer fetch over it is answered with no partitions; kafkapy's /metrics has the
client's request-time and throttle-time."""
from __future__ import annotations

import shutil
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkapy.protocol.messages import REQUESTS
from tests.support.cluster import kafka_tool
from tests.support.sasl import KAFKA_HOME
from tests.support.side_by_side import quota_metrics, side_by_side
from tests.support.wire import WireClient
from tests.support.zookeeper_server import zookeeper_server  # noqa: F401 (fixture)

pytestmark = pytest.mark.skipif(
    not (KAFKA_HOME / "bin" / "kafka-server-start.sh").exists() or not shutil.which("java"),
    reason="Kafka 3.9 or java missing")

PERCENTAGE = "0.05"     # 0.5 ms of request handling per second
WINDOW_S = 1
RUN_S = 2.0
SETTINGS = {"quota.window.num": "3", "quota.window.size.seconds": str(WINDOW_S),
            "num.partitions": "1", "auto.create.topics.enable": "true"}
TOPIC = "request-quota"
Produce, Fetch = REQUESTS[0], REQUESTS[1]


@pytest.fixture(scope="module")
def sides(tmp_path_factory, zookeeper_server):  # noqa: F811
    with side_by_side(
            tmp_path_factory.mktemp("request-quota"), zookeeper_server, "rq",
            kafka_overrides=lambda port: dict(SETTINGS),
            kafkapy_overrides=lambda port: dict(SETTINGS)) as pair:
        with ThreadPoolExecutor(2) as pool:     # the two JVMs side by side
            runs = pool.map(lambda bootstrap: kafka_tool(
                "kafka-configs.sh", "--bootstrap-server", bootstrap, "--alter",
                "--entity-type", "clients", "--entity-name", "busy",
                "--add-config", f"request_percentage={PERCENTAGE}"),
                (pair.kafka.bootstrap, pair.kafkapy.bootstrap))
            for done in runs:
                assert done.returncode == 0, done.stderr
        yield {"kafka": pair.kafka.bootstrap, "kafkapy": pair.kafkapy.bootstrap,
               "kafkapy-metrics": pair.kafkapy_metrics}


def _metadata(client: WireClient) -> int:
    """A Metadata request for no topic (cheap): its throttle_time_ms."""
    return client.request(3, 9, topics=[], allow_auto_topic_creation=False,
                          include_cluster_authorized_operations=False,
                          include_topic_authorized_operations=False).throttle_time_ms


def _run(bootstrap: str, client_id: str) -> tuple[list[tuple[float, int]], float]:
    """Requests for RUN_S: (time answered, throttle_time_ms) each, and the run's length."""
    client = WireClient(bootstrap, client_id=client_id, timeout=30)
    try:
        answers = []
        started = time.monotonic()
        while time.monotonic() - started < RUN_S:
            throttle = _metadata(client)
            answers.append((time.monotonic(), throttle))
        return answers, time.monotonic() - started
    finally:
        client.close()


def _applied(bootstrap: str) -> None:
    """Wait until the quota reached the broker (its change notification): busy is throttled."""
    client = WireClient(bootstrap, client_id="busy", timeout=30)
    try:
        deadline = time.monotonic() + 15
        while _metadata(client) == 0:
            assert time.monotonic() < deadline, "request_percentage never applied"
    finally:
        client.close()


@pytest.mark.parametrize("side", ["kafkapy", "kafka"])
def test_a_client_over_its_request_percentage_is_throttled(sides, side):
    bootstrap = sides[side]
    _applied(bootstrap)
    free, free_s = _run(bootstrap, "free")
    busy, busy_s = _run(bootstrap, "busy")
    assert [t for _, t in free] == [0] * len(free)
    throttles = [t for _, t in busy]
    assert max(throttles) > 0
    assert max(throttles) <= WINDOW_S * 1000          # bounded to one quota window
    # the connection is muted for the throttle: the next answer comes no sooner
    gaps = [(later - at, t) for (at, t), (later, _) in zip(busy, busy[1:]) if t > 0]
    assert gaps and all(gap >= t / 1000 * 0.8 for gap, t in gaps), gaps
    assert len(busy) / busy_s < len(free) / free_s / 5, (len(busy), len(free))


def _produce_one(bootstrap: str) -> None:
    """TOPIC created (auto-creation through Metadata) and one record appended."""
    client = WireClient(bootstrap, client_id="setup", timeout=30)
    try:
        deadline = time.monotonic() + 20
        while True:
            topic = client.request(3, 9, topics=[REQUESTS[3].MetadataRequestTopic(name=TOPIC)],
                                   allow_auto_topic_creation=True,
                                   include_cluster_authorized_operations=False,
                                   include_topic_authorized_operations=False).topics[0]
            if topic.error_code == 0 and topic.partitions and topic.partitions[0].leader_id >= 0:
                break
            assert time.monotonic() < deadline, "the topic never got a leader"
            time.sleep(0.1)
        builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 16)
        builder.append(0, int(time.time() * 1000), None, b"v", [])
        answer = client.request(0, 9, transactional_id=None, acks=1, timeout_ms=10_000,
                                topic_data=[Produce.TopicProduceData(name=TOPIC, partition_data=[
                                    Produce.TopicProduceData.PartitionProduceData(
                                        index=0, records=bytes(builder.build()))])])
        assert answer.responses[0].partition_responses[0].error_code == 0
    finally:
        client.close()


def _fetch(client: WireClient):
    return client.request(1, 11, replica_id=-1, max_wait_ms=0, min_bytes=0,
                          max_bytes=1 << 20, isolation_level=0, session_id=0,
                          session_epoch=-1, topics=[Fetch.FetchTopic(
                              topic=TOPIC, partitions=[Fetch.FetchTopic.FetchPartition(
                                  partition=0, current_leader_epoch=-1, fetch_offset=0,
                                  log_start_offset=-1, partition_max_bytes=1 << 20)])],
                          forgotten_topics_data=[], rack_id="")


@pytest.mark.parametrize("side", ["kafkapy", "kafka"])
def test_a_fetch_over_the_request_quota_is_answered_empty(sides, side):
    """Kafka's fetch under a request throttle: no partitions, the throttle time (the
    unlimited client reads the record)."""
    bootstrap = sides[side]
    _applied(bootstrap)
    _produce_one(bootstrap)
    free = WireClient(bootstrap, client_id="free", timeout=30)
    try:
        answer = _fetch(free)
        assert answer.throttle_time_ms == 0 and answer.responses[0].partitions[0].records
    finally:
        free.close()
    busy = WireClient(bootstrap, client_id="busy", timeout=30)
    try:
        deadline = time.monotonic() + 15
        answer = _fetch(busy)
        while answer.throttle_time_ms == 0:
            assert answer.responses[0].partitions[0].records
            assert time.monotonic() < deadline, "never throttled"
            answer = _fetch(busy)
        assert 0 < answer.throttle_time_ms <= WINDOW_S * 1000
        assert answer.error_code == 0 and answer.responses == []
    finally:
        busy.close()


def test_request_time_metrics_on_kafkapy(sides):
    """Kafka's type=Request MBeans of a throttled and an unlimited client under the
    exporter's names."""
    _applied(sides["kafkapy"])
    client = WireClient(sides["kafkapy"], client_id="free")
    try:
        assert [_metadata(client) for _ in range(5)] == [0] * 5
    finally:
        client.close()
    values = quota_metrics(sides["kafkapy-metrics"])
    assert values[("kafka_server_quota_request_time", "Request", "", "busy")] > 0, values
    assert values[("kafka_server_quota_throttle_time", "Request", "", "busy")] > 0, values
    assert ("kafka_server_quota_request_time", "Request", "", "free") in values, values
    assert values[("kafka_server_quota_throttle_time", "Request", "", "free")] == 0, values
