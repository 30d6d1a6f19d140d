"""Replacing a broker in place: one log dir, Kafka 3.9 and kafkapy in turn.

A: a Kafka 3.9 broker (broker.id=1, ZooKeeper mode) fills its log dir (``workload.write``:
plain multi-segment topics with headers and timestamps, gzip/snappy/lz4/zstd batches, an
idempotent producer, committed and aborted transactions, a compacted topic its cleaner has
cleaned, a consumer group's offsets) and stops (SIGTERM, or kill -9); kafkapy starts on the
same chroot with the same broker.id and log.dirs.  Stock clients then read exactly what
Kafka served (records equal field by field: offsets, timestamps, keys, values, headers; the
aborted transaction invisible to read_committed; the group's offsets and metadata), a
retried batch of the idempotent producer is answered with its original offset (its state
survived), and the files Kafka wrote and a restart would not change are byte-identical
after kafkapy ran (segments, sealed indexes, partition.metadata, meta.properties' keys;
leader-epoch-checkpoint only grows).

B: the reverse: kafkapy writes the same workload, stops, and Kafka 3.9 reads it on the same
broker id and dir; Kafka's own ``kafka-dump-log.sh`` reads kafkapy's segments (deep
iteration, CRCs valid) and ``kafka-console-consumer.sh`` reads the records.

Registration: ``/brokers/ids/1`` as kafkapy writes it is Kafka 3.9's JSON byte for byte,
the port, the timestamp and the supported features aside (Kafka 3.9 registers none).
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from kafkapy.log.checkpoint import read_offset_checkpoint
from kafkapy.records.batch import iter_headers, set_base_offset
from kafkapy.records.record import build_batch
from tests.support.wire import WireClient
from tests.support import workload
from tests.support.mixed import (SINGLE_BROKER_SETTINGS, file_digests, kafka_tool,
                                  wait_for)

SETTINGS = dict(SINGLE_BROKER_SETTINGS, **{
    "log.cleaner.backoff.ms": "500", "broker.rack": "rack-a",
    # Retention runs at once; removed segments and deleted topics' dirs stay on disk (as
    # ``.deleted`` / ``-delete``) for the whole test, as they would on a busy broker.
    "log.retention.check.interval.ms": "500", "log.segment.delete.delay.ms": "600000",
    # Kafka's first retention pass only after this (default 30 s).
    "log.initial.task.delay.ms": "0"})
TIMEOUT = 120


# --------------------------------------------------------------------------- helpers

def _cleaned(log_dir: Path) -> bool:
    """The writer's cleaner has checkpointed a cleaned offset for ``compacted-0``."""
    path = log_dir / "cleaner-offset-checkpoint"
    if not path.is_file():
        return False
    return any(line.startswith("compacted 0 ") and int(line.split()[2]) > 0
               for line in path.read_text().splitlines())


def _leftovers_ready(log_dir: Path) -> bool:
    """Retention has removed ``retained``'s first segments (renamed ``.deleted``) and the
    deleted topic ``doomed`` left its renamed dir."""
    return (any((log_dir / "retained-0").glob("*.deleted"))
            and any(log_dir.glob("doomed-0.*-delete")))


def _check_doomed_gone(bootstrap: str) -> None:
    from tests.support.cluster import metadata
    port = int(bootstrap.rsplit(":", 1)[1])
    assert "doomed" not in metadata(port).topics


def _leftover(rel: str, before: dict[str, str] | None = None) -> bool:
    """What any broker's load removes: a removed segment (``.deleted``), a file of a
    deleted topic's ``-delete`` dir (after file.delete.delay.ms), a producer snapshot at or
    below the log start (Kafka's truncateAndReload deletes those; the log start here is the
    first segment's base offset ``before``)."""
    if rel.endswith(".deleted") or os.path.dirname(rel).endswith("-delete"):
        return True
    if rel.endswith(".snapshot") and before is not None:
        d = os.path.dirname(rel)
        bases = [int(os.path.basename(f)[:-4]) for f in before
                 if os.path.dirname(f) == d and f.endswith(".log")]
        return bool(bases) and int(os.path.basename(rel)[:-9]) <= min(bases)
    return False


def _snapshot(bootstrap: str) -> dict:
    return {"uncommitted": workload.read(bootstrap, which=dict(workload.topics(),
                                                                retained=1)),
            "committed": workload.read(bootstrap, "read_committed"),
            "offsets": workload.committed(bootstrap)}


def _check_snapshot_sane(snap: dict) -> None:
    """What the writer served is what the workload wrote (so the comparison means something)."""
    txn_all = [r for r in snap["uncommitted"] if r.topic == "txn"]
    txn_committed = [r for r in snap["committed"] if r.topic == "txn"]
    assert len(txn_all) == 12 and len(txn_committed) == 8, (len(txn_all), len(txn_committed))
    assert not any(b"txn-abort" in r.value for r in txn_committed)
    for c in workload.CODECS:
        assert len([r for r in snap["uncommitted"] if r.topic == f"codec-{c}"]) == 60
    retained = [r.offset for r in snap["uncommitted"] if r.topic == "retained"]
    assert retained and retained[0] > 0 and retained[-1] == 79, retained
    assert any(r.headers for r in snap["uncommitted"] if r.topic == "plain")
    assert snap["offsets"] == {tp: (off, f"meta-{tp[1]}")
                               for tp, off in workload.COMMITTED.items()}


def _segment_batches(partition_dir: Path) -> list[bytes]:
    out = []
    for seg in sorted(partition_dir.glob("*.log")):
        data = seg.read_bytes()
        out += [data[h.position:h.position + h.size] for h in iter_headers(data)]
    return out


def _produce_raw(bootstrap: str, topic: str, batch: bytes):
    from kafkapy.protocol.messages import REQUESTS
    produce = REQUESTS[0]
    client = WireClient(bootstrap, timeout=30)
    try:
        r = client.request(0, 9, transactional_id=None, acks=-1, timeout_ms=10000, topic_data=[
            produce.TopicProduceData(name=topic, partition_data=[
                produce.TopicProduceData.PartitionProduceData(index=0, records=batch)])])
    finally:
        client.close()
    return r.responses[0].partition_responses[0]


def _retry_last_batch(bootstrap: str, topic: str, batches: list[bytes]):
    """Send the last stored batch of ``topic`` again, as its producer's retry would be
    (baseOffset 0 and partitionLeaderEpoch -1: both outside the CRC); (answer, header)."""
    last = bytearray(batches[-1])
    [h] = list(iter_headers(last))
    set_base_offset(last, 0, 0)
    last[12:16] = (-1).to_bytes(4, "big", signed=True)
    return _produce_raw(bootstrap, topic, bytes(last)), h


def _check_idempotent_state(bootstrap: str, idem: list[bytes], idem_old: list[bytes],
                            from_snapshot: bool = True) -> None:
    """``idem``'s producer survived: its last batch, sent again, is a duplicate (answered
    with the original offset) and its next sequence goes right after the log end.
    ``idem-old``'s producer is expired (its timestamps are past producer.id.expiration.ms),
    as Kafka's loadFromSnapshot drops it: the same retry is appended at the log end (checked
    when the state comes from a clean shutdown's snapshot: state rebuilt from the batches
    themselves is only expired by the periodic check, in Kafka as here)."""
    dup, h = _retry_last_batch(bootstrap, "idem", idem)
    assert (dup.error_code, dup.base_offset) == (0, h.base_offset), \
        f"retried batch: error {dup.error_code}, base offset {dup.base_offset} (original {h.base_offset})"
    nxt = build_batch([(b"k", b"after-takeover", (), workload.TS0)], producer_id=h.producer_id,
                      producer_epoch=h.producer_epoch, base_sequence=h.last_sequence + 1)
    follow = _produce_raw(bootstrap, "idem", nxt)
    assert (follow.error_code, follow.base_offset) == (0, h.next_offset), \
        f"next sequence: error {follow.error_code}, base offset {follow.base_offset}"
    if not from_snapshot:
        return
    again, h_old = _retry_last_batch(bootstrap, "idem-old", idem_old)
    assert (again.error_code, again.base_offset) == (0, h_old.next_offset), \
        f"expired producer's retry: error {again.error_code}, base offset {again.base_offset}"


def _stable_files(before: dict[str, str], log_dir: Path) -> list[str]:
    """Files a restart of the writer would leave alone: every segment, every sealed
    segment's indexes, partition.metadata (snapshots of sealed segments too)."""
    by_dir: dict[str, list[str]] = {}
    for rel in before:
        by_dir.setdefault(os.path.dirname(rel), []).append(rel)
    stable = []
    for d, files in by_dir.items():
        if not d or d.endswith("-delete"):   # dir-level checkpoints: rewritten by any broker
            continue
        segments = sorted(f for f in files if f.endswith(".log"))
        active = segments[-1][:-4] if segments else None
        for f in files:
            base, ext = os.path.splitext(f)
            if ext == ".log" or f.endswith("partition.metadata"):
                stable.append(f)
            elif ext in (".index", ".timeindex") and base != active:
                stable.append(f)
    return sorted(stable)


DIR_CHECKPOINTS = ("recovery-point-offset-checkpoint", "replication-offset-checkpoint",
                   "log-start-offset-checkpoint", "cleaner-offset-checkpoint")


def _dir_checkpoints(log_dir: Path) -> dict[str, dict]:
    """The dir-level offset checkpoints as maps (Kafka writes entries in hash order)."""
    return {name: read_offset_checkpoint(str(log_dir / name)) for name in DIR_CHECKPOINTS}


def _meta_properties(log_dir: Path) -> dict[str, str]:
    lines = (log_dir / "meta.properties").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def _leader_epochs(log_dir: Path) -> dict[str, list[str]]:
    return {str(p.parent.name): p.read_text().splitlines()[2:]
            for p in log_dir.glob("*/leader-epoch-checkpoint")
            if not p.parent.name.endswith("-delete")}


def _registration(m, node_id: int) -> bytes:
    data, _ = m.zk.get(f"/brokers/ids/{node_id}")
    return data


def _normalized_registration(data: bytes, port: int) -> str:
    """The JSON with the port and timestamp (which differ between any two starts) masked,
    and the supported features (a Kafka 3.9 ZooKeeper-mode broker registers none, kafkapy
    its own: kafkapy.metadata.features.SUPPORTED_FEATURES, checked on their own)."""
    text = data.decode()
    text = text.replace(f":{port}\"", ":PORT\"").replace(f"\"port\":{port}", "\"port\":PORT")
    text = text.replace(_KAFKAPY_FEATURES, '"features":{}')
    return re.sub(r"\"timestamp\":\"\d+\"", "\"timestamp\":\"TS\"", text)


_KAFKAPY_FEATURES = ('"features":{"group.version":{"min_version":0,"max_version":1},'
                     '"share.version":{"min_version":0,"max_version":1},'
                     '"transaction.version":{"min_version":0,"max_version":2}}')


def _start(m, node_id: int, timeout: float = TIMEOUT) -> str:
    m.launch_all(timeout=timeout)
    m.wait_ready([node_id], timeout=timeout)
    return m.bootstrap(node_id)


def _written(m, bootstrap: str, who: str):
    """The workload and its leftovers written to broker 1, its cleaner and deletions done:
    (its log dir, what it serves)."""
    workload.write(bootstrap)
    workload.write_leftovers(bootstrap)
    log_dir = m.log_dir(1)
    wait_for(lambda: _cleaned(log_dir), 30, f"{who} cleaner to clean compacted-0")
    wait_for(lambda: _leftovers_ready(log_dir), 30, f"{who} .deleted segments and -delete dir")
    served = _snapshot(bootstrap)
    _check_snapshot_sane(served)
    return log_dir, served


# --------------------------------------------------------------------------- A

@pytest.mark.parametrize("stop", ["sigterm", "kill9"])
def test_kafka_log_dir_read_by_kafkapy(mixed_factory, stop):
    m = mixed_factory(SETTINGS)
    m.add(1, "kafka")
    bootstrap = _start(m, 1)
    kafka_registration = _registration(m, 1)
    kafka_port = m.nodes[1].port
    log_dir, served = _written(m, bootstrap, "Kafka's")
    if stop == "sigterm":
        # The JVM ends with 143 (128 + SIGTERM) after its shutdown hook ran.
        assert m.terminate(1) in (0, 143), m.log_text(1)[-3000:]
        assert (log_dir / ".kafka_cleanshutdown").is_file()
    else:
        m.kill(1)
    before = file_digests(log_dir)
    meta_before = _meta_properties(log_dir)
    epochs_before = _leader_epochs(log_dir)
    checkpoints_before = _dir_checkpoints(log_dir)
    idem = (_segment_batches(log_dir / "idem-0"), _segment_batches(log_dir / "idem-old-0"))

    m.replace(1, "kafkapy")
    bootstrap = _start(m, 1)
    _check_doomed_gone(bootstrap)
    registration = _registration(m, 1)
    got = _snapshot(bootstrap)
    assert got["offsets"] == served["offsets"]
    assert got["committed"] == served["committed"]
    assert got["uncommitted"] == served["uncommitted"]
    assert b'"features":{}' in kafka_registration
    assert _KAFKAPY_FEATURES.encode() in registration
    assert _normalized_registration(registration, m.nodes[1].port) == \
        _normalized_registration(kafka_registration, kafka_port)
    assert m.terminate(1) == 0, m.log_text(1)[-3000:]

    after = file_digests(log_dir)
    changed = [f for f in _stable_files(before, log_dir) if after.get(f) != before[f]]
    assert not changed, f"kafkapy rewrote files of Kafka's: {changed}"
    assert _meta_properties(log_dir) == meta_before
    for name, entries in epochs_before.items():
        now = _leader_epochs(log_dir)[name]
        assert now[:len(entries)] == entries, (name, entries, now)
    if stop == "sigterm":
        # A restart of Kafka itself on its cleanly stopped dir changes no file at all (the
        # same offsets, no new snapshot, its .lock deleted at shutdown): kafkapy neither,
        # the checkpoints' entry order aside.
        differ = sorted(f for f in set(before) | set(after) if before.get(f) != after.get(f))
        assert [f for f in differ
                if f not in DIR_CHECKPOINTS and not _leftover(f, before)] == [], differ
        assert _dir_checkpoints(log_dir) == checkpoints_before

    # The idempotent producer's state (from Kafka's snapshot, or rebuilt after kill -9).
    bootstrap = _start(m, 1)
    _check_idempotent_state(bootstrap, *idem, from_snapshot=stop == "sigterm")


# --------------------------------------------------------------------------- B

def test_kafkapy_log_dir_read_by_kafka(mixed_factory):
    m = mixed_factory(SETTINGS)
    m.add(1, "kafkapy")
    bootstrap = _start(m, 1)
    log_dir, served = _written(m, bootstrap, "kafkapy's")
    assert m.terminate(1) == 0, m.log_text(1)[-3000:]
    idem = (_segment_batches(log_dir / "idem-0"), _segment_batches(log_dir / "idem-old-0"))

    # Kafka's own tools read kafkapy's segments.
    for part in ("plain-0", "codec-zstd-0", "txn-0", "compacted-0"):
        segments = sorted(str(p) for p in (log_dir / part).glob("*.log"))
        dump = kafka_tool("kafka-dump-log.sh", "--deep-iteration", "--print-data-log",
                          "--files", ",".join(segments))
        assert dump.returncode == 0, dump.stderr[-3000:]
        assert "isvalid: false" not in dump.stdout.lower() and "Exception" not in dump.stdout, \
            dump.stdout[-3000:]
        assert "isvalid: true" in dump.stdout, dump.stdout[:2000]

    before = file_digests(log_dir)
    checkpoints_before = _dir_checkpoints(log_dir)
    m.replace(1, "kafka")
    bootstrap = _start(m, 1)
    _check_doomed_gone(bootstrap)
    got = _snapshot(bootstrap)
    assert got["offsets"] == served["offsets"]
    assert got["committed"] == served["committed"]
    assert got["uncommitted"] == served["uncommitted"]
    # Kafka found nothing to recover, rebuild or rewrite in kafkapy's cleanly stopped dir.
    assert m.terminate(1) in (0, 143), m.log_text(1)[-3000:]
    after = file_digests(log_dir)
    differ = sorted(f for f in set(before) | set(after) if before.get(f) != after.get(f))
    assert [f for f in differ
            if f not in DIR_CHECKPOINTS and not _leftover(f, before)] == [], differ
    assert _dir_checkpoints(log_dir) == checkpoints_before
    bootstrap = _start(m, 1)
    out = kafka_tool("kafka-console-consumer.sh", "--bootstrap-server", bootstrap,
                     "--topic", "codec-lz4", "--from-beginning", "--max-messages", "60",
                     "--timeout-ms", "30000", "--property", "print.key=true")
    assert out.returncode == 0, out.stderr[-3000:]
    expected = [f"{r.key.decode()}\t{r.value.decode()}" for r in served["uncommitted"]
                if r.topic == "codec-lz4"]
    assert out.stdout.splitlines() == expected
    _check_idempotent_state(bootstrap, *idem)
