"""Fetch (1): reads from the prepared logs - ordinary, log start/end edges, unknown topics,
partitions, ids and leader epochs, isolation levels, sessions, divergence."""
from __future__ import annotations

from tests.conformance.cases import for_api
from tests.conformance.cases.common import UNKNOWN_TOPIC_ID, case, tid
from tests.conformance.state import (
    COMPACT, LOG_START, MISSING, MULTI, PLAIN, PLAIN_END, PRODUCE, STRICT, TIMESTAMPS, TXN)


def _part(partition, offset, **extra):
    return dict({"partition": partition, "fetch_offset": offset,
                 "partition_max_bytes": 1 << 20, "current_leader_epoch": -1,
                 "log_start_offset": -1}, **extra)


def _fetch(topic, parts, topic_id=None, **extra):
    def build(side):
        return dict({"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0,
                     "max_bytes": 1 << 22, "isolation_level": 0, "session_id": 0,
                     "session_epoch": -1, "topics": [
                         {"topic": topic, "topic_id": topic_id or tid(side, topic),
                          "partitions": parts}],
                     "forgotten_topics_data": [], "rack_id": ""}, **extra)
    return build


@for_api(1)
def fetch(v: int):
    yield case("ordinary", _fetch(PLAIN, [_part(0, LOG_START)]))
    yield case("middle", _fetch(PLAIN, [_part(0, 6)]))
    yield case("at-end", _fetch(PLAIN, [_part(0, PLAIN_END)]))
    yield case("past-end", _fetch(PLAIN, [_part(0, PLAIN_END + 5)]))
    yield case("before-log-start", _fetch(PLAIN, [_part(0, 1)]))
    yield case("negative-offset", _fetch(PLAIN, [_part(0, -1)]))
    yield case("unknown-partition", _fetch(PLAIN, [_part(9, 0)]))
    yield case("multi-partition", _fetch(MULTI, [_part(p, 0) for p in range(3)]))
    yield case("compacted", _fetch(COMPACT, [_part(0, 0)]))
    yield case("tiny-partition-max-bytes", _fetch(PLAIN, [
        dict(_part(0, LOG_START), partition_max_bytes=1)]))
    yield case("tiny-max-bytes", lambda s: dict(_fetch(PLAIN, [_part(0, LOG_START)])(s),
                                                max_bytes=1))
    # what the Produce cases of some version wrote (plain, gzip, zstd, idempotent batches)
    yield case("produced", _fetch(PRODUCE, [_part(v % 12, 0)]))
    yield case("produced-log-append-time", _fetch(STRICT, [_part(v % 12, 0)]))
    yield case("produced-timestamps", _fetch(TIMESTAMPS, [_part(v % 12, 0)]))
    yield case("no-topics", lambda s: dict(_fetch(PLAIN, [])(s), topics=[]))
    yield case("txn-read-uncommitted", _fetch(TXN, [_part(0, 0)]))
    yield case("txn-read-committed", _fetch(TXN, [_part(0, 0)], isolation_level=1))
    yield case("txn-read-committed-past-lso", _fetch(TXN, [_part(0, 7)], isolation_level=1))
    if v < 13:
        yield case("unknown-topic", _fetch(MISSING, [_part(0, 0)]))
    else:
        yield case("unknown-topic-id", _fetch(MISSING, [_part(0, 0)],
                                              topic_id=UNKNOWN_TOPIC_ID))
    if v >= 7:
        yield case("new-session", _fetch(PLAIN, [_part(0, LOG_START)], session_epoch=0))
        yield case("unknown-session", _fetch(PLAIN, [_part(0, LOG_START)],
                                             session_id=123456, session_epoch=1))
        yield case("epoch-without-session", _fetch(PLAIN, [_part(0, LOG_START)],
                                                   session_epoch=3))
        yield case("forgotten-without-session", lambda s: dict(
            _fetch(PLAIN, [_part(0, LOG_START)])(s), forgotten_topics_data=[
                {"topic": MULTI, "topic_id": tid(s, MULTI), "partitions": [0]}]))
    if v >= 9:
        yield case("current-epoch-0", _fetch(PLAIN, [_part(0, LOG_START,
                                                          current_leader_epoch=0)]))
        yield case("unknown-leader-epoch", _fetch(PLAIN, [_part(0, LOG_START,
                                                                current_leader_epoch=7)]))
    if v >= 12:
        yield case("diverging-epoch", _fetch(PLAIN, [_part(0, 6, last_fetched_epoch=4)]))
        yield case("last-fetched-epoch-0", _fetch(PLAIN, [_part(0, 6, last_fetched_epoch=0)]))
    if v >= 11:
        yield case("rack-id", lambda s: dict(_fetch(PLAIN, [_part(0, LOG_START)])(s),
                                             rack_id="rack-a"))
