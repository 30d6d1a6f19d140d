"""Client byte-rate quotas enforced, on kafkapy and on Kafka 3.9 alike (both brokers on one
ZooKeeper, own chroots, ``quota.window.num=3`` of 1 s so a run of a few seconds passes the
start-up burst): a producer over its client-id quota and a consumer over the default user's
quota get throttle_time_ms > 0 and their connection muted, so what they move over a run
stays within the quota (plus the burst the rate windows allow at the start: ``samples - 1``
windows' worth); an unthrottled client on the same broker keeps its rate; a quota removed
reaches a running client within a window of its throttle ending."""
from __future__ import annotations

import shutil
import time

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkapy.protocol.messages import REQUESTS
from tests.support.broker_process import free_port
from tests.support.sasl import KAFKA_HOME
from tests.support.side_by_side import quota_metrics, side_by_side
from tests.support.wire import WireClient
from tests.support.zookeeper_server import zookeeper_server  # noqa: F401 (fixture)

pytestmark = pytest.mark.skipif(
    not (KAFKA_HOME / "bin" / "kafka-server-start.sh").exists() or not shutil.which("java"),
    reason="Kafka 3.9 or java missing")

Produce, Fetch = REQUESTS[0], REQUESTS[1]
QUOTA = 200_000             # bytes per second
SAMPLES, WINDOW_S = 3, 1
BURST = QUOTA * (SAMPLES - 1) * WINDOW_S
RUN_S = 3.0
VALUE = b"q" * 20_000
SETTINGS = {"quota.window.num": str(SAMPLES), "quota.window.size.seconds": str(WINDOW_S),
            "num.partitions": "1", "auto.create.topics.enable": "true",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
                'org.apache.kafka.common.security.plain.PlainLoginModule required '
                'username="admin" password="admin-secret" user_alice="alice-secret" '
                'user_bob="bob-secret";')}


def _listeners(port: int, sasl_port: int) -> dict[str, str]:
    text = f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}"
    return {"listeners": text, "advertised.listeners": text}


@pytest.fixture(scope="module")
def sides(tmp_path_factory, zookeeper_server):  # noqa: F811
    sasl_port, our_sasl = free_port(), free_port()
    with side_by_side(
            tmp_path_factory.mktemp("client-quotas"), zookeeper_server, "cq",
            kafka_overrides=lambda port: {**SETTINGS, **_listeners(port, sasl_port)},
            kafkapy_overrides=lambda port: {
                **SETTINGS, **_listeners(port, our_sasl)}) as pair:
        yield {"kafka": pair.kafka.bootstrap, "kafkapy": pair.kafkapy.bootstrap,
               "kafka-sasl": f"127.0.0.1:{sasl_port}", "kafkapy-sasl": f"127.0.0.1:{our_sasl}",
               "kafkapy-metrics": pair.kafkapy_metrics}


def _alter(bootstrap: str, entity: list, key: str, value: float | None) -> None:
    client = WireClient(bootstrap)
    try:
        response = client.request(49, 1, entries=[(entity, [(key, value or 0.0, value is None)])],
                                  validate_only=False)
        assert [e[0] for e in response.entries] == [0]
    finally:
        client.close()


def _batch() -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 21)
    builder.append(0, int(time.time() * 1000), None, VALUE, [])
    return bytes(builder.build())


def _produce(client: WireClient, topic: str, batch: bytes):
    response = client.request(0, 9, transactional_id=None, acks=1, timeout_ms=10_000, topic_data=[
        Produce.TopicProduceData(name=topic, partition_data=[
            Produce.TopicProduceData.PartitionProduceData(index=0, records=batch)])])
    assert response.responses[0].partition_responses[0].error_code == 0
    return response.throttle_time_ms


def _make_topic(bootstrap: str, topic: str) -> None:
    client = WireClient(bootstrap, client_id="setup")
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            response = client.request(3, 4, topics=[REQUESTS[3].MetadataRequestTopic(name=topic)],
                                      allow_auto_topic_creation=True)
            topic_md = response.topics[0]
            if topic_md.error_code == 0 and topic_md.partitions and topic_md.partitions[0].leader_id >= 0:
                return
            time.sleep(0.1)
        raise AssertionError(f"topic {topic} never got a leader")
    finally:
        client.close()


@pytest.mark.parametrize("side", ["kafkapy", "kafka"])
def test_producer_over_its_client_id_quota(sides, side):
    bootstrap = sides[side]
    topic = f"produce-{side}"
    _make_topic(bootstrap, topic)
    _alter(bootstrap, [("client-id", "throttled-producer")], "producer_byte_rate", QUOTA)
    time.sleep(0.5)                 # the change notification reaches the broker
    batch = _batch()
    client = WireClient(bootstrap, client_id="throttled-producer", timeout=30)
    try:
        sent, throttles = 0, []
        started = time.monotonic()
        while time.monotonic() - started < RUN_S:
            throttles.append(_produce(client, topic, batch))
            sent += len(batch)
        elapsed = time.monotonic() - started
        assert max(throttles) > 0
        # the broker admits one request past the bound before it throttles
        assert sent <= (QUOTA * elapsed + BURST) * 1.05 + len(batch)
        assert sent / elapsed <= QUOTA * 2
        assert sent >= QUOTA * elapsed * 0.5            # throttled, not stopped

        free = WireClient(bootstrap, client_id="free-producer", timeout=30)
        try:
            begun = time.monotonic()
            free_throttles = [_produce(free, topic, batch) for _ in range(40)]
            free_rate = 40 * len(batch) / (time.monotonic() - begun)
        finally:
            free.close()
        assert free_throttles == [0] * 40 and free_rate > QUOTA * 2

        removed = time.monotonic()
        _alter(bootstrap, [("client-id", "throttled-producer")], "producer_byte_rate", None)
        last_throttle_s = throttles[-1] / 1000
        while _produce(client, topic, batch) > 0:
            assert time.monotonic() - removed < last_throttle_s + 2 * WINDOW_S + 1
        assert time.monotonic() - removed < last_throttle_s + 2 * WINDOW_S + 1
    finally:
        client.close()


def _plain_login(bootstrap: str, user: str, client_id: str) -> WireClient:
    client = WireClient(bootstrap, client_id=client_id, timeout=30)
    assert client.request(17, 1, mechanism="PLAIN").error_code == 0
    answer = client.request(36, 2, auth_bytes=f"\0{user}\0{user}-secret".encode())
    assert answer.error_code == 0, answer
    return client


@pytest.mark.parametrize("side", ["kafkapy", "kafka"])
def test_user_quota_and_a_user_client_override(sides, side):
    """SASL users: alice's user quota bounds her client; her (user, client-id) override lets
    another of her clients through; bob, with no quota, is never throttled."""
    bootstrap, sasl = sides[side], sides[f"{side}-sasl"]
    topic = f"users-{side}"
    _make_topic(bootstrap, topic)
    _alter(bootstrap, [("user", "alice")], "producer_byte_rate", QUOTA)
    _alter(bootstrap, [("user", "alice"), ("client-id", "vip")], "producer_byte_rate",
           QUOTA * 100)
    time.sleep(0.5)
    batch = _batch()
    try:
        client = _plain_login(sasl, "alice", "regular")
        try:
            sent, throttles = 0, []
            started = time.monotonic()
            while time.monotonic() - started < RUN_S:
                throttles.append(_produce(client, topic, batch))
                sent += len(batch)
            elapsed = time.monotonic() - started
        finally:
            client.close()
        assert max(throttles) > 0
        assert sent <= (QUOTA * elapsed + BURST) * 1.05 + len(batch)
        for user, client_id in (("alice", "vip"), ("bob", "regular")):
            client = _plain_login(sasl, user, client_id)
            try:
                assert [_produce(client, topic, batch) for _ in range(30)] == [0] * 30
            finally:
                client.close()
    finally:
        _alter(bootstrap, [("user", "alice")], "producer_byte_rate", None)
        _alter(bootstrap, [("user", "alice"), ("client-id", "vip")], "producer_byte_rate", None)


def _fetch(client: WireClient, topic: str, offset: int):
    response = client.request(1, 11, replica_id=-1, max_wait_ms=100, min_bytes=1,
                              max_bytes=4 << 20, isolation_level=0, session_id=0,
                              session_epoch=-1, topics=[Fetch.FetchTopic(
                                  topic=topic, partitions=[Fetch.FetchTopic.FetchPartition(
                                      partition=0, current_leader_epoch=-1, fetch_offset=offset,
                                      log_start_offset=-1, partition_max_bytes=4 << 20)])],
                              forgotten_topics_data=[], rack_id="")
    if not response.responses:
        return response.throttle_time_ms, b"", offset
    part = response.responses[0].partitions[0]
    assert part.error_code == 0
    records = part.records or b""
    return response.throttle_time_ms, records, offset + _count(records)


def _count(records: bytes) -> int:
    """Records in a run of v2 batches (whole batches only)."""
    count, pos = 0, 0
    while pos + 61 <= len(records):
        length = int.from_bytes(records[pos + 8:pos + 12], "big")
        if pos + 12 + length > len(records):
            break
        count += int.from_bytes(records[pos + 57:pos + 61], "big")
        pos += 12 + length
    return count


@pytest.mark.parametrize("side", ["kafkapy", "kafka"])
def test_consumer_over_the_default_user_quota(sides, side):
    bootstrap = sides[side]
    topic = f"fetch-{side}"
    _make_topic(bootstrap, topic)
    filler = WireClient(bootstrap, client_id="filler", timeout=30)
    try:
        batch = _batch()
        for _ in range(int((QUOTA * RUN_S + BURST) * 1.5) // len(batch)):
            _produce(filler, topic, batch)
    finally:
        filler.close()
    _alter(bootstrap, [("user", None)], "consumer_byte_rate", QUOTA)
    time.sleep(0.5)
    client = WireClient(bootstrap, client_id="throttled-consumer", timeout=30)
    try:
        received, throttles, offset = 0, [], 0
        started = time.monotonic()
        while time.monotonic() - started < RUN_S:
            throttle, records, offset = _fetch(client, topic, offset)
            throttles.append(throttle)
            received += len(records)
        elapsed = time.monotonic() - started
        assert max(throttles) > 0
        assert received <= (QUOTA * elapsed + BURST) * 1.05
        assert received / elapsed <= QUOTA * 2
        assert received >= QUOTA * elapsed * 0.5
    finally:
        client.close()
        _alter(bootstrap, [("user", None)], "consumer_byte_rate", None)


def test_quota_metrics_on_kafkapy(sides):
    """After the throttled producer and consumer, and three batches of a client under a
    quota just now: Kafka's per-client quota MBeans' values under the exporter's names."""
    bootstrap = sides["kafkapy"]
    _alter(bootstrap, [("client-id", "metered")], "producer_byte_rate", QUOTA * 100)
    time.sleep(0.5)
    client = WireClient(bootstrap, client_id="metered")
    try:
        batch = _batch()
        for _ in range(3):
            assert _produce(client, "produce-kafkapy", batch) == 0
    finally:
        client.close()
    values = quota_metrics(sides["kafkapy-metrics"])
    produce = ("Produce", "", "throttled-producer")
    fetch = ("Fetch", "ANONYMOUS", "")
    assert values[("kafka_server_quota_throttle_time", *produce)] > 0, values
    metered = values[("kafka_server_quota_byte_rate", "Produce", "", "metered")]
    # three requests (a batch and its request's header) over the rate's span: (samples - 1)
    # windows plus the time since the first
    span = (SAMPLES - 1) * WINDOW_S
    assert 3 * len(batch) / (span + 1) <= metered <= 3 * (len(batch) + 200) / span, values
    assert values[("kafka_server_quota_throttle_time", *fetch)] > 0, values


@pytest.mark.parametrize("side", ["kafkapy", "kafka"])
def test_connection_creation_rate_of_an_ip(sides, side):
    """``connection_creation_rate`` of /config/ips/127.0.0.1: connections past the rate (after
    the windows' burst) are never served and are closed."""
    bootstrap = sides[side]
    _alter(bootstrap, [("ip", "127.0.0.1")], "connection_creation_rate", 2.0)
    try:
        time.sleep(0.5)
        answered = unanswered = 0
        clients = [WireClient(bootstrap, timeout=5) for _ in range(8)]
        for client in clients:
            try:
                client.request(18, 0)
                answered += 1
            except (OSError, AssertionError, ValueError):
                unanswered += 1
            finally:
                client.close()
        # bound 2/s over a span of at least (samples - 1) windows: 4 connections pass
        assert 3 <= answered <= 5 and unanswered >= 3, (answered, unanswered)
    finally:
        deadline = time.monotonic() + 15    # until the rate lets the removal's connection in
        while True:
            try:
                _alter(bootstrap, [("ip", "127.0.0.1")], "connection_creation_rate", None)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
