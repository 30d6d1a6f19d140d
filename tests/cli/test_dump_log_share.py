"""``kafkapy-dump-log`` decodes share groups' records as Kafka 4.x's ``kafka-dump-log.sh``
prints them (``key: {"type":"<t>","data":{...}} payload: {"version":"<v>","data":{...}}``,
the JSON of Kafka's generated converters):

- on a real broker's log dir after a share group ran over raw requests (a member joins,
  opens a share session, acquires three records, accepts, rejects and releases them,
  leaves): ``--offsets-decoder`` prints ``__consumer_offsets``' share group records (types
  10-15, their tombstones) and ``--share-group-state-decoder`` ``__share_group_state``'s
  ShareSnapshot and ShareUpdate records;
- on segments made by hand: the zero uuid, the tagged DeliveryCompleteCount (only when not
  -1), a ShareSnapshot tombstone, a value version no schema has, record types neither
  topic knows, a record without a key.

Kafka 3.9's tool knows none of these (no Kafka 4.x tool is at hand), so the expected lines
are written out here from the schemas in ``protocol/``.
"""
from __future__ import annotations

import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from kafkapy.protocol.messages import REQUESTS
from kafkapy.protocol.share_group_apis import ShareAcknowledgeRequest, ShareFetchRequest
from kafkapy.protocol.share_records import (ShareGroupTargetAssignmentMetadataKey,
                                            ShareGroupTargetAssignmentMetadataValue,
                                            ShareSnapshotKey, ShareSnapshotValue,
                                            ShareUpdateKey, ShareUpdateValue)
from kafkapy.records.record import build_batch
from kafkapy.testing import broker
from tests.support.request_fields import fields
from tests.support.wire import WireClient, until

pytestmark = pytest.mark.timeout(300)

OURS = Path(sys.executable).parent / "kafkapy-dump-log"
GROUP = "dump-share"
TOPIC = "jobs"
SEGMENT = "00000000000000000000.log"
_RETRIABLE = (14, 15, 16)      # coordinator loading, not available, not coordinator
_ACCEPT, _RELEASE, _REJECT = 1, 2, 3
_Fetch = ShareFetchRequest[1]
_Ack = ShareAcknowledgeRequest[1]


def dump(log_dir: Path, topic: str, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(OURS), "--files", f"{topic}-0/{SEGMENT}", *options],
                          capture_output=True, text=True, timeout=120, cwd=log_dir)


def decoded(out: str) -> list[str]:
    """The ``key: ... payload: ...`` part of each record line (``--skip-record-metadata``)."""
    return [line[2:] for line in out.splitlines() if line.startswith("| ")]


def kafka_uuid(value: uuid.UUID) -> str:
    """Kafka's Uuid.toString, written out: URL-safe base64 without padding."""
    import base64
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


# ------------------------------------------------------------------ a share group's log dir

class _Member:
    """One share group member over raw requests."""

    def __init__(self, wire: WireClient, topic_id: uuid.UUID) -> None:
        self.wire = wire
        self.topic_id = topic_id
        self.id = str(uuid.uuid4())
        self.epoch = 0

    def heartbeat(self, epoch: int, topics=None):
        return until(lambda: self.wire.request(76, 1, group_id=GROUP, member_id=self.id,
                                               member_epoch=epoch, rack_id=None,
                                               subscribed_topic_names=topics),
                     lambda r: r.error_code not in _RETRIABLE)

    def join_until_assigned(self) -> None:
        self.epoch = self.heartbeat(0, [TOPIC]).member_epoch

        def beat():
            r = self.heartbeat(self.epoch, [TOPIC])
            self.epoch = r.member_epoch
            return r
        r = until(beat, lambda r: r.assignment and r.assignment.topic_partitions)
        assert r.assignment.topic_partitions, r

    def share_fetch(self, session_epoch: int, max_wait_ms: int):
        return self.wire.request(78, 1, group_id=GROUP, member_id=self.id,
                                 share_session_epoch=session_epoch, max_wait_ms=max_wait_ms,
                                 min_bytes=1, max_bytes=1 << 20, max_records=500,
                                 batch_size=500, forgotten_topics_data=[], topics=[
                                     _Fetch.FetchTopic(topic_id=self.topic_id, partitions=[
                                         _Fetch.FetchTopic.FetchPartition(
                                             partition_index=0, acknowledgement_batches=[])])])

    def acknowledge(self, session_epoch: int, first: int, types: list[int]):
        part = _Ack.AcknowledgeTopic.AcknowledgePartition
        return self.wire.request(79, 1, group_id=GROUP, member_id=self.id,
                                 share_session_epoch=session_epoch, topics=[
                                     _Ack.AcknowledgeTopic(topic_id=self.topic_id, partitions=[
                                         part(partition_index=0, acknowledgement_batches=[
                                             part.AcknowledgementBatch(
                                                 first_offset=first,
                                                 last_offset=first + len(types) - 1,
                                                 acknowledge_types=types)])])])


def _produce(wire: WireClient, count: int) -> None:
    P = REQUESTS[0]
    batch = build_batch([(b"k", f"v{i}".encode(), [], 1_700_000_000_000) for i in range(count)])
    r = wire.request(0, 9, transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
        P.TopicProduceData(name=TOPIC, partition_data=[
            P.TopicProduceData.PartitionProduceData(index=0, records=batch)])])
    assert r.responses[0].partition_responses[0].error_code == 0


@pytest.fixture(scope="module")
def share_log_dir(tmp_path_factory):
    """(log dir, member id, topic id) after a share group ran on a real broker."""
    log_dir = tmp_path_factory.mktemp("share-dump")
    with broker(settings={"offsets.topic.num.partitions": "1",
                          "share.coordinator.state.topic.num.partitions": "1"},
                log_dir=log_dir) as b:
        wire = WireClient(b.bootstrap, timeout=30)
        try:
            created = wire.request(19, 7, **fields(19, topics=[dict(
                name=TOPIC, num_partitions=1, replication_factor=1, assignments=[],
                configs=[])], timeout_ms=10000, validate_only=False))
            assert created.topics[0].error_code == 0
            until(lambda: wire.request(10, 4, key_type=0, coordinator_keys=[GROUP]),
                  lambda r: r.coordinators[0].error_code == 0)
            member = _Member(wire, b.server.cache.topic(TOPIC).topic_id)
            member.join_until_assigned()
            # The session opens once the share partition is loaded (its start offset is the
            # log end then: share.auto.offset.reset=latest); the records come after.
            until(lambda: member.share_fetch(0, 0),
                  lambda r: r.error_code == 0 and b.server.share_partitions.share_partition(
                      GROUP, member.topic_id, 0) is not None)
            _produce(wire, 3)
            fetched = member.share_fetch(1, 5000)
            got = [(a.first_offset, a.last_offset, a.delivery_count)
                   for t in fetched.responses for p in t.partitions for a in p.acquired_records]
            assert got == [(0, 2, 1)], fetched
            acked = member.acknowledge(2, 0, [_ACCEPT, _REJECT, _RELEASE])
            assert acked.error_code == 0 and acked.responses[0].partitions[0].error_code == 0
            assert member.heartbeat(-1).error_code == 0
        finally:
            wire.close()
    return log_dir, member.id, member.topic_id


def test_offsets_decoder_prints_share_group_records(share_log_dir):
    log_dir, member, topic_id = share_log_dir
    out = dump(log_dir, "__consumer_offsets", "--offsets-decoder", "--skip-record-metadata")
    assert out.returncode == 0 and out.stderr == "", out.stderr
    lines = decoded(out.stdout)
    def group_key(t: int) -> str:
        return 'key: {"type":"%d","data":{"groupId":"%s"}}' % (t, GROUP)

    def member_key(t: int) -> str:
        return 'key: {"type":"%d","data":{"groupId":"%s","memberId":"%s"}}' % (t, GROUP, member)
    tid = kafka_uuid(topic_id)
    assigned = f'[{{"topicId":"{tid}","partitions":[0]}}]'
    assert member_key(10) + (
        ' payload: {"version":"0","data":{"rackId":null,"clientId":"wire-test",'
        '"clientHost":"/127.0.0.1","subscribedTopicNames":["jobs"]}}') in lines
    assert member_key(13) + (
        f' payload: {{"version":"0","data":{{"topicPartitions":{assigned}}}}}') in lines
    assert any(re.fullmatch(re.escape(member_key(14)) + (
        r' payload: \{"version":"0","data":\{"memberEpoch":\d+,"previousMemberEpoch":\d+,'
        r'"state":0,"assignedPartitions":') + re.escape(assigned) + r"\}\}", line)
        for line in lines), lines
    assert any(re.fullmatch(re.escape(group_key(11)) + (
        r' payload: \{"version":"0","data":\{"epoch":\d+,"metadataHash":-?\d+\}\}'), line)
        for line in lines), lines
    assert any(re.fullmatch(re.escape(group_key(12)) + (
        r' payload: \{"version":"0","data":\{"assignmentEpoch":\d+\}\}'), line)
        for line in lines), lines
    assert any(re.fullmatch(re.escape(group_key(15)) + (
        r' payload: \{"version":"0","data":\{"initializingTopics":\[\],"initializedTopics":'
        rf'\[\{{"topicId":"{tid}","topicName":"jobs","partitions":\[0\],'
        r'"createTimestamp":\d+\}\],"deletingTopics":\[\]\}\}'), line)
        for line in lines), lines
    for record_type in (14, 13, 10):     # the member left
        assert member_key(record_type) + " payload: <DELETE>" in lines
    assert all(line.startswith('key: {"type":"1') for line in lines), lines


def test_share_group_state_decoder_prints_snapshots_and_updates(share_log_dir):
    log_dir, _member, topic_id = share_log_dir
    out = dump(log_dir, "__share_group_state", "--share-group-state-decoder",
               "--skip-record-metadata")
    assert out.returncode == 0 and out.stderr == "", out.stderr
    lines = decoded(out.stdout)
    key = ('key: {{"type":"{t}","data":{{"groupId":"%s","topicId":"%s","partition":0}}}}'
           % (GROUP, kafka_uuid(topic_id)))
    snapshot = re.escape(key.format(t=0)) + (
        r' payload: \{"version":"0","data":\{"snapshotEpoch":0,"stateEpoch":1,'
        r'"leaderEpoch":-1,"startOffset":-1,"createTimestamp":(\d+),"writeTimestamp":\1,'
        r'"stateBatches":\[\]\}\}')
    assert re.fullmatch(snapshot, lines[0]), lines[0]     # initialized by the group coordinator
    updates = [line for line in lines if line.startswith(key.format(t=1) + " payload: ")]
    # offsets 0 (accepted) and 1 (rejected) done: the start offset moves past them; 2 was
    # released after its first delivery
    assert updates[-1] == key.format(t=1) + (
        ' payload: {"version":"0","data":{"snapshotEpoch":0,"leaderEpoch":0,"startOffset":2,'
        '"deliveryCompleteCount":0,"stateBatches":[{"firstOffset":2,"lastOffset":2,'
        '"deliveryState":0,"deliveryCount":1}]}}')
    plain = dump(log_dir, "__share_group_state", "--print-data-log")
    assert '"type":"0"' not in plain.stdout     # not decoded without the option


# ------------------------------------------------------------------ segments made by hand

_T = uuid.UUID(bytes=bytes(range(16)))       # Kafka prints it AAECAwQFBgcICQoLDA0ODw


def _snapshot_key(topic_id) -> bytes:
    return bytes(ShareSnapshotKey(version=0, group_id="g", topic_id=topic_id,
                                  partition=3).encode())


def _write(tmp_path: Path, topic: str, entries) -> Path:
    d = tmp_path / f"{topic}-0"
    d.mkdir()
    (d / SEGMENT).write_bytes(build_batch([(k, v, None, 1_700_000_000_000)
                                           for k, v in entries]))
    return tmp_path


def test_share_state_records_made_by_hand(tmp_path):
    batch = ShareSnapshotValue.StateBatch
    snapshot = ShareSnapshotValue(
        version=0, snapshot_epoch=4, state_epoch=2, leader_epoch=7, start_offset=10,
        delivery_complete_count=7, create_timestamp=11, write_timestamp=12,
        state_batches=[batch(first_offset=10, last_offset=12, delivery_state=4,
                             delivery_count=5)])
    update = ShareUpdateValue(version=0, snapshot_epoch=4, leader_epoch=7, start_offset=13,
                              delivery_complete_count=-1, state_batches=[])
    update_key = bytes(ShareUpdateKey(version=1, group_id="g", topic_id=_T,
                                      partition=3).encode())
    encoded = bytes(snapshot.encode())
    log_dir = _write(tmp_path, "__share_group_state", [
        (_snapshot_key(None), encoded),
        (update_key, bytes(update.encode())),
        (_snapshot_key(_T), None),
        (b"\x00\x02\x00\x01g", b"\x00\x00"),
        (_snapshot_key(_T), b"\x00\x01" + encoded[2:]),
    ])
    out = dump(log_dir, "__share_group_state", "--share-group-state-decoder",
               "--skip-record-metadata")
    assert out.returncode == 0, out.stderr
    assert decoded(out.stdout) == [
        'key: {"type":"0","data":{"groupId":"g","topicId":"AAAAAAAAAAAAAAAAAAAAAA",'
        '"partition":3}} payload: {"version":"0","data":{"snapshotEpoch":4,"stateEpoch":2,'
        '"leaderEpoch":7,"startOffset":10,"deliveryCompleteCount":7,"createTimestamp":11,'
        '"writeTimestamp":12,"stateBatches":[{"firstOffset":10,"lastOffset":12,'
        '"deliveryState":4,"deliveryCount":5}]}}',
        'key: {"type":"1","data":{"groupId":"g","topicId":"AAECAwQFBgcICQoLDA0ODw",'
        '"partition":3}} payload: {"version":"0","data":{"snapshotEpoch":4,"leaderEpoch":7,'
        '"startOffset":13,"stateBatches":[]}}',
        'key: {"type":"0","data":{"groupId":"g","topicId":"AAECAwQFBgcICQoLDA0ODw",'
        '"partition":3}} payload: <DELETE>',
        "key: Unknown record type 2 at offset 3, skipping.",
        "key: Error at offset 4, skipping. Could not read record with version 1 from "
        "value's buffer due to: Can't read version 1 of ShareSnapshotValue.",
    ]


def test_offsets_decoder_knows_share_types_but_not_the_state_topics(tmp_path):
    target = bytes(ShareGroupTargetAssignmentMetadataKey(version=12, group_id="g").encode())
    value = bytes(ShareGroupTargetAssignmentMetadataValue(version=0, assignment_epoch=5).encode())
    log_dir = _write(tmp_path, "__consumer_offsets", [
        (target, value),
        (b"\x00\x09\x00\x01g", b"\x00\x00"),     # Kafka 4.0's ShareGroupPartitionMetadata
        (b"\x00\x10\x00\x01g", b"\x00\x00"),
    ])
    out = dump(log_dir, "__consumer_offsets", "--offsets-decoder", "--skip-record-metadata")
    assert out.returncode == 0, out.stderr
    assert decoded(out.stdout) == [
        'key: {"type":"12","data":{"groupId":"g"}} payload: '
        '{"version":"0","data":{"assignmentEpoch":5}}',
        "key: Unknown record type 9 at offset 1, skipping.",
        "key: Unknown record type 16 at offset 2, skipping.",
    ]
    state = dump(log_dir, "__consumer_offsets", "--share-group-state-decoder",
                 "--skip-record-metadata")
    assert decoded(state.stdout)[0] == "key: Unknown record type 12 at offset 0, skipping."


def test_a_record_without_a_key_stops_the_tool(tmp_path):
    log_dir = _write(tmp_path, "__share_group_state", [(None, b"\x00\x00")])
    out = dump(log_dir, "__share_group_state", "--share-group-state-decoder")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.splitlines()[0] == (
        'Exception in thread "main" java.lang.RuntimeException: Failed to decode message at '
        "offset 0 using the specified decoder (message had a missing key)")
