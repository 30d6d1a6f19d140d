"""FetchSessionCache eviction and epochs (Kafka's FetchSessionCacheShard rules), on given times.

With ``max.incremental.fetch.session.cache.slots=8`` each of the 8 shards holds one
session, and full fetches go to the shards in turn, so every ninth fetch meets the
first shard's session.  Times are passed in, as the broker passes its clock's.
"""
from __future__ import annotations

from kafkapy.protocol.errors import ErrorCode
from kafkapy.replication.fetch_session import (FINAL_EPOCH, MIN_EVICTION_MS, FetchManager,
                                               FetchSessionCache, FullContext,
                                               IncrementalContext, PartitionAnswer,
                                               PartitionRequest, SessionErrorContext,
                                               TopicIdPartition, next_epoch)


def _data(n: int):
    return [(TopicIdPartition(None, "t", p), PartitionRequest(0, -1, 1000, -1, -1))
            for p in range(n)]


def _answers(n: int):
    return [(TopicIdPartition(None, "t", p), PartitionAnswer(0, 10, 0, 5)) for p in range(n)]


def _full(manager: FetchManager, now: int, partitions: int = 1, follower: bool = False) -> int:
    context = manager.new_context(12, 0, 0, follower, _data(partitions), [], None, now)
    assert isinstance(context, FullContext)
    return context.generate(_answers(partitions), now)[1]


def _fill(manager: FetchManager, now: int = 0) -> list[int]:
    ids = [_full(manager, now) for _ in range(8)]
    assert 0 not in ids
    return ids


def test_next_epoch_wraps_to_1_and_final_stays_final():
    assert next_epoch(0) == 1
    assert next_epoch(0x7FFFFFFF) == 1
    assert next_epoch(FINAL_EPOCH) == FINAL_EPOCH


def test_a_full_shard_refuses_a_consumer_while_its_session_is_fresh():
    manager = FetchManager(FetchSessionCache(8))
    _fill(manager)
    assert _full(manager, MIN_EVICTION_MS) == 0


def test_a_session_unused_past_the_eviction_time_gives_way():
    manager = FetchManager(FetchSessionCache(8))
    first = _fill(manager)[0]
    newcomer = _full(manager, MIN_EVICTION_MS + 1)
    assert newcomer not in (0, first)
    context = manager.new_context(12, first, 1, False, [], [], None, MIN_EVICTION_MS + 2)
    assert isinstance(context, SessionErrorContext)
    assert context.error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_a_follower_evicts_a_consumer_session():
    manager = FetchManager(FetchSessionCache(8))
    first = _fill(manager)[0]
    assert _full(manager, 10, follower=True) not in (0, first)
    assert manager.cache.get(first) is None


def test_an_old_session_gives_way_only_to_a_larger_one():
    manager = FetchManager(FetchSessionCache(8))
    first = _fill(manager)[0]
    later = MIN_EVICTION_MS + 10
    # Used again after its eviction age: from then on others may evict it.
    context = manager.new_context(12, first, 1, False, [], [], None, later)
    assert isinstance(context, IncrementalContext)
    # The shards' turn is back at the first one.
    assert _full(manager, later + 1, partitions=1) == 0  # not larger than its 1 partition
    for _ in range(7):  # the other shards' turns (their sessions are stale: replaced)
        assert _full(manager, later + 2) != 0
    assert _full(manager, later + 3, partitions=2) != 0
    assert manager.cache.get(first) is None


def test_no_slots_no_sessions():
    manager = FetchManager(FetchSessionCache(0))
    assert _full(manager, 0) == 0
    assert manager.cache.size == 0


def test_a_throttled_answer_creates_no_session_and_keeps_an_open_one():
    """Kafka's getThrottledResponse per context: a full fetch gets no session, an
    incremental one keeps its id (its epoch checked), a session error stays the error."""
    manager = FetchManager(FetchSessionCache(8))
    full = manager.new_context(12, 0, 0, False, _data(1), [], None, 0)
    assert full.throttled(0) == (0, 0) and manager.cache.size == 0
    session = _full(manager, 0)
    incremental = manager.new_context(12, session, 1, False, [], [], None, 1)
    assert isinstance(incremental, IncrementalContext)
    assert incremental.throttled(1) == (0, session)
    again = manager.new_context(12, session, 1, False, [], [], None, 2)   # epoch 1 again
    assert isinstance(again, SessionErrorContext)
    assert again.throttled(2) == (ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0)
