"""Transaction APIs over the wire: WriteTxnMarkers, DescribeProducers,
FindCoordinator(transaction), Fetch read_committed with aborted_transactions,
TxnOffsetCommit with a producer epoch newer than the coordinator's.

A producer id from InitProducerId (no transactional id) writes a transactional
batch; WriteTxnMarkers v1 then aborts it exactly as a remote coordinator would.
The module's broker runs with transaction.partition.verification.enable=false: with
it on, Kafka 3.9 (and kafkapy) refuse a transactional batch its coordinator does not
know.  The TxnOffsetCommit test has a broker of its own with verification on.
"""
from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import REQUESTS
from kafkapy.records.record import build_batch
from tests.support.broker_process import BrokerProcess
from tests.support.wire import WireClient, until

Produce, Fetch, Markers, Describe = REQUESTS[0], REQUESTS[1], REQUESTS[27], REQUESTS[61]
TOPIC = "txn-wire"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with BrokerProcess(tmp_path_factory.mktemp("broker") / "logs", overrides={
            "transaction.partition.verification.enable": "false"}).start() as b:
        yield b


def _produce(client, records: bytes):
    r = client.request(0, 9, transactional_id="wire-txn", acks=-1, timeout_ms=5000, topic_data=[
        Produce.TopicProduceData(name=TOPIC, partition_data=[
            Produce.TopicProduceData.PartitionProduceData(index=0, records=records)])])
    return r.responses[0].partition_responses[0]


def _fetch(client, isolation: int):
    r = client.request(1, 12, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
                       isolation_level=isolation, session_id=0, session_epoch=-1,
                       topics=[Fetch.FetchTopic(topic=TOPIC, partitions=[
                           Fetch.FetchTopic.FetchPartition(
                               partition=0, current_leader_epoch=-1, fetch_offset=0,
                               last_fetched_epoch=-1, log_start_offset=-1,
                               partition_max_bytes=1 << 20)])],
                       forgotten_topics_data=[], rack_id="")
    return r.responses[0].partitions[0]


def _markers(client, pid, epoch, commit, partitions, coordinator_epoch=0):
    r = client.request(27, 1, markers=[Markers.WritableTxnMarker(
        producer_id=pid, producer_epoch=epoch, transaction_result=commit,
        coordinator_epoch=coordinator_epoch,
        topics=[Markers.WritableTxnMarker.WritableTxnMarkerTopic(name=t, partition_indexes=[p])
                for t, p in partitions])])
    return [(t.name, p.partition_index, p.error_code)
            for t in r.markers[0].topics for p in t.partitions]


def _producers(client):
    r = client.request(61, 0, topics=[Describe.TopicRequest(name=TOPIC, partition_indexes=[0])])
    return r.topics[0].partitions[0].active_producers


def test_write_txn_markers_over_the_wire(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result()
    client = WireClient(broker.bootstrap)
    try:
        init = client.request(22, 4, transactional_id=None, transaction_timeout_ms=60000,
                              producer_id=-1, producer_epoch=-1)
        pid, epoch = init.producer_id, init.producer_epoch
        batch = build_batch([(None, b"v%d" % i, (), int(time.time() * 1000)) for i in range(3)],
                            producer_id=pid, producer_epoch=epoch, base_sequence=0,
                            is_transactional=True)
        assert _produce(client, batch).error_code == 0
        [open_state] = _producers(client)
        assert (open_state.producer_id, open_state.current_txn_start_offset) == (pid, 0)
        assert _fetch(client, 1).last_stable_offset == 0

        assert _markers(client, pid, epoch, False, [(TOPIC, 0), ("no-such-topic", 0)],
                        coordinator_epoch=7) == [(TOPIC, 0, 0),
                                                 ("no-such-topic", 0,
                                                  ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
        # A marker from an older coordinator epoch, or an older producer epoch, is refused.
        assert _markers(client, pid, epoch, True, [(TOPIC, 0)], coordinator_epoch=6) == \
            [(TOPIC, 0, ErrorCode.TRANSACTION_COORDINATOR_FENCED)]
        assert _markers(client, pid, epoch - 1, True, [(TOPIC, 0)], coordinator_epoch=7) == \
            [(TOPIC, 0, ErrorCode.INVALID_PRODUCER_EPOCH)]

        committed = _fetch(client, 1)
        assert committed.last_stable_offset == committed.high_watermark == 4
        assert [(a.producer_id, a.first_offset) for a in committed.aborted_transactions] == \
            [(pid, 0)]
        assert _fetch(client, 0).aborted_transactions is None
        [closed] = _producers(client)
        assert (closed.current_txn_start_offset, closed.coordinator_epoch) == (-1, 7)
    finally:
        client.close()


def test_find_coordinator_for_transactional_id(broker):
    client = WireClient(broker.bootstrap)
    try:
        # The first lookup creates __transaction_state; as in Kafka it is answered
        # COORDINATOR_NOT_AVAILABLE until the controller has brought the topic online.
        for _ in range(600):
            r = client.request(10, 3, key="some-txn", key_type=1)
            if r.error_code != ErrorCode.COORDINATOR_NOT_AVAILABLE:
                break
            time.sleep(0.05)
        assert (r.error_code, r.node_id) == (0, 0)
        described = client.request(65, 0, transactional_ids=["never-used"])
        assert described.transaction_states[0].error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
        listed = client.request(66, 1, state_filters=["Bogus"], producer_id_filters=[],
                                duration_filter=-1)
        assert (listed.error_code, listed.unknown_state_filters) == (0, ["Bogus"])
    finally:
        client.close()




def test_txn_offset_commit_with_a_newer_epoch_is_refused_and_the_transaction_commits(
        fresh_broker):
    """Transaction verification on (the default).  Once the transaction has offsets in the
    group's offsets partition, Kafka 3.9 accepts a TxnOffsetCommit with a newer producer
    epoch than the coordinator's and then cannot write the COMMIT marker there (the
    transaction never completes, its offsets never show).  kafkapy refuses that epoch with
    INVALID_PRODUCER_EPOCH; the transaction commits and its offsets are the group's."""
    client = WireClient(fresh_broker.bootstrap)
    TxnOffsetCommit = REQUESTS[28]
    tid, group = "toc-epoch", "toc-epoch-group"

    def commit_offset(epoch, offset):
        r = client.request(28, 3, transactional_id=tid, group_id=group, producer_id=pid,
                           producer_epoch=epoch, generation_id=-1, member_id="",
                           group_instance_id=None, topics=[
                               TxnOffsetCommit.TxnOffsetCommitRequestTopic(name=TOPIC, partitions=[
                                   TxnOffsetCommit.TxnOffsetCommitRequestTopic
                                   .TxnOffsetCommitRequestPartition(
                                       partition_index=0, committed_offset=offset,
                                       committed_leader_epoch=-1, committed_metadata="")])])
        return r.topics[0].partitions[0].error_code

    try:
        admin = AdminClient({"bootstrap.servers": fresh_broker.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result()
        for key, key_type in ((tid, 1), (group, 0)):
            found = until(lambda: client.request(10, 1, key=key, key_type=key_type),
                           lambda r: r.error_code == 0)
            assert found.error_code == 0
        init = until(lambda: client.request(22, 1, transactional_id=tid,
                                             transaction_timeout_ms=60000),
                      lambda r: r.error_code == 0)
        pid, epoch = init.producer_id, init.producer_epoch
        assert client.request(25, 1, transactional_id=tid, producer_id=pid,
                              producer_epoch=epoch, group_id=group).error_code == 0
        assert commit_offset(epoch, 3) == 0
        assert commit_offset(epoch + 4, 7) == ErrorCode.INVALID_PRODUCER_EPOCH
        assert client.request(26, 1, transactional_id=tid, producer_id=pid,
                              producer_epoch=epoch, committed=True).error_code == 0

        state = until(lambda: client.request(65, 0, transactional_ids=[tid])
                       .transaction_states[0].transaction_state,
                       lambda s: s == "CompleteCommit")
        assert state == "CompleteCommit"
        fetched = until(lambda: client.request(9, 7, group_id=group, require_stable=True,
                                                topics=None),
                         lambda r: r.error_code == 0 and r.topics
                         and r.topics[0].partitions[0].error_code == 0)
        assert [(t.name, p.committed_offset) for t in fetched.topics for p in t.partitions] \
            == [(TOPIC, 3)]
        again = client.request(22, 1, transactional_id=tid, transaction_timeout_ms=60000)
        assert (again.error_code, again.producer_id, again.producer_epoch) == \
            (0, pid, epoch + 1)
    finally:
        client.close()
