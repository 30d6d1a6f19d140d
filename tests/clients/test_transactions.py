"""Transactions with stock clients: confluent-kafka, kafka-python, Java 3.9/4.3.

- a confluent-kafka transactional producer commits and aborts; a read_committed
  consumer sees exactly the committed records, read_uncommitted sees them all;
- a second producer with the same transactional.id fences the first;
- consume-transform-produce with send_offsets_to_transaction gives exactly-once
  output across a kill -9 of the broker in the middle of a transaction;
- kafka-python's transactional producer commits and aborts;
- the Java transactional producer (kafka-clients 3.9.0 and 4.3.0) with a
  read_committed Java consumer (tests/java/TxnE2E.java).
No timed assertions: waits are bounded loops that fail with what was seen.
"""
from __future__ import annotations

import json
import subprocess
import threading
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkapy.protocol.messages import REQUESTS
from tests.support.broker_process import BrokerProcess
from tests.support.wire import WireClient

pytestmark = pytest.mark.timeout(600)


def _create(bootstrap: str, *topics: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(t, num_partitions=partitions, replication_factor=1)
                                   for t in topics], operation_timeout=30, request_timeout=60)
    for f in futures.values():
        f.result()


def _read_all(bootstrap: str, topic: str, isolation: str, partitions: int = 1,
              expect: int | None = None, idle_polls: int = 6) -> list:
    """Every record of ``topic`` (assigned from the beginning) as (partition, offset, value)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4()}",
                  "isolation.level": isolation, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "enable.partition.eof": True})
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        got, eof, idle = [], set(), 0
        while idle < idle_polls:
            m = c.poll(1.0)
            if m is None:
                idle += 1
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    eof.add(m.partition())
                    if len(eof) == partitions and (expect is None or len(got) >= expect):
                        break
                    continue
                raise KafkaException(m.error())
            idle = 0
            got.append((m.partition(), m.offset(), m.value()))
        return got
    finally:
        c.close()


def _producer(bootstrap: str, txn_id: str, **extra) -> Producer:
    conf = {"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 5}
    conf.update(extra)
    return Producer(conf)


# ------------------------------------------------------------------------------------------
def test_confluent_commit_and_abort(broker):
    topic = f"txn-ck-{uuid.uuid4().hex[:8]}"
    _create(broker.bootstrap, topic, partitions=2)
    p = _producer(broker.bootstrap, f"ck-{topic}")
    p.init_transactions(30)
    expected_committed, everything = [], []
    for round_ in range(4):
        commit = round_ % 2 == 0
        p.begin_transaction()
        for i in range(50):
            value = f"r{round_}-{i}".encode()
            p.produce(topic, value=value, partition=i % 2)
            everything.append(value)
            if commit:
                expected_committed.append(value)
        p.flush(30)  # the records reach the log before the outcome is decided
        if commit:
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)
    # A plain (non-transactional) record after the transactions.
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    plain.produce(topic, value=b"plain", partition=0)
    plain.flush(30)
    expected_committed.append(b"plain")
    everything.append(b"plain")

    committed = _read_all(broker.bootstrap, topic, "read_committed", 2)
    uncommitted = _read_all(broker.bootstrap, topic, "read_uncommitted", 2)
    assert sorted(v for _, _, v in committed) == sorted(expected_committed)
    assert sorted(v for _, _, v in uncommitted) == sorted(everything)
    # Per partition, committed records keep their order.
    for part in (0, 1):
        values = [v for p_, _, v in committed if p_ == part]
        assert values == [v for v in expected_committed if v in set(values)]


def test_confluent_open_transaction_holds_back_read_committed(broker):
    """The LSO stops read_committed readers at an open transaction."""
    topic = f"txn-lso-{uuid.uuid4().hex[:8]}"
    _create(broker.bootstrap, topic)
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    plain.produce(topic, value=b"before")
    plain.flush(30)
    p = _producer(broker.bootstrap, f"lso-{topic}")
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, value=b"open")
    p.flush(30)
    plain.produce(topic, value=b"after")
    plain.flush(30)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "lso-reader",
                  "isolation.level": "read_committed"})
    low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
    c.close()
    assert (low, high) == (0, 1)  # read_committed "latest" is the LSO
    assert [v for _, _, v in _read_all(broker.bootstrap, topic, "read_committed",
                                       idle_polls=3)] == [b"before"]
    p.commit_transaction(30)
    assert [v for _, _, v in _read_all(broker.bootstrap, topic, "read_committed",
                                       expect=3)] == [b"before", b"open", b"after"]


def test_confluent_second_producer_fences_the_first(broker):
    topic = f"txn-fence-{uuid.uuid4().hex[:8]}"
    _create(broker.bootstrap, topic)
    txn_id = f"fence-{topic}"
    first = _producer(broker.bootstrap, txn_id)
    first.init_transactions(30)
    first.begin_transaction()
    first.produce(topic, value=b"zombie")
    first.flush(30)

    second = _producer(broker.bootstrap, txn_id)
    second.init_transactions(60)  # aborts the first producer's open transaction
    second.begin_transaction()
    second.produce(topic, value=b"winner")
    second.commit_transaction(30)

    with pytest.raises(KafkaException) as raised:
        first.produce(topic, value=b"late")
        first.commit_transaction(30)
    assert raised.value.args[0].fatal() or raised.value.args[0].code() in (
        KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH), \
        raised.value
    assert [v for _, _, v in _read_all(broker.bootstrap, topic, "read_committed")] == [b"winner"]
    assert sorted(v for _, _, v in _read_all(broker.bootstrap, topic, "read_uncommitted")) \
        == [b"winner", b"zombie"]


# ------------------------------------------------------------------------------------------
N_INPUT = 300


def _ctp_round(bootstrap, txn_id, group, src, dst, stop_after=None):
    """Consume-transform-produce until the input is exhausted; returns True when done.

    With ``stop_after`` it returns None right after producing that many records in an
    open transaction (the caller then kills the broker)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "isolation.level": "read_committed", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "session.timeout.ms": 10000,
                         "enable.partition.eof": True})
    producer = _producer(bootstrap, txn_id, **{"transaction.timeout.ms": 10000})
    producer.init_transactions(60)
    consumer.subscribe([src])
    produced = 0
    try:
        while True:
            msgs = consumer.consume(20, 1.0)
            data = [m for m in msgs if not m.error()]
            if any(m.error() and m.error().code() == KafkaError._PARTITION_EOF for m in msgs) \
                    and not data:
                positions = consumer.position(consumer.assignment())
                if positions and all(tp.offset >= N_INPUT for tp in positions):
                    return True
            if not data:
                continue
            producer.begin_transaction()
            for m in data:
                producer.produce(dst, value=b"out-" + m.value())
                produced += 1
                if stop_after is not None and produced >= stop_after:
                    producer.flush(30)
                    return None
            producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                                 consumer.consumer_group_metadata(), 30)
            producer.commit_transaction(30)
    finally:
        if stop_after is None:
            consumer.close()


def test_confluent_consume_transform_produce_exactly_once_across_kill9(tmp_path):
    b = BrokerProcess(tmp_path / "logs").start()
    try:
        src, dst = "ctp-in", "ctp-out"
        _create(b.bootstrap, src, dst)
        p = Producer({"bootstrap.servers": b.bootstrap})
        for i in range(N_INPUT):
            p.produce(src, value=b"%05d" % i)
        p.flush(30)
        txn_id, group = "ctp-app", "ctp-group"
        # Some committed transactions, then one left open when the broker dies.
        assert _ctp_round(b.bootstrap, txn_id, group, src, dst, stop_after=120) is None
        b.restart(hard=True)
        # The application restarts too: same transactional id and group.
        done = False
        for _ in range(5):
            try:
                done = _ctp_round(b.bootstrap, txn_id, group, src, dst)
                break
            except KafkaException:
                continue  # e.g. fenced / coordinator moving while the broker came back
        assert done
        out = [v for _, _, v in _read_all(b.bootstrap, dst, "read_committed", expect=N_INPUT)]
        assert sorted(out) == [b"out-%05d" % i for i in range(N_INPUT)], \
            f"{len(out)} records, {len(set(out))} distinct"
        # Some of it was aborted (the open transaction at the crash): read_uncommitted has more.
        assert len(_read_all(b.bootstrap, dst, "read_uncommitted")) > N_INPUT
    finally:
        b.kill()


# ------------------------------------------------------------------------------------------
def test_kafka_python_transactional_producer(broker):
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KTP
    topic = f"txn-kp-{uuid.uuid4().hex[:8]}"
    _create(broker.bootstrap, topic)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=f"kp-{topic}",
                             enable_idempotence=True)
    producer.init_transactions()
    producer.begin_transaction()
    for i in range(10):
        producer.send(topic, value=b"kc-%d" % i)
    producer.commit_transaction()
    producer.begin_transaction()
    for i in range(10):
        producer.send(topic, value=b"ka-%d" % i)
    producer.flush()
    producer.abort_transaction()
    producer.begin_transaction()
    producer.send(topic, value=b"kc-last")
    producer.commit_transaction()
    producer.close()

    def read(isolation):
        c = KafkaConsumer(bootstrap_servers=broker.bootstrap, isolation_level=isolation,
                          enable_auto_commit=False, group_id=None)
        c.assign([KTP(topic, 0)])
        c.seek_to_beginning()
        got, idle = [], 0
        while idle < 4:
            batch = c.poll(timeout_ms=1000)
            recs = [r.value for rs in batch.values() for r in rs]
            idle = 0 if recs else idle + 1
            got += recs
        c.close()
        return got

    assert read("read_committed") == [b"kc-%d" % i for i in range(10)] + [b"kc-last"]
    assert len(read("read_uncommitted")) == 21
    # The stock confluent reader agrees.
    assert [v for _, _, v in _read_all(broker.bootstrap, topic, "read_committed")] == \
        [b"kc-%d" % i for i in range(10)] + [b"kc-last"]


# ------------------------------------------------------------------------------------------
@pytest.mark.java
@pytest.mark.parametrize("version", ["3.9.0", "4.3.0"])
def test_java_transactions(broker, java_clients, version):
    client = java_clients[version]
    topic = f"txn-java-{version}-{uuid.uuid4().hex[:6]}"
    proc = subprocess.run(client.command("TxnE2E", broker.bootstrap, topic),
                          capture_output=True, text=True, timeout=500)
    report = (f"TxnE2E (kafka-clients {version}) exited {proc.returncode}\n"
              f"--- stdout ---\n{proc.stdout[-5000:]}\n--- stderr ---\n{proc.stderr[-15000:]}")
    assert proc.returncode == 0, report
    lines = [line for line in proc.stdout.splitlines() if line.startswith('{"ok"')]
    assert len(lines) == 1, report
    summary = json.loads(lines[0])
    assert summary["ok"] is True and summary["committed"] == summary["read_committed"], summary
    # The Java-written topic, re-read by librdkafka.
    committed = [v for _, _, v in _read_all(broker.bootstrap, topic, "read_committed")]
    assert len(committed) == summary["committed"]
    assert all(v.startswith(b"commit-") for v in committed)
    assert len(_read_all(broker.bootstrap, topic, "read_uncommitted")) == summary["written"]


def test_confluent_txn_offsets_visible_on_commit_and_gone_on_abort(broker):
    topic = f"txn-off-{uuid.uuid4().hex[:8]}"
    group = f"g-{topic}"
    _create(broker.bootstrap, topic)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                         "enable.auto.commit": False})
    meta = consumer.consumer_group_metadata()
    p = _producer(broker.bootstrap, f"off-{topic}")
    p.init_transactions(30)

    def committed():
        return consumer.committed([TopicPartition(topic, 0)], timeout=30)[0].offset

    p.begin_transaction()
    p.produce(topic, value=b"x")
    p.send_offsets_to_transaction([TopicPartition(topic, 0, 17)], meta, 30)
    p.abort_transaction(30)
    assert committed() < 0  # aborted: no committed offset
    p.begin_transaction()
    p.produce(topic, value=b"y")
    p.send_offsets_to_transaction([TopicPartition(topic, 0, 23)], meta, 30)
    p.commit_transaction(30)
    assert committed() == 23
    p.begin_transaction()
    p.send_offsets_to_transaction([TopicPartition(topic, 0, 99)], meta, 30)
    p.abort_transaction(30)
    assert committed() == 23
    consumer.close()


def _offset_fetch(bootstrap: str, group: str, topic: str, require_stable: bool) -> tuple[int, int]:
    """(error code, committed offset) of partition 0 from a raw OffsetFetch v7."""
    asked = REQUESTS[9].OffsetFetchRequestTopic(name=topic, partition_indexes=[0])
    client = WireClient(bootstrap)
    try:
        response = client.request(9, 7, group_id=group, require_stable=require_stable,
                                  topics=[asked])
    finally:
        client.close()
    assert response.error_code == 0, response
    (partition,) = response.topics[0].partitions
    return partition.error_code, partition.committed_offset


def test_require_stable_offset_fetch_waits_for_the_pending_transaction(broker):
    """OffsetFetch require_stable answers UNSTABLE_OFFSET_COMMIT (88) while a
    transactional commit is pending; a read_committed librdkafka consumer
    (which sets require_stable) retries on it and sees the offset once committed."""
    topic = f"txn-stable-{uuid.uuid4().hex[:8]}"
    group = f"g-{topic}"
    _create(broker.bootstrap, topic)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                         "enable.auto.commit": False, "isolation.level": "read_committed"})
    p = _producer(broker.bootstrap, f"stable-{topic}")
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, value=b"x")
    p.send_offsets_to_transaction([TopicPartition(topic, 0, 41)],
                                  consumer.consumer_group_metadata(), 30)
    assert _offset_fetch(broker.bootstrap, group, topic, require_stable=True) == (88, -1)
    assert _offset_fetch(broker.bootstrap, group, topic, require_stable=False) == (0, -1)

    seen = {}
    waiter = threading.Thread(target=lambda: seen.update(
        offset=consumer.committed([TopicPartition(topic, 0)], timeout=60)[0].offset))
    waiter.start()
    waiter.join(1.0)
    assert waiter.is_alive(), f"committed() returned {seen} while the transaction was open"
    p.commit_transaction(30)
    waiter.join(60)
    assert seen == {"offset": 41}
    assert _offset_fetch(broker.bootstrap, group, topic, require_stable=True) == (0, 41)
    consumer.close()
