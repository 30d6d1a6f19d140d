"""BrokerConnection against a real kafkapy broker process.

Flexible and non-flexible versions (request header v1/v2, response header
v0/v1, ApiVersions always v0), pipelining, acks=0 Produce (no answer), and a
broker that goes away (ConnectionError, also for requests already sent).
"""
from __future__ import annotations

import asyncio
import time

import pytest

from kafkapy.network.client import BrokerConnection
from kafkapy.protocol.messages import REQUESTS, is_flexible
from kafkapy.records.record import build_batch

ApiVersions, Metadata, Produce = REQUESTS[18], REQUESTS[3], REQUESTS[0]
TOPIC = "inter-broker-client"


async def _connect(broker, client_id: str = "test-client") -> BrokerConnection:
    conn = BrokerConnection(client_id=client_id, request_timeout_s=15.0)
    await conn.connect("127.0.0.1", broker.port, timeout_s=10.0)
    return conn


def _metadata(version: int, topic: str, auto_create: bool = False):
    fields = dict(topics=[Metadata.MetadataRequestTopic(name=topic)])
    if version >= 4:
        fields["allow_auto_topic_creation"] = auto_create
    if version >= 8:
        fields["include_topic_authorized_operations"] = False
    if 8 <= version <= 10:
        fields["include_cluster_authorized_operations"] = False
    return Metadata[version](**fields)


def _produce(version: int, value: bytes, acks: int = 1):
    records = build_batch([(None, value, None, int(time.time() * 1000))])
    partition = Produce.TopicProduceData.PartitionProduceData(index=0, records=records)
    return Produce[version](transactional_id=None, acks=acks, timeout_ms=5000,
                            topic_data=[Produce.TopicProduceData(name=TOPIC, partition_data=[partition])])


def _api_versions(version: int):
    if version >= 3:
        return ApiVersions[version](client_software_name="kafkapy", client_software_version="test")
    return ApiVersions[version]()


async def _wait_for_leader(conn: BrokerConnection, topic: str) -> None:
    """Auto-create the topic, then poll (bounded) until partition 0 has a leader."""
    for _ in range(300):
        response = await conn.send(_metadata(12, topic, auto_create=True))
        partitions = response.topics[0].partitions
        if response.topics[0].error_code == 0 and partitions and partitions[0].leader_id >= 0:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{topic} got no leader")


@pytest.mark.parametrize("version", [0, 3, 4])
async def test_api_versions_non_flexible_and_flexible(broker, version):
    conn = await _connect(broker)
    try:
        response = await conn.send(_api_versions(version))
        assert response.error_code == 0
        keys = {a.api_key: (a.min_version, a.max_version) for a in response.api_keys}
        assert keys[3][1] >= 12 and keys[0][1] >= 9
    finally:
        conn.close()


@pytest.mark.parametrize("version", [1, 7, 9, 12])
async def test_metadata_versions(broker, version):
    assert is_flexible(3, version) == (version >= 9)
    conn = await _connect(broker)
    try:
        await _wait_for_leader(conn, TOPIC)
        response = await conn.send(_metadata(version, TOPIC))
        assert [b.port for b in response.brokers] == [broker.port]
        assert response.topics[0].name == TOPIC
        assert response.topics[0].error_code == 0
        assert response.topics[0].partitions[0].leader_id == broker.node_id
    finally:
        conn.close()


@pytest.mark.parametrize("version", [3, 8, 9])
async def test_produce_versions(broker, version):
    conn = await _connect(broker)
    try:
        await _wait_for_leader(conn, TOPIC)
        response = await conn.send(_produce(version, b"v%d" % version))
        partition = response.responses[0].partition_responses[0]
        assert partition.error_code == 0
        assert partition.base_offset >= 0
    finally:
        conn.close()


async def test_produce_acks_zero_has_no_answer_and_the_connection_stays_in_step(broker):
    conn = await _connect(broker)
    try:
        await _wait_for_leader(conn, TOPIC)
        assert await conn.send(_produce(9, b"fire-and-forget", acks=0)) is None
        response = await conn.send(_produce(9, b"after", acks=1))
        after = response.responses[0].partition_responses[0]
        assert after.error_code == 0
        # the acks=0 record went in before the acked one
        response = await conn.send(_produce(9, b"last", acks=1))
        assert response.responses[0].partition_responses[0].base_offset == after.base_offset + 1
    finally:
        conn.close()


async def test_pipelined_requests_answer_in_order(broker):
    conn = await _connect(broker)
    try:
        await _wait_for_leader(conn, TOPIC)
        requests = []
        for i in range(30):
            requests.append(_api_versions(i % 4) if i % 3 == 0 else _metadata(1 + i % 12, TOPIC))
        responses = await asyncio.gather(*(conn.send(r) for r in requests))
        for request, response in zip(requests, responses):
            assert response.API_KEY == request.API_KEY
            assert response.API_VERSION == request.API_VERSION
        ids = [r.header.correlation_id for r in responses]
        assert ids == sorted(ids) and len(set(ids)) == len(ids)
    finally:
        conn.close()


async def test_api_versions_error_keeps_the_asked_version(broker):
    """INVALID_REQUEST (empty software name) comes back in v3, not in v0 like UNSUPPORTED_VERSION."""
    conn = await _connect(broker)
    try:
        response = await conn.send(ApiVersions[3](client_software_name="", client_software_version=""))
        assert response.error_code == 42
        assert response.API_VERSION == 3
        assert (await conn.send(_api_versions(3))).error_code == 0  # still in step
    finally:
        conn.close()


async def test_client_id_is_sent(broker):
    """A null client id (nullable string) and a long one are both accepted."""
    for client_id in (None, "controller-0-" + "x" * 200):
        conn = await _connect(broker, client_id=client_id)
        try:
            assert (await conn.send(ApiVersions[3](client_software_name="a",
                                                   client_software_version="b"))).error_code == 0
        finally:
            conn.close()


async def test_broker_gone_fails_sends_with_connection_error(fresh_broker):
    conn = await _connect(fresh_broker)
    try:
        assert (await conn.send(ApiVersions[0]())).error_code == 0
        fresh_broker.kill()
        with pytest.raises(ConnectionError):
            for _ in range(50):  # the first writes after the kill may still be buffered
                await conn.send(ApiVersions[0](), timeout_s=5.0)
                await asyncio.sleep(0.05)
        assert not conn.connected
        with pytest.raises(ConnectionError):
            await conn.send(ApiVersions[0]())
    finally:
        conn.close()
    with pytest.raises(ConnectionError):
        await BrokerConnection().connect("127.0.0.1", fresh_broker.port, timeout_s=5.0)


async def test_controller_channel_to_a_real_broker(broker):
    """LeaderAndIsr v7, UpdateMetadata v8, StopReplica v4 (all flexible) through the channel.

    They come from a pretend controller with epoch 0, older than the broker's own
    controller's, so the broker fences every one (STALE_CONTROLLER_EPOCH) and its
    state is unchanged; the answers prove the framing and versions both ways.
    """
    from kafkapy.controller.channel import ControllerChannelManager
    from kafkapy.protocol.inter_broker import (
        LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest)

    common = dict(controller_id=9, is_k_raft_controller=False, controller_epoch=0, broker_epoch=-1)
    requests = [LeaderAndIsrRequest[7](type=0, topic_states=[], live_leaders=[], **common),
                UpdateMetadataRequest[8](type=0, topic_states=[], live_brokers=[], **common),
                StopReplicaRequest[4](topic_states=[], **common)]
    conn = await _connect(broker)
    try:
        await _wait_for_leader(conn, TOPIC)  # the broker's own controller has run (epoch >= 1)
    finally:
        conn.close()
    channel = ControllerChannelManager(asyncio.get_running_loop(), 9, None, socket_timeout_ms=10000)
    answers: list = []
    done = asyncio.Event()

    def record(response) -> None:
        answers.append(response)
        if len(answers) == len(requests):
            done.set()
    try:
        channel.add_broker(broker.node_id, "127.0.0.1", broker.port)
        for request in requests:
            channel.send(broker.node_id, request, record)
        await asyncio.wait_for(done.wait(), 20)
    finally:
        channel.close()
        await channel.wait_closed()
    assert [type(a).__name__ for a in answers] == [
        "LeaderAndIsrResponse", "UpdateMetadataResponse", "StopReplicaResponse"]
    assert [a.API_VERSION for a in answers] == [7, 8, 4]
    assert [a.error_code for a in answers] == [11, 11, 11]  # STALE_CONTROLLER_EPOCH
    conn = await _connect(broker)
    try:
        response = await conn.send(_metadata(12, TOPIC))
        assert response.controller_id == broker.node_id  # the pretend controller changed nothing
    finally:
        conn.close()


async def test_large_fetch_response_arrives_whole(broker):
    """A multi-megabyte Fetch answer (served by sendfile) is read as one frame and decoded."""
    Fetch = REQUESTS[1]
    topic = "inter-broker-client-big"
    conn = await _connect(broker)
    try:
        await _wait_for_leader(conn, topic)
        for i in range(4):
            records = build_batch([(None, bytes([i]) * 900_000, None, int(time.time() * 1000))])
            partition = Produce.TopicProduceData.PartitionProduceData(index=0, records=records)
            response = await conn.send(Produce[9](
                transactional_id=None, acks=1, timeout_ms=5000,
                topic_data=[Produce.TopicProduceData(name=topic, partition_data=[partition])]))
            assert response.responses[0].partition_responses[0].error_code == 0
        response = await conn.send(Fetch[12](
            replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=10 << 20, isolation_level=0,
            session_id=0, session_epoch=-1, topics=[Fetch.FetchTopic(
                topic=topic, partitions=[Fetch.FetchTopic.FetchPartition(
                    partition=0, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1,
                    log_start_offset=-1, partition_max_bytes=10 << 20)])],
            forgotten_topics_data=[], rack_id=""))
        data = response.responses[0].partitions[0]
        assert data.error_code == 0 and data.high_watermark == 4
        assert len(data.records) > 3_600_000
        # still in step afterwards
        assert (await conn.send(_api_versions(3))).error_code == 0
    finally:
        conn.close()
