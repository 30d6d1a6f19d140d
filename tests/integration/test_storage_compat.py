"""On-disk compatibility, both ways, checked with an independent reader/writer
(``storage_format.py``, written from the format description, no kafkapy imports).

1. kafkapy writes: kafka-python produces (plain and gzip) to a multi-segment topic, the
   broker stops cleanly, and every file is parsed and cross-checked: batches and CRCs,
   records, offset and time indexes, the dir-level checkpoints, meta.properties,
   partition.metadata, leader-epoch-checkpoint.
2. kafkapy reads: the topic is created through the broker (metadata, topic id), the
   broker stops, the partition dir is replaced by one the independent writer built
   (segments, indexes, checkpoints, meta.properties, partition.metadata), and after a
   restart a stock consumer reads every record, a timestamp look-up uses the time index,
   and new produce continues at the right offset.
"""
from __future__ import annotations

import os
import shutil

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from tests.integration import storage_format as sf

TS0 = 1_700_000_000_000


def _create(bootstrap, topic, **configs):
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, 1, 1, topic_configs=configs)])
    admin.close()


def _consume(bootstrap, topic):
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                      consumer_timeout_ms=3000)
    tp = TopicPartition(topic, 0)
    c.assign([tp])
    c.seek_to_beginning(tp)
    out = [(r.offset, r.timestamp, r.key, r.value) for r in c]
    c.close()
    return out


def test_kafkapy_files_read_by_independent_reader(fresh_broker):
    b = fresh_broker
    topic = "compat-out"
    _create(b.bootstrap, topic, **{"segment.bytes": "20000", "index.interval.bytes": "512"})
    acked = []
    for codec in (None, "gzip"):
        p = KafkaProducer(bootstrap_servers=b.bootstrap, acks="all", compression_type=codec,
                          linger_ms=5, batch_size=2048)
        futs = [(p.send(topic, key=b"key-%05d" % i, value=b"value-%05d-" % i + b"v" * (i % 90),
                        timestamp_ms=TS0 + i), i) for i in range(1500)]
        p.flush()
        acked += [(f.get(30).offset, TS0 + i, b"key-%05d" % i, b"value-%05d-" % i + b"v" * (i % 90))
                  for f, i in futs]
        p.close()
    assert b.stop() == 0
    d = os.path.join(b.log_dir, f"{topic}-0")
    contents = sf.check_partition(d, index_interval_bytes=512)
    assert len(contents.segments) > 3
    assert contents.records == sorted(acked)
    assert {b_.attributes & 7 for b_ in contents.batches} == {0, 1}
    leo = acked[-1][0] + 1 if acked else 0
    leo = max(a[0] for a in acked) + 1
    # dir-level checkpoints
    for name, expected in (("recovery-point-offset-checkpoint", leo),
                           ("replication-offset-checkpoint", leo)):
        entries = sf.read_checkpoint(os.path.join(b.log_dir, name))
        assert [topic, "0", str(expected)] in entries, (name, entries)
    sf.read_checkpoint(os.path.join(b.log_dir, "log-start-offset-checkpoint"))
    meta = sf.read_properties(os.path.join(b.log_dir, "meta.properties"))
    assert meta["version"] == "0" and meta["broker.id"] == "0" and meta["cluster.id"]
    pm = open(os.path.join(d, "partition.metadata")).read().split("\n")
    assert pm[0] == "version: 0" and pm[1].startswith("topic_id: ") and len(pm[1]) == 10 + 22
    epochs = sf.read_checkpoint(os.path.join(d, "leader-epoch-checkpoint"))
    assert epochs and epochs[0][1] == "0"
    assert os.path.exists(os.path.join(b.log_dir, ".kafka_cleanshutdown"))


def test_independently_written_partition_served_to_stock_consumer(fresh_broker):
    b = fresh_broker
    topic = "compat-in"
    _create(b.bootstrap, topic)
    assert b.stop() == 0
    d = os.path.join(b.log_dir, f"{topic}-0")
    topic_id = open(os.path.join(d, "partition.metadata")).read().split("topic_id: ")[1].strip()
    cluster_id = sf.read_properties(os.path.join(b.log_dir, "meta.properties"))["cluster.id"]
    shutil.rmtree(d)
    os.mkdir(d)
    # three segments: [0, 120), [120, 300), [300, 360); batches of 10 records
    expected = []
    plan = {0: range(0, 120, 10), 120: range(120, 300, 10), 300: range(300, 360, 10)}
    for base, firsts in plan.items():
        batches = []
        for first in firsts:
            recs = [(b"k%04d" % o, b"written-by-test-%04d" % o + b"w" * (o % 50), TS0 + o * 10)
                    for o in range(first, first + 10)]
            batches.append((first, recs))
            expected += [(first + i, r[2], r[0], r[1]) for i, r in enumerate(recs)]
        sf.write_segment(d, base, batches, index_interval_bytes=512)
    leo = 360
    sf.write_partition_metadata(d, topic_id)
    sf.write_checkpoint(os.path.join(d, "leader-epoch-checkpoint"), ["0 0"])
    sf.write_meta_properties(b.log_dir, 0, cluster_id)
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        sf.write_checkpoint(os.path.join(b.log_dir, name), [f"{topic} 0 {leo}"])
    sf.write_checkpoint(os.path.join(b.log_dir, "log-start-offset-checkpoint"), [])
    assert os.path.exists(os.path.join(b.log_dir, ".kafka_cleanshutdown"))
    b.start()
    got = _consume(b.bootstrap, topic)
    assert got == expected
    c = KafkaConsumer(bootstrap_servers=b.bootstrap)
    tp = TopicPartition(topic, 0)
    found = c.offsets_for_times({tp: TS0 + 2005})[tp]
    assert found.offset == 201 and found.timestamp == TS0 + 2010
    assert c.end_offsets([tp])[tp] == leo
    c.close()
    p = KafkaProducer(bootstrap_servers=b.bootstrap, acks="all")
    assert p.send(topic, value=b"after").get(30).offset == leo
    p.close()
    # the written files were served as they are (kafkapy did not need to rebuild them)
    assert sf.check_partition(d).records[:len(expected)] == expected
