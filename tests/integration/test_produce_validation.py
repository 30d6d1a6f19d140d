"""Produce validation over a real socket, checked against what Kafka 3.9 answers.

- A Produce with no topics is answered (empty responses) for acks=-1 and acks=1;
  the frames are written byte by byte here, not by a client library.
- Request-level errors (unknown partition, records that are not exactly one v2
  batch, corrupt or too large batches) carry log_start_offset -1 and no message;
  errors raised once the log is reached carry the partition's log start offset.
- A compacted topic refuses a batch with keyless records: INVALID_RECORD,
  record_errors naming each one by index, Kafka's error message; nothing stored.
- Transactional batches are verified with the transaction coordinator (KIP-890):
  unknown producer id -> INVALID_PRODUCER_ID_MAPPING, stale epoch ->
  INVALID_PRODUCER_EPOCH, partition not in the transaction -> INVALID_TXN_STATE
  (v11: TRANSACTION_ABORTABLE); without a transactional id ->
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
- The stored batch carries the largest record timestamp in its header (CreateTime), with
  rebuilt attributes and CRC, byte for byte as Kafka 3.9 stores it; ListOffsets by time
  and MAX_TIMESTAMP follow the records, not what the producer claimed.
"""
from __future__ import annotations

import struct
import time

import pytest

from kafkapy.protocol.messages import REQUESTS, RESPONSES
from kafkapy.records.batch import crc32c, is_crc_valid, read_header
from kafkapy.records.record import build_batch
from tests.support.wire import WireClient, stored_records
from tests.support.batchcheck_craft import claimed

Produce = REQUESTS[0]
CreateTopics = REQUESTS[19]
DeleteRecords = REQUESTS[21]
AddPartitions = REQUESTS[24]
TS = 1_800_000_000_000


def batch(keys=(b"k",), codec=0, producer=(-1, -1, -1), transactional=False) -> bytes:
    pid, epoch, seq = producer
    return build_batch([(k, b"v%d" % i, (), TS + i) for i, k in enumerate(keys)],
                       compression=codec, producer_id=pid, producer_epoch=epoch,
                       base_sequence=seq, is_transactional=transactional)


def produce(client, topic, records, version=9, acks=-1, partition=0, transactional_id=None):
    r = client.request(0, version, transactional_id=transactional_id, acks=acks,
                       timeout_ms=5000,
                       topic_data=[Produce.TopicProduceData(name=topic, partition_data=[
                           Produce.TopicProduceData.PartitionProduceData(
                               index=partition, records=records)])])
    return r.responses[0].partition_responses[0]


def create(client, name, partitions=1, **configs):
    r = client.request(19, 5, topics=[CreateTopics.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1, assignments=[],
        configs=[CreateTopics.CreatableTopic.CreatableTopicConfig(name=k.replace("_", "."),
                                                                  value=v)
                 for k, v in configs.items()])], timeout_ms=5000, validate_only=False)
    assert r.topics[0].error_code == 0


@pytest.fixture(scope="module")
def client(broker):
    c = WireClient(broker.bootstrap)
    create(c, "plain")
    create(c, "compacted", cleanup_policy="compact,delete", max_message_bytes="2000")
    yield c
    c.close()


# -- a Produce with no topics -----------------------------------------------------------

def _empty_produce_frame(version: int, acks: int, correlation: int) -> bytes:
    """Produce with an empty topic list, encoded by hand (header v1 / v2 when flexible)."""
    client_id = b"raw"
    header = struct.pack(">hhih", 0, version, correlation, len(client_id)) + client_id
    if version >= 9:
        header += b"\x00"  # no tagged fields
        body = b"\x00" + struct.pack(">hi", acks, 5000) + b"\x01" + b"\x00"
    else:
        body = struct.pack(">hhii", -1, acks, 5000, 0)  # null id, acks, timeout, 0 topics
    return struct.pack(">i", len(header) + len(body)) + header + body


@pytest.mark.parametrize("version", [3, 7, 9, 11])
@pytest.mark.parametrize("acks", [-1, 1])
def test_produce_without_topics_is_answered(broker, version, acks):
    c = WireClient(broker.bootstrap)
    try:
        c.send_raw(_empty_produce_frame(version, acks, 77))
        frame = c.recv_frame()
        response = RESPONSES[0].decode(frame, version=version, header=True)
        assert response.header.correlation_id == 77
        assert list(response.responses) == [] and response.throttle_time_ms == 0
        assert c.request(18, 0).error_code == 0, "the connection keeps serving"
    finally:
        c.close()


# -- log start offsets and messages of failed partitions --------------------------------

def _delete_to(client, topic: str, offset: int) -> None:
    r = client.request(21, 2, topics=[DeleteRecords.DeleteRecordsTopic(name=topic, partitions=[
        DeleteRecords.DeleteRecordsTopic.DeleteRecordsPartition(partition_index=0,
                                                               offset=offset)])],
                       timeout_ms=5000)
    assert r.topics[0].partitions[0].error_code == 0


def test_failed_partitions_carry_kafkas_log_start_offset(client):
    assert produce(client, "compacted", batch([b"a", b"b", b"c"])).error_code == 0
    _delete_to(client, "compacted", 2)
    corrupt = bytearray(batch())
    corrupt[-1] ^= 0xFF
    shifted = bytearray(batch())
    struct.pack_into(">q", shifted, 0, 7)  # base offset must be 0 (checked in the log)
    cases = {  # records -> (error, log start offset)
        b"": (87, -1),
        batch() + batch(): (87, -1),
        batch() + b"x" * 20: (2, -1),
        bytes(corrupt): (2, -1),
        batch([b"k" * 3000]): (10, -1),
        bytes(shifted): (87, 2),
        batch([None]): (87, 2),
    }
    for records, expected in cases.items():
        r = produce(client, "compacted", records)
        assert (r.error_code, r.log_start_offset, r.base_offset) == (*expected, -1), records[:20]
        if not r.record_errors:
            assert r.error_message is None
    unknown = produce(client, "compacted", batch(), partition=9)
    assert (unknown.error_code, unknown.log_start_offset) == (3, -1)
    ok = produce(client, "compacted", batch() + b"xyz")  # a tail too short for an entry
    assert (ok.error_code, ok.base_offset, ok.log_start_offset) == (0, 3, 2)


def test_invalid_acks_only_for_partitions_that_passed_the_request_checks(client):
    r = client.request(0, 9, transactional_id=None, acks=5, timeout_ms=5000, topic_data=[
        Produce.TopicProduceData(name="plain", partition_data=[
            Produce.TopicProduceData.PartitionProduceData(index=0, records=batch()),
            Produce.TopicProduceData.PartitionProduceData(index=1, records=batch()),
            Produce.TopicProduceData.PartitionProduceData(index=0, records=b"")])])
    assert [p.error_code for p in r.responses[0].partition_responses] == [21, 3, 87]


# -- compacted topics need keys ---------------------------------------------------------

@pytest.mark.parametrize("codec", [0, 1])
def test_compacted_topic_refuses_keyless_records(broker, codec):
    c = WireClient(broker.bootstrap)
    topic = f"keys-{codec}"
    create(c, topic, cleanup_policy="compact")
    r = produce(c, topic, batch([b"a", None, b"c", None, None, None], codec))
    assert (r.error_code, r.base_offset, r.log_start_offset) == (87, -1, 0)
    message = f"Compacted topic cannot accept message without key in topic partition {topic}-0"
    assert [(e.batch_index, e.batch_index_error_message) for e in r.record_errors] == [
        (i, message) for i in (1, 3, 4, 5)]
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{message}')" for i in (1, 3, 4))
    assert r.error_message == ("One or more records have been rejected due to 4 record errors "
                               "in total, and only showing the first three errors at most: "
                               f"[{shown}]")
    acks_1 = produce(c, topic, batch([None]), acks=1)
    assert acks_1.error_code == 87 and len(acks_1.record_errors) == 1
    stored = produce(c, topic, batch([b"a", b""], codec))
    assert (stored.error_code, stored.base_offset) == (0, 0), "refused batches stored nothing"
    c.close()


def test_unparsable_records_of_a_compacted_topic_are_invalid_record(client):
    garbage = bytearray(batch([b"a", b"b"]))
    garbage[61:66] = b"\xff\xff\xff\xff\x7f"
    struct.pack_into(">I", garbage, 17, crc32c(bytes(garbage[21:])))
    r = produce(client, "compacted", bytes(garbage))
    assert (r.error_code, list(r.record_errors), r.error_message) == (87, [], None)


# -- transaction verification -----------------------------------------------------------

def _init_transactional(client, transactional_id: str) -> tuple[int, int]:
    for _ in range(300):  # bounded: the coordinator loads its partition on first use
        found = client.request(10, 1, key=transactional_id, key_type=1)
        init = client.request(22, 4, transactional_id=transactional_id,
                              transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1)
        if found.error_code == 0 and init.error_code == 0:
            return init.producer_id, init.producer_epoch
        time.sleep(0.1)
    raise AssertionError(f"InitProducerId kept failing: {init.error_code}")


def test_transactional_batches_are_verified_with_the_coordinator(client):
    create(client, "txn-target", partitions=2)
    pid, epoch = _init_transactional(client, "verify-me")

    def txn(producer, sequence=0):
        return batch(producer=(producer[0], producer[1], sequence), transactional=True)

    def code(records, transactional_id="verify-me", version=9, partition=0):
        return produce(client, "txn-target", records, version=version, partition=partition,
                       transactional_id=transactional_id).error_code

    assert code(txn((999_999, 0)), transactional_id="nobody-knows-me") == 49
    assert code(txn((pid + 1000, epoch))) == 49
    assert code(txn((pid, epoch + 1))) == 47
    not_added = produce(client, "txn-target", txn((pid, epoch)), transactional_id="verify-me")
    assert (not_added.error_code, not_added.error_message) == (
        48, "Partition was not added to the transaction")
    assert code(txn((pid, epoch)), version=11) == 120
    assert code(txn((pid, epoch)), transactional_id=None) == 53
    idempotent = batch(producer=(999_999, 0, 0))
    assert code(idempotent, transactional_id="nobody-knows-me") == 0

    added = client.request(24, 3, v3_and_below_transactional_id="verify-me",
                           v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
                           v3_and_below_topics=[AddPartitions.AddPartitionsToTxnTopic(
                               name="txn-target", partitions=[0])])
    assert added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0
    assert code(txn((pid, epoch))) == 0
    assert code(txn((pid, epoch), 1), partition=1) == 48
    assert code(txn((pid + 1000, epoch))) == 49, "another producer id is verified again"
    ended = client.request(26, 3, transactional_id="verify-me", producer_id=pid,
                           producer_epoch=epoch, committed=False)
    assert ended.error_code == 0


def test_null_records_close_the_connection(broker):
    """Kafka 3.9 never answers this (NullPointerException); kafkapy closes the connection."""
    c = WireClient(broker.bootstrap)
    try:
        _, data = c.encode(0, 9, transactional_id=None, acks=1, timeout_ms=5000, topic_data=[
            Produce.TopicProduceData(name="plain", partition_data=[
                Produce.TopicProduceData.PartitionProduceData(index=0, records=None)])])
        c.send_raw(data)
        assert c.is_closed()
    finally:
        c.close()


# -- the stored batch's max timestamp -------------------------------------------------------
# Kafka 3.9's LogValidator writes the largest record timestamp into a CreateTime batch's
# header (LogAppendTime: the append time), rebuilding the attributes and the CRC when they
# change, so what a producer claims never reaches the time index, ListOffsets or retention.
# The expected bytes are what Kafka 3.9 stored for the same Produce v9 requests.



def _list_offsets(client, topic, timestamp) -> tuple[int, int]:
    ListOffsets = REQUESTS[2]
    r = client.request(2, 7, replica_id=-1, isolation_level=0, topics=[
        ListOffsets.ListOffsetsTopic(name=topic, partitions=[
            ListOffsets.ListOffsetsTopic.ListOffsetsPartition(
                partition_index=0, current_leader_epoch=-1, timestamp=timestamp)])])
    p = r.topics[0].partitions[0]
    assert p.error_code == 0
    return p.offset, p.timestamp


KAFKA_STORED = {
    # A record at -5: Kafka's maximum starts at -1 and -5 never beats it.
    "negative": (build_batch([(None, b"x", (), -5)]),
                 "00000000000000000000003900000000025b0ce96e000000000000ffffffffffff"
                 "fffbffffffffffffffffffffffffffffffffffffffffffff000000010e0000000102"
                 "7800"),
    # A claimed maximum far beyond the records, with attribute bits Kafka does not know.
    "claimed": (claimed(build_batch([(b"k", b"v", (), TS), (None, b"w", (), TS + 100)]),
                         TS + 10**9, attributes=0x0180),
                "0000000000000000000000430000000002317bb6e8000000000001000001a3185c50"
                "00000001a3185c5064ffffffffffffffffffffffffffff0000000210000000026b02"
                "76001000c8010201027700"),
    # Compressed: the header is patched in place, the payload kept as sent.
    "gzip": (claimed(build_batch([(b"k", b"v", (), TS), (None, b"w", (), TS + 7)],
                                  compression=1), TS + 10**9),
             "0000000000000000000000560000000002dee4b18d000100000001000001a3185c5000"
             "000001a3185c5007ffffffffffffffffffffffffffff000000021f8b08000000000000"
             "ff1360606060ca662a63e063e06362642a6700008b251fca11000000"),
    # A LogAppendTime batch sent to a CreateTime topic becomes CreateTime.
    "log-append-attribute": (build_batch([(b"k", b"v", (), TS)], timestamp_type=1),
                             "00000000000000000000003a00000000025aa52b6a000000000000000001a3"
                             "185c5000000001a3185c5000ffffffffffffffffffffffffffff0000000110"
                             "000000026b027600"),
}


@pytest.mark.parametrize("name", KAFKA_STORED)
def test_the_stored_max_timestamp_is_the_records_as_in_kafka(client, name):
    sent, kafka_stored = KAFKA_STORED[name]
    topic = f"max-timestamp-{name}"
    create(client, topic)
    assert produce(client, topic, sent).error_code == 0
    assert stored_records(client, topic).hex() == kafka_stored


def test_list_offsets_sees_the_records_timestamps_not_the_claimed_one(client):
    create(client, "max-timestamp-lookup")
    batch = claimed(build_batch([(b"k", b"v", (), TS), (None, b"w", (), TS + 100)]),
                    TS + 10**9)
    assert produce(client, "max-timestamp-lookup", batch).error_code == 0
    assert produce(client, "max-timestamp-lookup",
                   build_batch([(b"k", b"x", (), TS + 200)])).error_code == 0
    # Kafka 3.9's answers: MAX_TIMESTAMP (-3) is the last batch's record; lookups by time
    # find the first record at or after the target.
    assert _list_offsets(client, "max-timestamp-lookup", -3) == (2, TS + 200)
    assert _list_offsets(client, "max-timestamp-lookup", TS + 150) == (2, TS + 200)
    assert _list_offsets(client, "max-timestamp-lookup", TS + 50) == (1, TS + 100)
    assert _list_offsets(client, "max-timestamp-lookup", TS + 10**8) == (-1, -1)


def test_log_append_time_rebuilds_the_attributes_as_kafka(client):
    create(client, "max-timestamp-append-time", message_timestamp_type="LogAppendTime")
    sent = claimed(build_batch([(None, b"x", (), TS)]), TS, attributes=0x0180)
    r = produce(client, "max-timestamp-append-time", sent)
    assert r.error_code == 0
    h = read_header(stored_records(client, "max-timestamp-append-time"))
    # Kafka 3.9 stored attributes 0x0008 (unknown bits cleared), the append time, a new CRC.
    assert (h.attributes, h.max_timestamp) == (0x08, r.log_append_time_ms)
    assert is_crc_valid(stored_records(client, "max-timestamp-append-time"), h)
