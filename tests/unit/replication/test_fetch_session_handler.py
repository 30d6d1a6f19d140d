"""The follower's side of fetch sessions (Kafka's FetchSessionHandler): what a full and
an incremental request carry, and how the leader's answers move the session on; and
which fetcher a partition belongs to (Kafka's getFetcherId, values from Java)."""
from __future__ import annotations

import uuid

import pytest

from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES
from kafkapy.replication.fetch_session_handler import FetchSessionHandler, PartitionData
from kafkapy.replication.fetcher import fetcher_id, java_string_hash

TID = uuid.UUID(int=7)
OTHER = uuid.UUID(int=8)
_R = RESPONSES[1]


def pd(offset, topic_id=TID, last_epoch=0):
    return PartitionData(topic_id, offset, 0, 1024, 3, last_epoch)


def response(session_id, parts, error=0, topic_id=TID, name="t"):
    topics = []
    if parts:
        topics.append(_R.FetchableTopicResponse(topic=name, topic_id=topic_id, partitions=[
            _R.FetchableTopicResponse.PartitionData(partition_index=p) for p in parts]))
    return _R(version=17, throttle_time_ms=0, error_code=error, session_id=session_id,
              responses=topics, node_endpoints=[])


def test_full_then_incremental_sends_only_what_changed():
    h = FetchSessionHandler(0)
    first = h.build({("t", 0): pd(0), ("t", 1): pd(0), ("t", 2): pd(5)})
    assert first.is_full and (first.session_id, first.epoch) == (0, 0)
    assert list(first.to_send) == [("t", 0), ("t", 1), ("t", 2)]
    assert h.handle_response(response(42, [0, 1, 2]), 17)
    assert (h.session_id, h.epoch) == (42, 1)
    # Partition 1 moved on, 2 is forgotten (no longer fetched), 3 is new.
    nxt = h.build({("t", 0): pd(0), ("t", 1): pd(7), ("t", 3): pd(0)})
    assert not nxt.is_full and (nxt.session_id, nxt.epoch) == (42, 1)
    assert list(nxt.to_send) == [("t", 3), ("t", 1)], "new ones first, then the changed"
    assert nxt.to_forget == [(TID, ("t", 2))]
    assert list(nxt.session_partitions) == [("t", 0), ("t", 1), ("t", 3)]
    assert h.handle_response(response(42, [1]), 17)   # only news: fine
    assert h.epoch == 2
    same = h.build({("t", 0): pd(0), ("t", 1): pd(7), ("t", 3): pd(0)})
    assert same.to_send == {} and same.to_forget == [] and same.epoch == 2
    # A new last fetched epoch is a change too.
    h.handle_response(response(42, []), 17)
    changed = h.build({("t", 0): pd(0, last_epoch=1), ("t", 1): pd(7), ("t", 3): pd(0)})
    assert list(changed.to_send) == [("t", 0)]


def test_a_new_topic_id_replaces_the_partition():
    h = FetchSessionHandler(0)
    h.build({("t", 0): pd(0)})
    h.handle_response(response(9, [0]), 17)
    data = h.build({("t", 0): pd(0, topic_id=OTHER)})
    assert data.to_replace == [(TID, ("t", 0))] and list(data.to_send) == [("t", 0)]
    assert h.session_topic_names == {OTHER: "t"}


def test_a_partition_without_topic_id_means_names():
    h = FetchSessionHandler(0)
    data = h.build({("t", 0): pd(0, topic_id=None)})
    assert not data.can_use_topic_ids and h.session_topic_names == {}


def test_topic_ids_are_named_per_topic_and_one_missing_id_means_names():
    h = FetchSessionHandler(0)
    same_value = uuid.UUID(int=TID.int)     # equal to TID, another object
    h.build({("t", 0): pd(0), ("t", 1): pd(0, topic_id=same_value), ("u", 0): pd(0, OTHER)})
    assert h.session_topic_names == {TID: "t", OTHER: "u"}
    data = h.build({("t", 0): pd(0), ("u", 0): pd(0, topic_id=None), ("u", 1): pd(0, OTHER)})
    assert not data.can_use_topic_ids and h.session_topic_names == {}


def test_topic_ids_are_used_again_once_the_partition_without_one_is_forgotten():
    h = FetchSessionHandler(0)
    assert not h.build({("t", 0): pd(0), ("u", 0): pd(0, topic_id=None)}).can_use_topic_ids
    both = _R(version=12, throttle_time_ms=0, error_code=0, session_id=42, responses=[
        _R.FetchableTopicResponse(topic=name, partitions=[
            _R.FetchableTopicResponse.PartitionData(partition_index=0)]) for name in "tu"])
    assert h.handle_response(both, 12)
    forgetting = h.build({("t", 0): pd(0)})
    assert not forgetting.can_use_topic_ids, "the forgotten partition is named without an id"
    assert forgetting.to_forget == [(None, ("u", 0))]
    assert h.handle_response(response(42, [], name="t"), 12)
    after = h.build({("t", 0): pd(0)})
    assert after.can_use_topic_ids and h.session_topic_names == {TID: "t"}
    renamed = h.build({("t", 0): pd(0, topic_id=None)})
    assert not renamed.can_use_topic_ids and list(renamed.to_send) == [("t", 0)]


def test_the_session_is_handed_out_read_only_and_follows_the_session():
    h = FetchSessionHandler(0)
    h.build({("t", 0): pd(0)})
    h.handle_response(response(42, [0]), 17)
    data = h.build({("t", 0): pd(0), ("t", 1): pd(0)})
    with pytest.raises(TypeError):
        data.session_partitions[("t", 2)] = pd(0)
    assert list(data.session_partitions) == [("t", 0), ("t", 1)]
    h.handle_response(response(42, [1]), 17)
    h.build({("t", 1): pd(3)})
    assert list(data.session_partitions) == [("t", 1)], "a view, as Kafka's"


@pytest.mark.parametrize("error, expected", [
    (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, (0, 0)),     # a new session from scratch
    (ErrorCode.INVALID_FETCH_SESSION_EPOCH, (42, 0)),   # close this one, ask for a new one
])
def test_session_errors_start_over_with_a_full_fetch(error, expected):
    h = FetchSessionHandler(0)
    h.build({("t", 0): pd(0)})
    h.handle_response(response(42, [0]), 17)
    h.build({("t", 0): pd(1)})
    assert not h.handle_response(response(0, [], error=error), 17)
    assert (h.session_id, h.epoch) == expected
    assert h.build({("t", 0): pd(1)}).is_full


def test_a_sessionless_leader_gets_full_fetches():
    h = FetchSessionHandler(0)
    h.build({("t", 0): pd(0)})
    assert h.handle_response(response(0, [0]), 17)
    assert (h.session_id, h.epoch) == (0, 0) and h.build({("t", 0): pd(0)}).is_full


def test_invalid_answers_are_not_processed():
    h = FetchSessionHandler(0)
    h.build({("t", 0): pd(0), ("t", 1): pd(0)})
    assert not h.handle_response(response(42, [0]), 17), "a full answer omitting partition 1"
    assert (h.session_id, h.epoch) == (0, 0)
    h.build({("t", 0): pd(0)})
    assert h.handle_response(response(42, [0]), 17)
    h.build({("t", 0): pd(0)})
    assert not h.handle_response(response(42, [5]), 17), "not in the session"
    assert (h.session_id, h.epoch) == (42, 0)
    h.build({("t", 0): pd(0)})
    assert not h.handle_response(response(43, [0], topic_id=OTHER), 17), "unknown topic id"


def test_the_leader_closing_the_session_and_a_failed_request():
    h = FetchSessionHandler(0)
    h.build({("t", 0): pd(0)})
    h.handle_response(response(42, [0]), 17)
    h.build({("t", 0): pd(1)})
    assert h.handle_response(response(0, [0]), 17)
    assert (h.session_id, h.epoch) == (0, 0)
    h.build({("t", 0): pd(1)})
    h.handle_response(response(50, [0]), 17)
    h.handle_error()
    assert (h.session_id, h.epoch) == (50, 0)


def test_response_keys_name_topics_by_the_sessions_ids():
    h = FetchSessionHandler(0)
    h.build({("t", 0): pd(0)})
    assert list(h.response_keys(response(1, [0], name=""), 17)) == [("t", 0)]
    assert list(h.response_keys(response(1, [0], topic_id=OTHER), 17)) == []


# Java: (topic, partition, numFetchers) -> fetcher id and String.hashCode, from Kafka's code.
@pytest.mark.parametrize("topic, hash_code, ids", [
    ("t", 116, {(0, 3): 2, (1, 4): 1, (7, 4): 3, (49, 3): 0}),
    ("hello", 99162322, {(0, 4): 2, (1, 3): 2, (7, 4): 3, (49, 4): 1}),
    ("__consumer_offsets", -970371369, {(0, 3): 2, (0, 4): 3, (7, 4): 0, (49, 4): 2}),
    ("topic-é€", -957327807, {(0, 3): 1, (1, 4): 0, (7, 4): 2, (49, 3): 2}),
    ("a-very-long-topic-name-that-overflows-the-int-range-many-times", 1538645574,
     {(0, 4): 2, (1, 4): 3, (7, 4): 1, (49, 4): 3}),
])
def test_fetcher_ids_are_kafkas(topic, hash_code, ids):
    assert java_string_hash(topic) == hash_code
    for (partition, n), expected in ids.items():
        assert fetcher_id(topic, partition, n) == expected
        assert fetcher_id(topic, partition, 1) == 0
