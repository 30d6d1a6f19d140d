"""A Fetch waiting in the fetch purgatory is answered inside the append that ends its wait
(the replica manager's LateAnswer, which the connection sends as it is given), not on a
later turn of the event loop: right after an in-process append, before the test lets the
loop turn, the client's socket already holds the answer."""
from __future__ import annotations

import asyncio
import socket
import struct
import time
from types import SimpleNamespace

import pytest

from kafkapy.protocol.messages import REQUESTS, RESPONSES
from kafkapy.records.record import build_batch

TOPIC = "late-answer"
_Fetch = REQUESTS[1]


@pytest.fixture
def b(async_kafka_broker):
    """A broker in the test's event loop (the kafkapy.testing pytest plugin's)."""
    return async_kafka_broker


def _fetch_frame(correlation_id: int, offset: int) -> bytes:
    request = _Fetch[4](replica_id=-1, max_wait_ms=10_000, min_bytes=1, max_bytes=1 << 20,
                        isolation_level=0, topics=[_Fetch.FetchTopic(topic=TOPIC, partitions=[
                            _Fetch.FetchTopic.FetchPartition(
                                partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)])])
    client_id = b"late-answer-test"
    body = (struct.pack(">hhih", 1, 4, correlation_id, len(client_id)) + client_id
            + bytes(request.encode()))
    return struct.pack(">i", len(body)) + body


def _append(b, batch: bytes) -> None:
    b.server.replica_manager.append_records(
        [(TOPIC, SimpleNamespace(index=0, records=batch))], [None], required_acks=1,
        timeout_ms=1000, produce_version=9, internal_topics_allowed=False,
        transactional_id=None, respond=list)


async def test_a_parked_fetch_is_answered_inside_the_append(b):
    await b.create_topic(TOPIC, partitions=1)
    sock = socket.create_connection((b.host, b.port), timeout=5)
    try:
        sock.sendall(_fetch_frame(11, 0))
        purgatory = b.server.fetch_purgatory
        deadline = time.monotonic() + 5
        while purgatory.num_delayed == 0:       # the fetch is read and parks
            assert time.monotonic() < deadline, "the fetch never parked"
            await asyncio.sleep(0.01)
        batch = build_batch([(b"k", b"v" * 100, (), 1_700_000_000_000)])
        _append(b, batch)
        # No await since the append: the answer must have been written by it.
        sock.setblocking(False)
        head = sock.recv(8)     # BlockingIOError if the answer waits for a later turn
        size, correlation_id = struct.unpack(">ii", head)
        assert correlation_id == 11
        sock.settimeout(5)
        body = b""
        while len(body) < size - 4:
            body += sock.recv(size - 4 - len(body))
        response = RESPONSES[1][4].decode(body)
        [topic] = response.responses
        [partition] = topic.partitions
        records = bytes(partition.records)     # the batch, with the leader's epoch stamped
        assert partition.error_code == 0 and len(records) == len(batch)
        assert records[:12] == batch[:12] and records[16:] == batch[16:]
    finally:
        sock.close()
