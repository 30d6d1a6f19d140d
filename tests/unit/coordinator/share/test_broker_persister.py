"""``BrokerPersister`` in a three-broker ``kafkapy.testing`` cluster: a key whose
``__share_group_state`` partition another broker leads goes over the wire to that broker
(one reused connection), a key led here stays in-process, and after the leader fails the
persister finds the new one and the replicated state is still there."""
from __future__ import annotations

import asyncio

from kafkapy.coordinator.share.persister import StateBatch
from kafkapy.coordinator.share.state import ShareKey
from kafkapy.metadata.topics import SHARE_GROUP_STATE_TOPIC
from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.testing import cluster

TOPIC = "events"
PARTITIONS = 6


def state_partition(handle, key: ShareKey) -> int:
    return handle.server.share_coordinator.coordinator.partition_for(key)


def stored(handle, key: ShareKey):
    coordinator = handle.server.share_coordinator.coordinator
    shard = coordinator.shard(coordinator.partition_for(key))
    return None if shard is None else shard.state(key)


async def test_keys_go_to_the_broker_leading_their_state_partition():
    async with cluster(brokers=3, settings={"share.coordinator.state.topic.num.partitions": "3"}) as c:
        await c.create_topic(TOPIC, PARTITIONS)
        first = c.running[0]
        topic_id = first.server.cache.topic(TOPIC).topic_id
        persister = first.server.share_persister
        keys = [ShareKey("g", topic_id, p) for p in range(PARTITIONS)]
        for key in keys:        # the first call creates the state topic and waits for it
            assert await persister.initialize(key.group_id, topic_id, key.partition,
                                              state_epoch=1, start_offset=0) == 0

        leaders = {k: await c.leader(SHARE_GROUP_STATE_TOPIC, state_partition(first, k))
                   for k in keys}
        remote = [k for k in keys if leaders[k] != first.broker_id]
        assert remote, "every key's state partition is led by the first broker"
        for key in keys:
            batches = [StateBatch(0, 3, 2, 1), StateBatch(4, 4, 4, 5)]
            assert await persister.write(key.group_id, topic_id, key.partition, state_epoch=1,
                                         leader_epoch=2, start_offset=0, batches=batches,
                                         delivery_complete_count=5) == 0
            state = await persister.read(key.group_id, topic_id, key.partition,
                                         leader_epoch=2)
            assert (state.error, state.state_epoch, state.start_offset, state.batches) == (
                0, 1, 0, tuple(batches))
            summary = await persister.read_summary(key.group_id, topic_id, key.partition,
                                                   leader_epoch=2)
            assert (summary.error, summary.leader_epoch, summary.delivery_complete_count) == (
                0, 2, 5)
            # held by the leader of the state partition, and by no other broker
            holder = await c.broker(leaders[key])
            assert stored(holder, key).batches == tuple(batches)
            for other in c.running:
                if other.broker_id != leaders[key]:
                    assert stored(other, key) is None
        # one connection per other broker, reused by every remote call
        assert persister._connections.nodes() == {leaders[k] for k in remote}

        key = remote[0]
        assert await persister.write(key.group_id, topic_id, key.partition, state_epoch=1,
                                     leader_epoch=1, start_offset=0, batches=[]) == \
            E.FENCED_LEADER_EPOCH
        assert await persister.delete(key.group_id, topic_id, key.partition) == 0
        assert (await persister.read(key.group_id, topic_id, key.partition,
                                     leader_epoch=2)).error == E.INVALID_REQUEST


async def test_after_the_leader_fails_the_state_is_read_from_the_new_one():
    async with cluster(brokers=3, settings={"share.coordinator.state.topic.num.partitions": "1"}) as c:
        await c.create_topic(TOPIC, 1)
        asker = c.running[0]
        topic_id = asker.server.cache.topic(TOPIC).topic_id
        persister = asker.server.share_persister
        assert await persister.initialize("g", topic_id, 0, state_epoch=3, start_offset=7) == 0
        assert await persister.write("g", topic_id, 0, state_epoch=3, leader_epoch=1,
                                     start_offset=9, batches=[StateBatch(9, 12, 2, 1)]) == 0
        leader = await c.leader(SHARE_GROUP_STATE_TOPIC, 0)
        if leader == asker.broker_id:           # ask from a broker that survives
            asker = next(h for h in c.running if h.broker_id != leader)
            persister = asker.server.share_persister
        await c.fail(leader)
        for _ in range(600):
            if await c.leader(SHARE_GROUP_STATE_TOPIC, 0) not in (-1, leader):
                break
            await asyncio.sleep(0.05)
        state = await persister.read("g", topic_id, 0, leader_epoch=1)
        assert (state.error, state.state_epoch, state.start_offset, state.batches) == (
            0, 3, 9, (StateBatch(9, 12, 2, 1),))
