"""The share-partition leader across a leader failover, in a three-broker in-process cluster
(``kafkapy.testing.cluster``) with the broker's own persister (the share coordinator over
``__share_group_state``, wherever it is led): records acknowledged on the old leader are
never delivered by the new one, which reads the state afresh; records the old leader had
handed out but not seen acknowledged are delivered again."""
from __future__ import annotations

from kafkapy.network.client import BrokerConnection
from kafkapy.protocol.messages import REQUESTS
from kafkapy.records.record import build_batch
from kafkapy.replication.fetch_session import TopicIdPartition
from kafkapy.share.manager import ShareFetchParams
from kafkapy.share.partition import AcknowledgementBatch, AcknowledgeType
from kafkapy.testing import cluster

GROUP = "failover"
TOPIC = "orders"
PARAMS = ShareFetchParams(max_wait_ms=5000, min_bytes=1, max_bytes=1 << 20, max_records=100,
                          batch_size=100)


async def _produce(handle, values: list[bytes]) -> None:
    P = REQUESTS[0]
    conn = BrokerConnection(client_id="share-failover")
    await conn.connect(handle.host, handle.port)
    now = handle.server.clock.time_ms()
    response = await conn.send(P(version=9, transactional_id=None, acks=-1, timeout_ms=10000,
                                 topic_data=[P.TopicProduceData(name=TOPIC, partition_data=[
                                     P.TopicProduceData.PartitionProduceData(
                                         index=0, records=build_batch(
                                             [(None, v, [], now) for v in values]))])]))
    conn.close()
    assert response.responses[0].partition_responses[0].error_code == 0


async def test_a_new_leader_reads_the_state_afresh():
    async with cluster(brokers=3) as c:
        await c.create_topic(TOPIC, 1, 3)
        old = await c.broker(await c.leader(TOPIC))
        topic_id = old.server.cache.topic(TOPIC).topic_id
        tip = TopicIdPartition(topic_id, TOPIC, 0)
        assert await old.server.share_persister.initialize(
            GROUP, topic_id, 0, state_epoch=1, start_offset=0) == 0
        await _produce(old, [b"a", b"b", b"c", b"d"])

        manager = old.server.share_partitions
        first = (await manager.fetch_messages(GROUP, "m1", PARAMS, [tip]))[tip]
        assert [tuple(a) for a in first.acquired] == [(0, 3, 1)]
        acked = await manager.acknowledge(GROUP, "m1", {tip: [AcknowledgementBatch(
            0, 1, (int(AcknowledgeType.ACCEPT),))]})
        assert acked[tip] == 0

        await c.fail(old.broker_id)
        new = await c.broker(await c.wait_leader(TOPIC, other_than=old.broker_id))
        again = (await new.server.share_partitions.fetch_messages(GROUP, "m2", PARAMS,
                                                                   [tip]))[tip]
        assert again.error_code == 0
        assert [tuple(a) for a in again.acquired] == [(2, 3, 1)]
