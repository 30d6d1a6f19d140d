"""AllocateProducerIds (67) and the producer id blocks behind it.

The block allocator (Kafka's ZkProducerIdManager.getNewProducerIdBlock) on an embedded
store and on a real ZooKeeper: blocks of 1000 from 0, the asking broker recorded, a
conflicting writer retried around, exhaustion refused.  The controller's
processAllocateProducerIds with FakeBrokers on a real ZooKeeper: a block for a
registered broker at its epoch, BROKER_ID_NOT_REGISTERED, STALE_BROKER_EPOCH (also for
-1), NOT_CONTROLLER away from the active controller, UNKNOWN_SERVER_ERROR when no block
can be claimed; the handler's answers; and uniqueness when kafkapy brokers writing the
znode directly interleave with blocks the controller claims for Kafka brokers.
"""
from __future__ import annotations

import json

import pytest

from kafkapy.handlers import allocate_producer_ids as handler
from kafkapy.metadata import paths
from kafkapy.metadata import producer_ids as pid
from kafkapy.metadata.embedded import EmbeddedStore
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.inter_broker import (
    AllocateProducerIdsRequest)
from tests.support.controller import zk, zk_brokers  # noqa: F401 (fixture zk)
from tests.support.zookeeper_server import zk_connect, zookeeper_server  # noqa: F401 (fixtures)
from tests.support.services import context, services


@pytest.fixture
def store(store):
    """tests/unit/conftest's store with Kafka's base znodes."""
    paths.ensure_base_paths(store)
    return store


def znode(store) -> dict:
    return json.loads(store.get(paths.LATEST_PRODUCER_ID_BLOCK)[0])


# -- the block allocator ---------------------------------------------------------------
def test_blocks_follow_each_other_and_name_the_broker(store):
    first = pid.new_producer_id_block(store, 2)
    assert (first.broker, first.block_start, first.block_end, first.size) == (2, 0, 999, 1000)
    second = pid.new_producer_id_block(store, 5)
    assert (second.broker, second.block_start, second.block_end) == (5, 1000, 1999)
    assert znode(store) == {"version": 1, "broker": 5, "block_start": "1000",
                            "block_end": "1999"}


def test_missing_znode_is_created(tmp_path):
    s = EmbeddedStore(tmp_path / "meta.json")      # no base paths
    try:
        assert pid.new_producer_id_block(s, 1).block_start == 0
        assert znode(s)["block_end"] == "999"
    finally:
        s.close()


class _Racing:
    """A store where another writer claims a block between our read and our write,
    ``times`` times."""

    def __init__(self, store, times: int) -> None:
        self._store, self._times = store, times

    def get(self, path):
        answer = self._store.get(path)
        if self._times > 0:
            self._times -= 1
            pid.new_producer_id_block(self._store, 9)
        return answer

    def __getattr__(self, name):
        return getattr(self._store, name)


def test_conflicting_writer_is_retried_around(store):
    block = pid.new_producer_id_block(_Racing(store, 2), 1)
    # two blocks went to broker 9 meanwhile; ours is the third
    assert (block.broker, block.block_start) == (1, 2000)
    assert znode(store)["broker"] == 1


def test_endless_conflicts_give_up(store, monkeypatch):
    monkeypatch.setattr(pid, "_MAX_ATTEMPTS", 3)
    with pytest.raises(pid.ProducerIdBlockError):
        pid.new_producer_id_block(_Racing(store, 10), 1)


def test_exhausted_ids_are_refused(store):
    last = 2**63 - 1
    store.set(paths.LATEST_PRODUCER_ID_BLOCK,
              paths.encode_producer_id_block(1, last - 1500, last - 501))
    with pytest.raises(pid.ProducerIdBlockError, match="exhausted"):
        pid.new_producer_id_block(store, 1)


def test_manager_takes_a_new_block_when_one_is_used_up(store):
    manager = pid.ProducerIdManager(store, 3)
    ids = [manager.next_id() for _ in range(1001)]
    assert ids == list(range(1001))
    assert znode(store) == {"version": 1, "broker": 3, "block_start": "1000",
                            "block_end": "1999"}


# -- the controller and the handler ----------------------------------------------------
async def _controllers(zk):
    b1, b2, b3 = zk_brokers(zk, 3)
    c1 = b1.start_controller()
    await c1.startup()
    c2 = b2.start_controller()
    await c2.startup()
    assert c1.is_active and not c2.is_active
    return (b1, b2, b3), c1, c2


def _ctx(broker):
    return context(services(node_id=broker.node_id, controller=broker.controller), 67, 0)


async def _ask(broker, broker_id, broker_epoch):
    request = AllocateProducerIdsRequest[0](broker_id=broker_id, broker_epoch=broker_epoch)
    got = await handler.handle(_ctx(broker), request)
    return got.error_code, got.producer_id_start, got.producer_id_len


async def test_controller_checks_the_broker_then_claims_a_block(zk):
    (b1, b2, b3), c1, c2 = await _controllers(zk)
    try:
        code, block = await c1.allocate_producer_ids(2, b2.broker_epoch)
        assert (code, block.broker, block.block_start, block.size) == (0, 2, 0, 1000)
        assert znode(b1.store)["broker"] == 2
        # through the handler, on the wire types
        assert await _ask(b1, 3, b3.broker_epoch) == (0, 1000, 1000)
        assert await _ask(b1, 9, 5) == (ErrorCode.BROKER_ID_NOT_REGISTERED, 0, 0)
        assert await _ask(b1, 2, b2.broker_epoch - 1) == (ErrorCode.STALE_BROKER_EPOCH, 0, 0)
        assert await _ask(b1, 2, -1) == (ErrorCode.STALE_BROKER_EPOCH, 0, 0)
        # away from the active controller
        assert await _ask(b2, 2, b2.broker_epoch) == (ErrorCode.NOT_CONTROLLER, 0, 0)
        assert await c2.allocate_producer_ids(2, b2.broker_epoch) == (
            ErrorCode.NOT_CONTROLLER, None)
        assert znode(b1.store)["block_start"] == "1000"       # errors claimed nothing
    finally:
        await c2.shutdown()
        await c1.shutdown()


async def test_failure_answers_unknown_server_error_and_controller_goes_on(zk):
    (b1, b2, b3), c1, c2 = await _controllers(zk)
    try:
        last = 2**63 - 1
        b1.store.set(paths.LATEST_PRODUCER_ID_BLOCK,
                     paths.encode_producer_id_block(1, last - 1500, last - 501))
        assert await _ask(b1, 2, b2.broker_epoch) == (ErrorCode.UNKNOWN, 0, 0)
        assert c1.is_active
        b1.store.set(paths.LATEST_PRODUCER_ID_BLOCK, paths.encode_producer_id_block(1, 0, 999))
        assert await _ask(b1, 2, b2.broker_epoch) == (0, 1000, 1000)
    finally:
        await c2.shutdown()
        await c1.shutdown()


async def test_direct_writers_and_the_controller_never_share_an_id(zk):
    """kafkapy brokers claim blocks in the znode themselves while the controller claims
    blocks for (Kafka) brokers that ask it: every id is handed out once."""
    (b1, b2, b3), c1, c2 = await _controllers(zk)
    try:
        managers = [pid.ProducerIdManager(zk(), 2), pid.ProducerIdManager(zk(), 3)]
        seen: list[int] = []
        for round_ in range(5):
            for manager in managers:
                seen.extend(manager.next_id() for _ in range(1000))
            code, block = await c1.allocate_producer_ids(1, b1.broker_epoch)
            assert code == 0
            seen.extend(range(block.block_start, block.block_end + 1))
        assert len(seen) == len(set(seen)) == 15 * 1000
        assert sorted(seen) == list(range(15 * 1000))
    finally:
        await c2.shutdown()
        await c1.shutdown()
