"""How Fetch reads a log, as Kafka's UnifiedLog.read and Partition.fetchRecords do.

Over real sockets: a read stops at a byte count, not at a batch boundary, so a cut
last batch is sent (clients drop it); one read never crosses into the next segment;
a follower that is not an assigned replica is refused; a fetcher whose last fetched
epoch is unknown past the log gets OFFSET_OUT_OF_RANGE.
"""
from __future__ import annotations

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import REQUESTS
from kafkapy.records.batch import iter_headers
from kafkapy.records.record import build_batch
from tests.support.wire import WireClient

Fetch = REQUESTS[1]
Produce = REQUESTS[0]
TS = 1_800_000_000_000


@pytest.fixture(scope="module")
def client(broker):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic("reads", 1, 1),
                         NewTopic("segments", 1, 1, topic_configs={"segment.bytes": "1024"})])
    admin.close()
    c = WireClient(broker.bootstrap)
    for topic, batches in (("reads", 3), ("segments", 12)):
        for n in range(batches):
            batch = build_batch([(b"k", b"v" * 100, [], TS + i) for i in range(5)])
            r = c.request(0, 9, transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
                Produce.TopicProduceData(name=topic, partition_data=[
                    Produce.TopicProduceData.PartitionProduceData(index=0, records=batch)])])
            assert r.responses[0].partition_responses[0].error_code == 0
    yield c
    c.close()


def _fetch(c, topic, offset=0, partition_max_bytes=1 << 20, replica_id=-1, **part):
    r = c.request(1, 12, replica_id=replica_id, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
                  isolation_level=0, session_id=0, session_epoch=-1, topics=[
                      Fetch.FetchTopic(topic=topic, partitions=[Fetch.FetchTopic.FetchPartition(
                          partition=0, fetch_offset=offset,
                          partition_max_bytes=partition_max_bytes, **part)])],
                  forgotten_topics_data=[], rack_id="")
    return r.responses[0].partitions[0]


def test_a_read_stops_at_its_byte_limit_inside_a_batch(client):
    whole = _fetch(client, "reads").records
    batch = iter_headers(whole)
    first = next(iter(batch)).size
    cut = _fetch(client, "reads", partition_max_bytes=first + 30).records
    assert len(cut) == first + 30
    assert cut == whole[:first + 30]
    # Below the first batch's size that batch still comes whole (KIP-74).
    assert _fetch(client, "reads", partition_max_bytes=10).records == whole[:first]


def test_a_read_stays_in_one_segment(client):
    records = _fetch(client, "segments").records
    headers = iter_headers(records)
    offsets = [h.base_offset for h in headers]
    assert not headers.truncated
    # A 1024-byte segment holds one of these ~620-byte batches; 1 MiB could take all 12.
    assert offsets == [0]
    assert [h.base_offset for h in iter_headers(_fetch(client, "segments", 10).records)] == [10]


@pytest.mark.parametrize("replica_id,epoch,error", [
    (5, -1, ErrorCode.NOT_LEADER_OR_FOLLOWER),
    (5, 0, ErrorCode.UNKNOWN_LEADER_EPOCH),
    (0, -1, ErrorCode.NOT_LEADER_OR_FOLLOWER),  # the leader itself is no follower
])
def test_a_follower_must_be_another_replica(client, replica_id, epoch, error):
    part = _fetch(client, "reads", replica_id=replica_id, current_leader_epoch=epoch)
    assert (part.error_code, part.records) == (error, b"")


def test_an_unknown_last_fetched_epoch_is_out_of_range(client):
    part = _fetch(client, "reads", offset=5, last_fetched_epoch=7)
    assert (part.error_code, part.records) == (ErrorCode.OFFSET_OUT_OF_RANGE, b"")
    assert _fetch(client, "reads", offset=5, last_fetched_epoch=0).error_code == 0


def test_v16_names_the_leader_with_not_leader_or_follower(broker, client):
    metadata = REQUESTS[3]
    r = client.request(3, 12, topics=[metadata.MetadataRequestTopic(name="reads")],
                       allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    topic_id, port = r.topics[0].topic_id, int(broker.bootstrap.rsplit(":", 1)[1])
    r = client.request(1, 16, replica_state=Fetch.ReplicaState(replica_id=5, replica_epoch=-1),
                       max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, topics=[
                           Fetch.FetchTopic(topic_id=topic_id, partitions=[
                               Fetch.FetchTopic.FetchPartition(partition=0, fetch_offset=0,
                                                               partition_max_bytes=100)])],
                       forgotten_topics_data=[], rack_id="")
    part = r.responses[0].partitions[0]
    assert part.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (part.current_leader.leader_id, part.current_leader.leader_epoch) == (0, 0)
    assert [(n.node_id, n.host, n.port) for n in r.node_endpoints] == [(0, "127.0.0.1", port)]
