"""What the coordinators share about their internal topics (kafkapy.coordinator.internal_topic),
over a real replica manager, metadata cache and admin manager (tests/support/coordinator_services).

``replicated`` is one coordinator write's acks=-1 wait: the append's error at once, 0 at
once when the high watermark already covers it (one in-sync replica), else a future of
the outcome (REQUEST_TIMED_OUT at the deadline).  ``coordinator_node`` is the leader of
the key's partition as the cache names it, unless this broker's copy is offline.
"""
from __future__ import annotations

import asyncio

import pytest

from kafkapy.coordinator.internal_topic import (coordinator_node, ensure_internal_topic,
                                                replicated)
from kafkapy.metadata import paths
from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.records.record import build_batch
from kafkapy.replication.partition import AppendResult
from tests.support.coordinator_services import TS, Node

TOPIC = "__consumer_offsets"
KEY = (TOPIC, 0)


@pytest.fixture
async def node(tmp_path):
    n = Node(tmp_path, asyncio.get_running_loop())
    yield n
    n.close()


def append(node: Node) -> AppendResult:
    result = node.replica_manager.partitions[KEY].append_internal(
        build_batch([(b"k", b"v", None, TS)]))
    assert result.error_code == 0
    return result


async def test_a_failed_append_is_answered_at_once(node):
    node.lead(TOPIC)
    assert replicated(node.replica_manager, KEY, AppendResult(E.NOT_ENOUGH_REPLICAS), 5000) \
        == E.NOT_ENOUGH_REPLICAS


async def test_one_in_sync_replica_is_answered_at_once(node):
    node.lead(TOPIC)
    assert replicated(node.replica_manager, KEY, append(node), 5000) == 0


async def test_a_write_waits_for_the_followers_until_its_deadline(node):
    node.lead(TOPIC, replicas=(0, 1))            # the follower never fetches
    out = replicated(node.replica_manager, KEY, append(node), 5000)
    assert isinstance(out, asyncio.Future) and not out.done()
    node.advance(4999)
    assert not out.done()
    node.advance(1)
    assert out.result() == E.REQUEST_TIMED_OUT


async def test_the_coordinator_is_the_leader_the_cache_names(node):
    assert coordinator_node(node.cache, node.replica_manager, TOPIC, 0) == (
        E.COORDINATOR_NOT_AVAILABLE, None)       # no such topic yet
    node.lead(TOPIC)
    assert coordinator_node(node.cache, node.replica_manager, TOPIC, 0) == (0, node.endpoint)
    node.replica_manager.partitions[KEY].log.offline = True   # its log dir failed
    assert coordinator_node(node.cache, node.replica_manager, TOPIC, 0) == (
        E.COORDINATOR_NOT_AVAILABLE, None)


async def test_a_topic_the_cache_knows_is_not_created_again(node):
    node.lead(TOPIC)
    ensure_internal_topic(node.cache, node.admin, TOPIC, 2, 1, {})
    assert not node.store.exists(paths.topic_path(TOPIC))
    node.cache.remove_topic(TOPIC)
    ensure_internal_topic(node.cache, node.admin, TOPIC, 2, 1, {})
    assert node.store.exists(paths.topic_path(TOPIC))
