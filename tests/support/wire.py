"""A tiny raw-socket Kafka client for wire-level tests (framing, versions, bad input)."""
from __future__ import annotations

import socket
import struct
import time

from kafkapy.protocol.messages import REQUESTS, RESPONSES


def recv_frame(sock: socket.socket) -> bytes:
    """One size-prefixed frame from ``sock``; ConnectionError when the broker closes it."""
    size = struct.unpack(">i", _recv_exact(sock, 4))[0]
    return _recv_exact(sock, size)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(n)
        if not chunk:
            raise ConnectionError("connection closed by broker")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


class WireClient:
    _client_id = "wire-test"    # also for clients made over a socket of their own (TLS tests)

    def __init__(self, bootstrap: str, timeout: float = 10.0, client_id: str = "wire-test"
                 ) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self._correlation = 0
        self._client_id = client_id

    def close(self) -> None:
        self.sock.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv_frame(self) -> bytes:
        return recv_frame(self.sock)

    def encode(self, api_key: int, version: int, **fields) -> tuple[int, bytes]:
        self._correlation += 1
        request = REQUESTS[api_key](version=version, **fields)
        request.with_header(correlation_id=self._correlation, client_id=self._client_id)
        return self._correlation, bytes(request.encode(header=True, framed=True))

    def request(self, api_key: int, version: int, **fields):
        correlation, data = self.encode(api_key, version, **fields)
        self.send_raw(data)
        return self.read_response(api_key, version, correlation)

    def read_response(self, api_key: int, version: int, correlation: int):
        frame = self.recv_frame()
        response_cls = RESPONSES[api_key]
        response = response_cls.decode(frame, version=version, header=True)
        assert response.header.correlation_id == correlation
        return response

    def is_closed(self, timeout: float = 5.0) -> bool:
        """True when the broker closed the connection (EOF) within the timeout."""
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False


def partition_metadata(bootstrap: str, topic: str) -> dict[int, tuple[int, int, list[int]]]:
    """Metadata v12 for ``topic``: {partition: (error code, leader, offline replicas)}."""
    client = WireClient(bootstrap)
    try:
        response = client.request(3, 12, topics=[REQUESTS[3].MetadataRequestTopic(
            topic_id=None, name=topic)], allow_auto_topic_creation=False,
            include_topic_authorized_operations=False)
    finally:
        client.close()
    return {p.partition_index: (p.error_code, p.leader_id, list(p.offline_replicas))
            for p in response.topics[0].partitions}


def stored_records(client: WireClient, topic: str, partition: int = 0,
                   isolation_level: int = 0) -> bytes:
    """The partition's log from offset 0 as a Fetch v12 returns it (up to 1 MiB; up to the
    last stable offset at ``isolation_level`` 1, read_committed)."""
    fetch = REQUESTS[1]
    r = client.request(1, 12, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
                       isolation_level=isolation_level, session_id=0, session_epoch=-1, topics=[
                           fetch.FetchTopic(topic=topic, partitions=[
                               fetch.FetchTopic.FetchPartition(
                                   partition=partition, current_leader_epoch=-1, fetch_offset=0,
                                   last_fetched_epoch=-1, log_start_offset=-1,
                                   partition_max_bytes=1 << 20)])],
                       forgotten_topics_data=[], rack_id="")
    answer = r.responses[0].partitions[0]
    assert answer.error_code == 0, answer
    return bytes(answer.records or b"")


def until(call, done, timeout: float = 30.0):
    """``call()`` until ``done(result)`` (bounded); the last result."""
    deadline = time.monotonic() + timeout
    while True:
        result = call()
        if done(result) or time.monotonic() > deadline:
            return result
        time.sleep(0.1)
