"""Share sessions: epochs, partitions kept between requests, what a response carries,
the session limit, and the tie of each session to its connection."""
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
    cache = ShareSessionCache(10)
    context = _open(cache)
    assert not context.is_subsequent
    assert context.partitions() == [A0, A1]
    session = cache.get(ShareSessionKey("g", "m1"))
    assert session.epoch == 1
    assert session.topic_id_partitions() == [A0, A1]


def test_a_full_context_answers_every_partition():
    cache = ShareSessionCache(10)
    context = _open(cache)
    assert context.answered([(A0, EMPTY), (A1, EMPTY)]) == [0, 1]


def test_initial_epoch_with_acknowledgements_is_an_invalid_request():
    cache = ShareSessionCache(10)
    assert _code(lambda: new_context(cache, "g", "m1", 0, [A0], [], True, 0)) \
        == ErrorCode.INVALID_REQUEST
    assert len(cache) == 0


def test_initial_epoch_replaces_the_members_session():
    cache = ShareSessionCache(10)
    _open(cache)
    new_context(cache, "g", "m1", 1, [], [], False, 0)
    _open(cache, [B0])
    session = cache.get(ShareSessionKey("g", "m1"))
    assert session.epoch == 1 and session.topic_id_partitions() == [B0]
    assert len(cache) == 1


def test_subsequent_epochs_add_and_forget_partitions_and_move_the_epoch():
    cache = ShareSessionCache(10)
    _open(cache)
    context = new_context(cache, "g", "m1", 1, [B0], [A0], False, 5)
    assert context.is_subsequent
    assert context.partitions() == [A1, B0]
    assert cache.get(ShareSessionKey("g", "m1")).epoch == 2
    context = new_context(cache, "g", "m1", 2, [], [], False, 6)
    assert context.partitions() == [A1, B0]


def test_a_partition_that_joined_unnamed_is_named_once_its_topic_is_known():
    """After a restart a session can open before the broker's metadata names the topic:
    its partition joins with topic None, and later fetches look the name up again."""
    cache = ShareSessionCache(10)
    unnamed = TopicIdPartition(T1, None, 0)
    _open(cache, [unnamed])
    known: dict = {}
    context = new_context(cache, "g", "m1", 1, [], [], False, 1)
    assert context.partitions(known.get) == [unnamed]    # still unknown: UNKNOWN_TOPIC_ID
    known[T1] = "a"
    context = new_context(cache, "g", "m1", 2, [], [], False, 2)
    assert context.partitions(known.get) == [A0]
    known.clear()                                        # the name, once found, is kept
    context = new_context(cache, "g", "m1", 3, [], [], False, 3)
    assert context.partitions(known.get) == [A0]
    assert cache.get(ShareSessionKey("g", "m1")).topic_id_partitions() == [A0]


def test_wrong_epoch_and_missing_session():
    cache = ShareSessionCache(10)
    assert _code(lambda: new_context(cache, "g", "m1", 1, [], [], False, 0)) \
        == ErrorCode.SHARE_SESSION_NOT_FOUND
    _open(cache)
    assert _code(lambda: new_context(cache, "g", "m1", 3, [], [], False, 0)) \
        == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert cache.get(ShareSessionKey("g", "m1")).epoch == 1   # unchanged


def test_final_epoch_needs_a_session_and_reads_nothing():
    cache = ShareSessionCache(10)
    assert _code(lambda: new_context(cache, "g", "m1", FINAL_EPOCH, [], [], True, 0)) \
        == ErrorCode.SHARE_SESSION_NOT_FOUND
    _open(cache)
    context = new_context(cache, "g", "m1", FINAL_EPOCH, [A0], [], True, 0)
    assert context.is_final and context.partitions() == []
    assert cache.get(ShareSessionKey("g", "m1")) is not None   # the caller closes it


def test_a_running_session_answers_data_errors_and_new_partitions_only():
    cache = ShareSessionCache(10)
    _open(cache)
    context = new_context(cache, "g", "m1", 1, [B0], [], False, 0)
    answers = [(A0, EMPTY), (A1, DATA), (B0, EMPTY)]
    assert context.answered(answers) == [1, 2]     # A1 has records, B0 is new
    context = new_context(cache, "g", "m1", 2, [], [], False, 0)
    assert context.answered([(A0, EMPTY), (B0, EMPTY), (A1, EMPTY)]) == []


def test_an_errored_partition_is_answered_once_more_after_the_error_is_gone():
    cache = ShareSessionCache(10)
    _open(cache)
    context = new_context(cache, "g", "m1", 1, [], [], False, 0)
    assert context.answered([(A0, PartitionAnswer(ErrorCode.NOT_LEADER_OR_FOLLOWER, 0)),
                             (A1, EMPTY)]) == [0]
    context = new_context(cache, "g", "m1", 2, [], [], False, 0)
    assert context.answered([(A0, EMPTY), (A1, EMPTY)]) == [0]
    context = new_context(cache, "g", "m1", 3, [], [], False, 0)
    assert context.answered([(A0, EMPTY), (A1, EMPTY)]) == []


def test_partitions_that_answered_records_move_to_the_end():
    cache = ShareSessionCache(10)
    _open(cache)
    context = new_context(cache, "g", "m1", 1, [], [], False, 0)
    context.answered([(A0, DATA), (A1, EMPTY)])
    assert cache.get(ShareSessionKey("g", "m1")).topic_id_partitions() == [A1, A0]


def test_the_session_limit_refuses_new_sessions_until_one_is_removed():
    cache = ShareSessionCache(2)
    _open(cache, member="m1", now=0)
    _open(cache, member="m2", now=500)
    code = _code(lambda: _open(cache, member="m3", now=10**9))      # idle or not: refused
    assert code == SHARE_SESSION_LIMIT_REACHED
    assert len(cache) == 2
    _open(cache, member="m1", now=10**9)                              # a member's own: replaced
    cache.remove(ShareSessionKey("g", "m2"))
    _open(cache, member="m3", now=10**9)
    assert {s.key.member_id for s in cache.sessions()} == {"m1", "m3"}


class _Tie:
    """A connection's close callback, as the cache sees it: its cancel, counted."""

    def __init__(self) -> None:
        self.cancelled = 0

    def __call__(self) -> None:
        self.cancelled += 1


def test_a_session_removed_cancels_its_tie_to_its_connection():
    cache = ShareSessionCache(10)
    _open(cache)
    tie = _Tie()
    cache.bind(ShareSessionKey("g", "m1"), tie)
    assert tie.cancelled == 0
    cache.remove(ShareSessionKey("g", "m1"))
    assert tie.cancelled == 1
    cache.remove(ShareSessionKey("g", "m1"))
    assert tie.cancelled == 1


def test_a_session_opened_again_cancels_the_old_tie_and_takes_the_new_one():
    cache = ShareSessionCache(10)
    key = ShareSessionKey("g", "m1")
    _open(cache)
    old, new = _Tie(), _Tie()
    cache.bind(key, old)
    _open(cache)                        # epoch 0 again (another connection, say)
    assert old.cancelled == 1
    cache.bind(key, new)
    assert new.cancelled == 0
    new_context(cache, "g", "m1", FINAL_EPOCH, [], [], False, 0)
    cache.remove(key)                   # what the caller does after the final epoch
    assert (old.cancelled, new.cancelled) == (1, 1)


def test_binding_anew_cancels_the_previous_tie_and_no_session_binds_nothing():
    cache = ShareSessionCache(10)
    key = ShareSessionKey("g", "m1")
    _open(cache)
    first, second = _Tie(), _Tie()
    cache.bind(key, first)
    cache.bind(key, second)
    assert (first.cancelled, second.cancelled) == (1, 0)
    stray = _Tie()
    cache.bind(ShareSessionKey("g", "nobody"), stray)
    assert stray.cancelled == 1


def test_share_acknowledge_epochs():
    cache = ShareSessionCache(10)
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


def test_members_per_group_follow_opens_and_closes():
    cache = ShareSessionCache(3)
    _open(cache, member="m1", now=0)
    _open(cache, member="m1", now=0)          # replaced: still one
    _open(cache, member="m2", now=0)
    assert cache.members("g") == 2
    cache.remove(ShareSessionKey("g", "m1"))
    assert cache.members("g") == 1
    new_context(cache, "h", "x", INITIAL_EPOCH, [A0], [], False, 10)
    cache.remove(ShareSessionKey("g", "m2"))
    new_context(cache, "h", "y", INITIAL_EPOCH, [A0], [], False, 5000)
    assert (cache.members("g"), cache.members("h")) == (0, 2)
