"""Partition reassignment: AlterPartitionReassignments (45), ListPartitionReassignments (46).

With one broker a reassignment can only keep the partition on it (answered NONE and done at
once); the cases compare the validation errors and messages of Kafka's ZooKeeper-mode
controller and the empty listings."""
from __future__ import annotations

from tests.conformance.cases import for_api
from tests.conformance.cases.admin import created
from tests.conformance.cases.common import case
from tests.conformance.state import MISSING, PLAIN


def _alter(topic: str, partition: int, replicas):
    return {"timeout_ms": 30000, "topics": [{"name": topic, "partitions": [
        {"partition_index": partition, "replicas": replicas}]}]}


@for_api(45)
def alter_partition_reassignments(v: int):
    t = f"conf-apr-v{v}"
    yield case("same-broker", _alter(f"{t}-same", 0, [1]), setup=created(f"{t}-same"))
    yield case("cancel-nothing-in-flight", _alter(PLAIN, 0, None))
    yield case("empty-replicas", _alter(PLAIN, 0, []))
    yield case("duplicate-replicas", _alter(PLAIN, 0, [1, 1]))
    yield case("negative-broker", _alter(PLAIN, 0, [1, -1]))
    yield case("broker-not-alive", _alter(PLAIN, 0, [1, 7]))
    yield case("unknown-topic", _alter(MISSING, 0, [1]))
    yield case("unknown-partition", _alter(PLAIN, 9, [1]))
    yield case("cancel-unknown-partition", _alter(MISSING, 0, None))
    yield case("no-topics", {"timeout_ms": 30000, "topics": []})


@for_api(46)
def list_partition_reassignments(v: int):
    yield case("all", {"timeout_ms": 30000, "topics": None})
    yield case("named", {"timeout_ms": 30000, "topics": [
        {"name": PLAIN, "partition_indexes": [0, 5]}, {"name": MISSING,
                                                       "partition_indexes": [0]}]})
    yield case("no-topics", {"timeout_ms": 30000, "topics": []})
