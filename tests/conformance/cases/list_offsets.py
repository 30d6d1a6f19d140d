"""ListOffsets (2): special timestamps, by time, unknown topic/partition, leader epochs,
isolation levels, invalid timestamps, empty requests."""
from __future__ import annotations

from tests.conformance.cases import FIXED_TIMESTAMP, for_api
from tests.conformance.cases.common import case
from tests.conformance.state import MISSING, MULTI, PLAIN, PRODUCE, STRICT, TXN


def _lo(topic, partitions, timestamp, isolation=0, epoch=-1):
    return {"replica_id": -1, "isolation_level": isolation, "topics": [
        {"name": topic, "partitions": [
            {"partition_index": p, "timestamp": timestamp, "current_leader_epoch": epoch,
             "max_num_offsets": 1} for p in partitions]}]}


@for_api(2)
def list_offsets(v: int):
    yield case("latest", _lo(PLAIN, [0], -1))
    yield case("earliest", _lo(PLAIN, [0], -2))
    yield case("by-time", _lo(PLAIN, [0], FIXED_TIMESTAMP + 1))
    yield case("by-time-after-all", _lo(PLAIN, [0], FIXED_TIMESTAMP + 10**6))
    yield case("multi-partition", _lo(MULTI, [0, 1, 2], -1))
    yield case("unknown-topic", _lo(MISSING, [0], -1))
    yield case("unknown-partition", _lo(PLAIN, [4], -1))
    yield case("invalid-timestamp-9", _lo(PLAIN, [0], -9))
    yield case("no-topics", {"replica_id": -1, "topics": []})
    yield case("duplicate-partition", _lo(PLAIN, [0, 0], -1))
    yield case("txn-latest", _lo(TXN, [0], -1))
    if v >= 2:
        yield case("txn-latest-committed", _lo(TXN, [0], -1, isolation=1))
    if v >= 4:
        yield case("current-epoch-0", _lo(PLAIN, [0], -1, epoch=0))
        yield case("unknown-leader-epoch", _lo(PLAIN, [0], -1, epoch=9))
    # what the Produce cases wrote: LogAppendTime and compressed batches
    yield case("log-append-time-latest", _lo(STRICT, [3, 9], -1))
    yield case("compressed-by-time", _lo(PRODUCE, [9], FIXED_TIMESTAMP + 1))
    for ts, first in ((-3, 7), (-4, 8), (-5, 9)):
        if v >= first:
            yield case(f"timestamp{ts}", _lo(PLAIN, [0], ts))
            yield case(f"timestamp{ts}-compressed", _lo(PRODUCE, [9], ts))
