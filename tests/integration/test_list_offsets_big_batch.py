"""ListOffsets by time over a batch of 500,000 gzip-compressed records.

The lookup walks the batch's records in native code (``kafkapy.native.find_timestamp``)
instead of building a Python object per record, which held the event loop for seconds on
such a batch.  Checked: both lookups answer Kafka's offsets, and a Metadata request sent
meanwhile on another connection is answered (the time both took is printed)."""
from __future__ import annotations

import threading
import time

import pytest

from kafkapy.protocol.messages import REQUESTS
from tests.support.broker_process import BrokerProcess
from tests.support.wire import WireClient
from tests.support.batchcheck_craft import GZIP, TS, plain, records

N = 500_000
MIDDLE = 123_456        # a record looked up by its own timestamp


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with BrokerProcess(tmp_path_factory.mktemp("bigbatch") / "logs",
                       overrides={"message.max.bytes": str(8 << 20)}).start() as b:
        yield b


def _batch() -> bytes:
    raw = bytearray(records(N, key=None, value=b"", ts_step=1))
    return plain(bytes(raw), N, GZIP, max_ts=TS + N - 1)


def _produce(client: WireClient, batch: bytes) -> int:
    cls = REQUESTS[0]
    data = cls.TopicProduceData(version=9, name="big", partition_data=[
        cls.TopicProduceData.PartitionProduceData(version=9, index=0, records=batch)])
    response = client.request(0, 9, transactional_id=None, acks=1, timeout_ms=30000,
                              topic_data=[data])
    return response.responses[0].partition_responses[0].error_code


def _list_offsets(client: WireClient, timestamp: int) -> tuple[int, int]:
    cls = REQUESTS[2]
    topic = cls.ListOffsetsTopic(version=7, name="big", partitions=[
        cls.ListOffsetsTopic.ListOffsetsPartition(version=7, partition_index=0,
                                                  current_leader_epoch=-1,
                                                  timestamp=timestamp)])
    response = client.request(2, 7, replica_id=-1, isolation_level=0, topics=[topic])
    p = response.topics[0].partitions[0]
    assert p.error_code == 0
    return p.offset, p.timestamp


def test_timestamp_lookups_over_half_a_million_records(broker):
    client = WireClient(broker.bootstrap, timeout=60)
    client.request(3, 4, topics=[REQUESTS[3].MetadataRequestTopic(version=4, name="big")],
                   allow_auto_topic_creation=True)
    time.sleep(0.5)
    assert _produce(client, _batch()) == 0
    answered = []

    def metadata_meanwhile():
        other = WireClient(broker.bootstrap, timeout=60)
        started = time.monotonic()
        other.request(3, 4, topics=[], allow_auto_topic_creation=False)
        answered.append(time.monotonic() - started)
        other.close()

    started = time.monotonic()
    probe = threading.Thread(target=metadata_meanwhile)
    probe.start()
    assert _list_offsets(client, -3) == (N - 1, TS + N - 1)            # max timestamp
    assert _list_offsets(client, TS + MIDDLE) == (MIDDLE, TS + MIDDLE)       # by time
    elapsed = time.monotonic() - started
    probe.join(60)
    print(f"two lookups over {N} records: {elapsed * 1000:.0f} ms; "
          f"Metadata meanwhile: {answered[0] * 1000:.0f} ms")
    client.close()
