"""A log dir's worth of everything, written and read back by stock clients (confluent-kafka).

``write(bootstrap)`` creates and fills, through one broker:
- ``plain`` (2 partitions, 2 KiB segments: several segments with indexes) with keys, values,
  headers (incl. a null-valued one) and explicit CreateTime timestamps;
- ``codec-gzip`` / ``codec-snappy`` / ``codec-lz4`` / ``codec-zstd``: compressed batches;
- ``idem``: an idempotent producer (enable.idempotence); ``idem-old`` the same with
  timestamps older than producer.id.expiration.ms (a reader must forget that producer);
- ``txn``: a transactional producer, committed, aborted, committed;
- ``compacted`` (cleanup.policy=compact, tiny segments, dirty ratio 0.01): repeated keys and
  a tombstone, so that the writer's cleaner has something to clean;
- consumer group ``mixed-group`` with committed offsets (and metadata) on ``plain``.

``write_leftovers(bootstrap)`` leaves what a busy broker's dir holds at any moment (run with
log.retention.check.interval.ms short and log.segment.delete.delay.ms long):
``retained`` (1 KiB segments, retention.bytes 2 KiB): retention moved its log start and left
``*.deleted`` segment files; ``doomed``: a deleted topic whose renamed
``doomed-0.<uuid>-delete`` dir is still there.

``read(bootstrap, isolation)`` reads every record of those topics (``Record`` tuples: topic,
partition, offset, timestamp type and value, key, value, headers) until each partition's
end, bounded in time; ``committed(bootstrap)`` the group's offsets.  The tests compare what
one implementation serves with what the other served from the same files.
"""
from __future__ import annotations

import time
from typing import NamedTuple

from tests.support.cluster_clients import create_topic

# Record timestamps a minute old (a log written years ago would be cut by retention and its
# producers expired); ``idem-old``'s two days old: past producer.id.expiration.ms (1 day).
TS0 = (int(time.time()) - 60) * 1000
TS_OLD = TS0 - 2 * 86_400_000
GROUP = "mixed-group"
PLAIN_PARTITIONS = 2
CODECS = ("gzip", "snappy", "lz4", "zstd")
COMMITTED = {("plain", 0): 37, ("plain", 1): 11}


class Record(NamedTuple):
    topic: str
    partition: int
    offset: int
    ts_type: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple


def topics() -> dict[str, int]:
    """Topic -> partition count of everything ``write`` fills."""
    out = {"plain": PLAIN_PARTITIONS, "idem": 1, "idem-old": 1, "txn": 1, "compacted": 1}
    out.update({f"codec-{c}": 1 for c in CODECS})
    return out


def _producer(bootstrap: str, **extra):
    from confluent_kafka import Producer
    conf = {"bootstrap.servers": bootstrap, "linger.ms": 0, "batch.num.messages": 7,
            "acks": "all", "message.timeout.ms": 30000}
    conf.update(extra)
    return Producer(conf)


def _send(producer, topic: str, items, partition: int = 0, ts0: int = TS0) -> None:
    errors: list = []
    for i, (key, value, headers) in enumerate(items):
        producer.produce(topic, value, key=key, partition=partition, headers=headers,
                         timestamp=ts0 + i,
                         on_delivery=lambda err, _m: errors.append(err) if err else None)
        producer.poll(0)
    left = producer.flush(30)
    assert left == 0 and not errors, f"produce to {topic}: {left} unacked, {errors[:3]}"


def _items(topic: str, n: int, partition: int = 0):
    return [(f"{topic}-k{i % 13}".encode(),
             f"{topic}/{partition}/value-{i}-".encode() + b"x" * (i % 50),
             [("h1", f"hv{i}".encode()), ("h-null", None)] if i % 3 == 0 else None)
            for i in range(n)]


def write(bootstrap: str) -> None:
    create_topic(bootstrap, "plain", partitions=PLAIN_PARTITIONS,
                 configs={"segment.bytes": "2048", "index.interval.bytes": "256"})
    for c in CODECS:
        create_topic(bootstrap, f"codec-{c}", partitions=1)
    create_topic(bootstrap, "idem", partitions=1)
    create_topic(bootstrap, "idem-old", partitions=1)
    create_topic(bootstrap, "txn", partitions=1)
    create_topic(bootstrap, "compacted", partitions=1,
                 configs={"cleanup.policy": "compact", "segment.bytes": "1024",
                          "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "600000",
                          "min.compaction.lag.ms": "0"})
    p = _producer(bootstrap)
    for part in range(PLAIN_PARTITIONS):
        _send(p, "plain", _items("plain", 120, part), partition=part)
    for i in range(80):
        key = f"ck{i % 10}".encode()
        value = None if i == 75 else f"compacted-{i}".encode()   # one tombstone
        _send(p, "compacted", [(key, value, None)])
    for c in CODECS:
        _send(_producer(bootstrap, **{"compression.type": c}), f"codec-{c}",
              _items(f"codec-{c}", 60))
    _send(_producer(bootstrap, **{"enable.idempotence": True}), "idem", _items("idem", 40))
    _send(_producer(bootstrap, **{"enable.idempotence": True}), "idem-old",
          _items("idem-old", 12), ts0=TS_OLD)
    _write_transactions(bootstrap)
    _commit_offsets(bootstrap)


def write_leftovers(bootstrap: str) -> None:
    create_topic(bootstrap, "retained", partitions=1,
                 configs={"segment.bytes": "1024", "retention.bytes": "2048"})
    create_topic(bootstrap, "doomed", partitions=1)
    p = _producer(bootstrap)
    _send(p, "retained", _items("retained", 80))
    _send(p, "doomed", _items("doomed", 5))
    from tests.support.cluster_clients import delete_topic
    delete_topic(bootstrap, "doomed")


def _write_transactions(bootstrap: str) -> None:
    p = _producer(bootstrap, **{"transactional.id": "mixed-txn", "enable.idempotence": True})
    p.init_transactions(30)
    for n, outcome in ((5, "commit"), (4, "abort"), (3, "commit")):
        p.begin_transaction()
        for key, value, headers in _items(f"txn-{outcome}", n):
            p.produce("txn", value, key=key, partition=0, headers=headers, timestamp=TS0)
        p.flush(30)
        (p.commit_transaction if outcome == "commit" else p.abort_transaction)(30)


def _commit_offsets(bootstrap: str) -> None:
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                  "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition(t, p, off, metadata=f"meta-{p}")
                          for (t, p), off in COMMITTED.items()], asynchronous=False)
    finally:
        c.close()


def committed(bootstrap: str) -> dict[tuple[str, int], tuple[int, str]]:
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                  "enable.auto.commit": False})
    try:
        got = c.committed([TopicPartition(t, p) for t, p in COMMITTED], timeout=30)
    finally:
        c.close()
    return {(tp.topic, tp.partition): (tp.offset, tp.metadata) for tp in got}


def read(bootstrap: str, isolation: str = "read_uncommitted",
         which: dict[str, int] | None = None, timeout: float = 60.0) -> list[Record]:
    """Every record of ``which`` (default: all of ``topics()``) from the beginning."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    which = which or topics()
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "mixed-reader",
                  "enable.auto.commit": False, "enable.partition.eof": True,
                  "isolation.level": isolation, "fetch.wait.max.ms": 100})
    parts = [TopicPartition(t, p, OFFSET_BEGINNING) for t, n in which.items() for p in range(n)]
    c.assign(parts)
    pending = {(tp.topic, tp.partition) for tp in parts}
    out: list[Record] = []
    deadline = time.monotonic() + timeout
    try:
        while pending and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == -191:      # _PARTITION_EOF
                    pending.discard((m.topic(), m.partition()))
                    continue
                raise AssertionError(f"consume error: {m.error()}")
            ts_type, ts = m.timestamp()
            out.append(Record(m.topic(), m.partition(), m.offset(), ts_type, ts, m.key(),
                              m.value(), tuple(m.headers() or ())))
    finally:
        c.close()
    assert not pending, f"partitions not read to their end in {timeout}s: {sorted(pending)}"
    return sorted(out)
