"""``kafkapy-dump-log --offsets-decoder`` prints the consumer group protocol's records
(``__consumer_offsets`` types 3-8) as Kafka 3.9's ``kafka-dump-log.sh`` does.

One segment holds every record type and its tombstone as kafkapy writes them, members
with a null, an empty and a full ClassicMemberMetadata, a partition metadata value with
racks as Kafka 3.9 wrote them, a classic group record and an offset commit beside them,
and a record of a type neither tool knows; both tools dump it and stdout must be equal.
(Share groups' types 10-15, which Kafka 3.9's tool calls unknown, are printed as Kafka 4.x
prints them: ``test_dump_log_share``.)
"""
from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from kafkapy.coordinator.group import records as R
from kafkapy.coordinator.group.consumer import records as C
from kafkapy.coordinator.group.consumer.types import (ClassicMemberMetadata, ClassicProtocol,
                                                      Member, MemberState, Subscription,
                                                      TopicMetadata)
from kafkapy.coordinator.group.offsets import OffsetAndMetadata
from kafkapy.records.record import build_batch
from tests.support.cluster import KAFKA_HOME
from tests.support.mixed import _require_kafka

pytestmark = [pytest.mark.java, pytest.mark.timeout(300)]

KAFKA_DUMP = KAFKA_HOME / "bin" / "kafka-dump-log.sh"
OURS = Path(sys.executable).parent / "kafkapy-dump-log"
T1, T2 = uuid.UUID(int=2**100 + 17), uuid.UUID(int=99)


def _racks_value() -> bytes:
    """A partition metadata value with racks, as Kafka 3.9 wrote it."""
    cls = C.ConsumerGroupPartitionMetadataValue
    pm = cls.TopicMetadata.PartitionMetadata
    value = cls(version=0, topics=[cls.TopicMetadata(
        topic_id=T1, topic_name="t\u00e9", num_partitions=2,
        partition_metadata=[pm(partition=0, racks=["r1", "r2"]), pm(partition=1, racks=[])])])
    return bytes(value.encode())


def _entries() -> list[tuple[bytes, bytes | None]]:
    sub = Subscription(client_id="c", client_host="/127.0.0.1", rack_id="r1",
                       topic_names=("b", "a"), rebalance_timeout_ms=5000,
                       server_assignor="uniform")
    classic = ClassicMemberMetadata(45000, (ClassicProtocol("range", b"\x00\x01meta"),))
    member = Member("m1", sub, 3, 2, MemberState.UNREVOKED_PARTITIONS,
                    {T1: frozenset({0, 1}), T2: frozenset({5})}, {T2: frozenset({7})})
    stored = R.StoredGroup("consumer", 1, "range", "m", 5, [])
    return [
        C.group_epoch_record("g", 3),
        C.partition_metadata_record("g", {T1: TopicMetadata(T1, "t\u00e9", 2),
                                          T2: TopicMetadata(T2, "u", 8)}),
        (C.partition_metadata_record("g", {})[0], _racks_value()),
        C.member_record("g", "m1", sub),
        C.member_record("g", "m2", Subscription("c2", "/h", instance_id="i", classic=classic,
                                                topic_regex="x.*")),
        C.member_record("g", "m3", Subscription("c3", "/h", classic=ClassicMemberMetadata(0, ()))),
        C.target_epoch_record("g", 3),
        C.target_member_record("g", "m1", member.assigned),
        C.current_assignment_record("g", member),
        (R.group_key("classic"), R.group_value(stored)),
        (R.offset_key("g", "t", 0), R.offset_value(OffsetAndMetadata(5, 1, "m", 1000))),
        (b"\x00\x63\x00\x01s", b"\x00\x00\x00\x00\x00\x01\x00"),   # type 99
        *C.group_tombstones("g", ["m1", "m2", "m3"]),
    ]


def test_offsets_decoder_prints_consumer_group_records_as_kafka(tmp_path):
    _require_kafka()
    d = tmp_path / "__consumer_offsets-0"
    d.mkdir()
    batch = build_batch([(k, v, None, 1_700_000_000_000) for k, v in _entries()])
    (d / "00000000000000000000.log").write_bytes(batch)
    args = ["--files", "__consumer_offsets-0/00000000000000000000.log", "--offsets-decoder"]
    kafka, ours = (subprocess.run([str(exe), *args], capture_output=True, text=True,
                                  timeout=120, cwd=tmp_path) for exe in (KAFKA_DUMP, OURS))
    assert kafka.returncode == ours.returncode == 0, (kafka.stderr, ours.stderr)
    assert "Traceback" not in ours.stderr
    assert '"classicMemberMetadata":null' in kafka.stdout     # the case is covered
    assert ours.stdout.splitlines() == kafka.stdout.splitlines()
