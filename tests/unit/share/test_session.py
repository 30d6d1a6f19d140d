"""Share sessions: epochs, partitions kept between requests, what a response carries,
the session limit and the idle eviction."""
from __future__ import annotations

import uuid

import pytest

from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.replication.fetch_session import TopicIdPartition
from kafkapy.share.session import (FINAL_EPOCH, INITIAL_EPOCH, SHARE_SESSION_LIMIT_REACHED,
                                   PartitionAnswer, ShareSessionCache, ShareSessionKey,
                                   acknowledge_session_update, new_context, next_epoch)

T1, T2 = uuid.uuid4(), uuid.uuid4()
A0, A1 = TopicIdPartition(T1, "a", 0), TopicIdPartition(T1, "a", 1)
B0 = TopicIdPartition(T2, "b", 0)
EMPTY = PartitionAnswer(0, 0)
DATA = PartitionAnswer(0, 100)


def _open(cache, partitions=(A0, A1), member="m1", now=0):
    return new_context(cache, "g", member, INITIAL_EPOCH, list(partitions), [], False, now)


def _code(call) -> int:
    with pytest.raises(KafkaError) as err:
        call()
    return err.value.code


def test_next_epoch_wraps_to_one_and_keeps_final():
    assert next_epoch(0) == 1
    assert next_epoch(7) == 8
    assert next_epoch(2**31 - 1) == 1
    assert next_epoch(FINAL_EPOCH) == FINAL_EPOCH


def test_initial_epoch_opens_a_session_at_epoch_one_with_the_listed_partitions():
    cache = ShareSessionCache(10, idle_ms=1000)
    context = _open(cache)
    assert not context.is_subsequent
    assert context.partitions() == [A0, A1]
    session = cache.get(ShareSessionKey("g", "m1"))
    assert session.epoch == 1
    assert session.topic_id_partitions() == [A0, A1]


def test_a_full_context_answers_every_partition():
    cache = ShareSessionCache(10, idle_ms=1000)
    context = _open(cache)
    assert context.answered([(A0, EMPTY), (A1, EMPTY)]) == [0, 1]


def test_initial_epoch_with_acknowledgements_is_an_invalid_request():
    cache = ShareSessionCache(10, idle_ms=1000)
    assert _code(lambda: new_context(cache, "g", "m1", 0, [A0], [], True, 0)) \
        == ErrorCode.INVALID_REQUEST
    assert len(cache) == 0


def test_initial_epoch_replaces_the_members_session():
    cache = ShareSessionCache(10, idle_ms=1000)
    _open(cache)
    new_context(cache, "g", "m1", 1, [], [], False, 0)
    _open(cache, [B0])
    session = cache.get(ShareSessionKey("g", "m1"))
    assert session.epoch == 1 and session.topic_id_partitions() == [B0]
    assert len(cache) == 1


def test_subsequent_epochs_add_and_forget_partitions_and_move_the_epoch():
    cache = ShareSessionCache(10, idle_ms=1000)
    _open(cache)
    context = new_context(cache, "g", "m1", 1, [B0], [A0], False, 5)
    assert context.is_subsequent
    assert context.partitions() == [A1, B0]
    assert cache.get(ShareSessionKey("g", "m1")).epoch == 2
    context = new_context(cache, "g", "m1", 2, [], [], False, 6)
    assert context.partitions() == [A1, B0]


def test_wrong_epoch_and_missing_session():
    cache = ShareSessionCache(10, idle_ms=1000)
    assert _code(lambda: new_context(cache, "g", "m1", 1, [], [], False, 0)) \
        == ErrorCode.SHARE_SESSION_NOT_FOUND
    _open(cache)
    assert _code(lambda: new_context(cache, "g", "m1", 3, [], [], False, 0)) \
        == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert cache.get(ShareSessionKey("g", "m1")).epoch == 1   # unchanged


def test_final_epoch_needs_a_session_and_reads_nothing():
    cache = ShareSessionCache(10, idle_ms=1000)
    assert _code(lambda: new_context(cache, "g", "m1", FINAL_EPOCH, [], [], True, 0)) \
        == ErrorCode.SHARE_SESSION_NOT_FOUND
    _open(cache)
    context = new_context(cache, "g", "m1", FINAL_EPOCH, [A0], [], True, 0)
    assert context.is_final and context.partitions() == []
    assert cache.get(ShareSessionKey("g", "m1")) is not None   # the caller closes it


def test_a_running_session_answers_data_errors_and_new_partitions_only():
    cache = ShareSessionCache(10, idle_ms=1000)
    _open(cache)
    context = new_context(cache, "g", "m1", 1, [B0], [], False, 0)
    answers = [(A0, EMPTY), (A1, DATA), (B0, EMPTY)]
    assert context.answered(answers) == [1, 2]     # A1 has records, B0 is new
    context = new_context(cache, "g", "m1", 2, [], [], False, 0)
    assert context.answered([(A0, EMPTY), (B0, EMPTY), (A1, EMPTY)]) == []


def test_an_errored_partition_is_answered_once_more_after_the_error_is_gone():
    cache = ShareSessionCache(10, idle_ms=1000)
    _open(cache)
    context = new_context(cache, "g", "m1", 1, [], [], False, 0)
    assert context.answered([(A0, PartitionAnswer(ErrorCode.NOT_LEADER_OR_FOLLOWER, 0)),
                             (A1, EMPTY)]) == [0]
    context = new_context(cache, "g", "m1", 2, [], [], False, 0)
    assert context.answered([(A0, EMPTY), (A1, EMPTY)]) == [0]
    context = new_context(cache, "g", "m1", 3, [], [], False, 0)
    assert context.answered([(A0, EMPTY), (A1, EMPTY)]) == []


def test_partitions_that_answered_records_move_to_the_end():
    cache = ShareSessionCache(10, idle_ms=1000)
    _open(cache)
    context = new_context(cache, "g", "m1", 1, [], [], False, 0)
    context.answered([(A0, DATA), (A1, EMPTY)])
    assert cache.get(ShareSessionKey("g", "m1")).topic_id_partitions() == [A1, A0]


def test_the_session_limit_is_reached_unless_a_session_is_idle():
    cache = ShareSessionCache(2, idle_ms=1000)
    _open(cache, member="m1", now=0)
    _open(cache, member="m2", now=500)
    code = _code(lambda: _open(cache, member="m3", now=900))
    assert code == SHARE_SESSION_LIMIT_REACHED
    new_context(cache, "g", "m1", 1, [], [], False, 950)     # m1 used again: m2 is older
    _open(cache, member="m3", now=1600)                        # m2 idle 1100 ms: evicted
    assert cache.get(ShareSessionKey("g", "m2")) is None
    assert cache.get(ShareSessionKey("g", "m1")) is not None
    assert len(cache) == 2


def test_share_acknowledge_epochs():
    cache = ShareSessionCache(10, idle_ms=1000)
    assert _code(lambda: acknowledge_session_update(cache, "g", "m1", INITIAL_EPOCH, 0)) \
        == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert _code(lambda: acknowledge_session_update(cache, "g", "m1", 1, 0)) \
        == ErrorCode.SHARE_SESSION_NOT_FOUND
    assert _code(lambda: acknowledge_session_update(cache, "g", "m1", FINAL_EPOCH, 0)) \
        == ErrorCode.SHARE_SESSION_NOT_FOUND
    _open(cache)
    acknowledge_session_update(cache, "g", "m1", 1, 0)
    assert cache.get(ShareSessionKey("g", "m1")).epoch == 2
    assert _code(lambda: acknowledge_session_update(cache, "g", "m1", 1, 0)) \
        == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    acknowledge_session_update(cache, "g", "m1", FINAL_EPOCH, 0)
    assert cache.get(ShareSessionKey("g", "m1")).epoch == 2


def test_members_per_group_follow_opens_closes_and_evictions():
    cache = ShareSessionCache(2, idle_ms=1000)
    _open(cache, member="m1", now=0)
    _open(cache, member="m1", now=0)          # replaced: still one
    _open(cache, member="m2", now=0)
    assert cache.members("g") == 2
    cache.remove(ShareSessionKey("g", "m1"))
    assert cache.members("g") == 1
    new_context(cache, "h", "x", INITIAL_EPOCH, [A0], [], False, 10)
    new_context(cache, "h", "y", INITIAL_EPOCH, [A0], [], False, 5000)   # full: evicts m2
    assert (cache.members("g"), cache.members("h")) == (0, 2)
