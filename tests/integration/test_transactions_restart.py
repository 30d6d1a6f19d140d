"""Transactions and idempotence across broker crashes.

- a transaction open when the broker is killed (-9) ends consistently after the
  restart: the coordinator reloads it from ``__transaction_state`` and aborts it
  at its transaction timeout; read_committed never sees its records;
- the LSO, the producer state and the aborted-transaction index are rebuilt
  from the log: with every ``.txnindex`` and ``.snapshot`` file removed while the
  broker is down, read_committed still filters the aborted transactions, and
  the ``.txnindex`` file is written again in Kafka's 34-byte format;
- an idempotent producer retrying across a kill -9 writes no duplicates and no
  gaps (offsets and values checked).
Waits are bounded loops that fail with what they saw; nothing is timed.
"""
from __future__ import annotations

import struct
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.broker_process import BrokerProcess

pytestmark = pytest.mark.timeout(300)


def _create(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, 1, 1)], operation_timeout=30).values():
        f.result()


def _read(bootstrap: str, topic: str, isolation: str, idle_polls: int = 5) -> list:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "restart-reader",
                  "isolation.level": isolation, "enable.auto.commit": False,
                  "enable.partition.eof": True})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        got, idle = [], 0
        while idle < idle_polls:
            m = c.poll(1.0)
            if m is None:
                idle += 1
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    break
                idle += 1
                continue
            idle = 0
            got.append((m.offset(), m.value()))
        return got
    finally:
        c.close()


def _lso(bootstrap: str, topic: str) -> tuple[int, int]:
    """(read_committed latest, read_uncommitted latest)."""
    out = []
    for isolation in ("read_committed", "read_uncommitted"):
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "lso",
                      "isolation.level": isolation})
        out.append(c.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)[1])
        c.close()
    return out[0], out[1]


def _txn_index_entries(log_dir: Path, topic: str) -> list[tuple]:
    entries = []
    for path in sorted((log_dir / f"{topic}-0").glob("*.txnindex")):
        data = path.read_bytes()
        assert len(data) % 34 == 0, path
        entries += [struct.unpack_from(">hqqqq", data, i) for i in range(0, len(data), 34)]
    return entries


def test_open_transaction_at_crash_is_aborted_after_restart(tmp_path):
    b = BrokerProcess(tmp_path / "logs").start()
    try:
        topic = "open-at-crash"
        _create(b.bootstrap, topic)
        p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "crash-txn",
                      "transaction.timeout.ms": 3000})
        p.init_transactions(30)
        p.begin_transaction()
        p.produce(topic, value=b"committed")
        p.commit_transaction(30)
        p.begin_transaction()
        for i in range(10):
            p.produce(topic, value=b"open-%d" % i)
        p.flush(30)
        assert _lso(b.bootstrap, topic) == (2, 12)  # stuck at the open transaction
        b.restart(hard=True)
        del p
        # The reloaded coordinator aborts it once its 3 s timeout has passed.
        for _ in range(120):
            lso, hw = _lso(b.bootstrap, topic)
            if lso == hw:
                break
            time.sleep(0.25)
        assert lso == hw == 13, (lso, hw)  # the ABORT marker is offset 12
        assert [v for _, v in _read(b.bootstrap, topic, "read_committed")] == [b"committed"]
        assert len(_read(b.bootstrap, topic, "read_uncommitted")) == 11
        entries = _txn_index_entries(b.log_dir, topic)
        assert [(e[0], e[2], e[3], e[4]) for e in entries] == [(0, 2, 12, 13)], entries
        # The transactional id is usable again: a new producer commits.
        p2 = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "crash-txn"})
        p2.init_transactions(30)
        p2.begin_transaction()
        p2.produce(topic, value=b"after")
        p2.commit_transaction(30)
        assert [v for _, v in _read(b.bootstrap, topic, "read_committed")] == \
            [b"committed", b"after"]
    finally:
        b.kill()


def test_lso_producer_state_and_aborted_index_rebuilt_from_log(tmp_path):
    b = BrokerProcess(tmp_path / "logs").start()
    try:
        topic = "rebuild"
        _create(b.bootstrap, topic)
        p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "rebuild-txn"})
        p.init_transactions(30)
        expected = []
        for round_ in range(6):
            p.begin_transaction()
            for i in range(5):
                p.produce(topic, value=b"%d-%d" % (round_, i))
            p.flush(30)
            if round_ % 3 == 1:
                p.abort_transaction(30)
            else:
                p.commit_transaction(30)
                expected += [b"%d-%d" % (round_, i) for i in range(5)]
        # One more transaction left open across the crash.
        p.begin_transaction()
        p.produce(topic, value=b"open")
        p.flush(30)
        before_index = _txn_index_entries(b.log_dir, topic)
        assert len(before_index) == 2
        lso_before, hw_before = _lso(b.bootstrap, topic)
        assert lso_before == hw_before - 1
        b.kill()
        part_dir = b.log_dir / f"{topic}-0"
        for path in list(part_dir.glob("*.txnindex")) + list(part_dir.glob("*.snapshot")):
            path.unlink()
        b.start()
        assert _txn_index_entries(b.log_dir, topic) == before_index  # rebuilt, same bytes
        assert _lso(b.bootstrap, topic) == (lso_before, hw_before)  # the open txn holds it
        assert [v for _, v in _read(b.bootstrap, topic, "read_committed")] == expected
        # The producer state survived: the still-running producer's commit goes through.
        p.commit_transaction(30)
        assert [v for _, v in _read(b.bootstrap, topic, "read_committed")] == \
            expected + [b"open"]
    finally:
        b.kill()


def test_idempotent_producer_retrying_across_kill9_writes_no_duplicates_or_gaps(tmp_path):
    b = BrokerProcess(tmp_path / "logs").start()
    try:
        topic = "idem-restart"
        _create(b.bootstrap, topic)
        n = 3000
        p = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True,
                      "linger.ms": 2, "batch.num.messages": 50, "message.timeout.ms": 120000,
                      "max.in.flight.requests.per.connection": 5})
        failures = []

        def report(err, msg):
            if err is not None:
                failures.append(err)

        restarted = threading.Event()

        def crash():
            b.restart(hard=True)
            restarted.set()

        crasher = None
        for i in range(n):
            while True:
                try:
                    p.produce(topic, value=b"%06d" % i, on_delivery=report)
                    break
                except BufferError:
                    p.poll(0.1)
            if i == n // 3:
                crasher = threading.Thread(target=crash)
                crasher.start()
            p.poll(0)
        assert crasher is not None
        crasher.join()
        assert restarted.is_set()
        assert p.flush(120) == 0
        assert failures == []
        got = _read(b.bootstrap, topic, "read_uncommitted")
        assert [o for o, _ in got] == list(range(len(got)))  # no gaps in offsets
        values = [v for _, v in got]
        assert values == [b"%06d" % i for i in range(n)], \
            f"{len(values)} records, {len(set(values))} distinct"
    finally:
        b.kill()
