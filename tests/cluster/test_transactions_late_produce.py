"""A Produce of transaction N delayed in the network until N has committed and N+1 has
begun: what the partition leader does with it (KIP-890), on three kafkapy brokers.

The producer is made of raw requests (``tests/support/raw_txn.py``) so the order of events
is exact: transaction N writes one record to partition ``other`` and sends one record to
partition ``target`` through a proxy that holds it (``tests/support/holding_proxy.py``);
N commits and its markers are written (DescribeTransactions: CompleteCommit); N+1 writes a
record to ``other``; only then does the proxy release N's Produce to ``target``'s leader.
``target`` is led by the transaction coordinator's broker or by another broker (the
leader then asks the coordinator over the network).

- transaction.version 1, ``transaction.partition.verification.enable=true`` (KIP-890
  part 1): ``target`` is not in transaction N+1, so the leader refuses the record
  (TRANSACTION_ABORTABLE to Produce v11) and it is never written;
- transaction.version 1, verification off: the record is appended after N's COMMIT
  marker, in the open transaction N+1 (read_committed does not see it while N+1 is open);
  N+1 adds ``target`` and commits, and read_committed then shows N's late record as
  part of N+1, before N+1's own record to ``target``;
- transaction.version 2 (Produce v12, EndTxn v5): N's commit bumped the producer epoch,
  so the late record, at N's epoch, is refused as from a fenced epoch and never written.

The same for N's TxnOffsetCommit held on its way to the group coordinator (on the
transaction coordinator's broker or another): refused at version 1 with verification
(TRANSACTION_ABORTABLE to TxnOffsetCommit v4: the group's offsets partition is not in
N+1) and at version 2 (TxnOffsetCommit v5, N's epoch is fenced); the group then has no
committed offset and none pending (OffsetFetch with require_stable answers at once).

The verification switch is a dynamic cluster-wide broker config (IncrementalAlterConfigs)
and transaction.version is finalized with kafka-features.sh on the same cluster, after the
version 1 cases.
"""
from __future__ import annotations

import pytest

from kafkapy.protocol.errors import ErrorCode
from kafkapy.records.batch import iter_headers
from kafkapy.records.record import decode_records
from tests.support import cluster_clients as clients
from tests.support.cluster import running_cluster, wait_for
from tests.support.holding_proxy import HoldingProxy
from tests.support.raw_txn import (V1, V2, RawTxnProducer, committed_offset,
                                   set_cluster_config)
from tests.support.transactions_e2e import finalize_transaction_version
from tests.support.wire import WireClient, stored_records
from tests.support.zookeeper_server import zookeeper_server  # noqa: F401 (fixture)

VERIFICATION = "transaction.partition.verification.enable"
# Partition p is led by broker p + 1.
ASSIGNMENT = {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}
PLACEMENTS = ("leader-on-coordinator", "leader-elsewhere")


@pytest.fixture(scope="module")
def late_cluster(tmp_path_factory, zookeeper_server):  # noqa: F811
    yield from running_cluster(tmp_path_factory.mktemp("late-produce"), zookeeper_server)


@pytest.fixture
def topic(late_cluster, unique):
    """A topic of the test's own (a record accepted outside any transaction its
    coordinator knows would keep a shared topic's last stable offset back for good)."""
    c, name = late_cluster, unique("late")
    clients.create_topic(c.bootstrap(1), name, assignment=ASSIGNMENT)
    want = {p: r[0] for p, r in ASSIGNMENT.items()}
    wait_for(lambda: all(c.leaders(name, i) == want for i in c.running_ids()), 30,
             f"{name}'s leaders {want} on every broker")
    return name


def _log(c, topic: str, leader: int, index: int, isolation: int = 0) -> list[tuple[int, str]]:
    """(offset, value or "COMMIT"/"ABORT") of every record of topic-index from offset 0:
    all of them (isolation 0), or those below the last stable offset (1)."""
    client = WireClient(c.bootstrap(leader))
    try:
        # At read_committed nothing is filtered out: no transaction of these tests aborts.
        data = stored_records(client, topic, index, isolation_level=isolation)
    finally:
        client.close()
    entries = []
    for h in iter_headers(data):
        for r in decode_records(data, h.position):
            if h.is_control:
                kind = int.from_bytes(r.key[2:4], "big")
                entries.append((r.offset, "COMMIT" if kind == 1 else "ABORT"))
            else:
                entries.append((r.offset, r.value.decode()))
    return entries


def _values(entries) -> list[str]:
    return [v for _, v in entries if v not in ("COMMIT", "ABORT")]


def _late_produce(c, topic: str, txn_id: str, protocol, placement: str):
    """Runs the scenario up to the release of N's held Produce: (producer, the topic's
    leaders, target, other, the held Produce's error code)."""
    producer = RawTxnProducer(c, txn_id, protocol)
    producer.init()
    coordinator = producer.coordinator
    leaders = c.leaders(topic, coordinator)
    if placement == "leader-on-coordinator":
        target = next(p for p, leader in leaders.items() if leader == coordinator)
    else:
        target = next(p for p, leader in leaders.items() if leader != coordinator)
    other = next(p for p in leaders if p != target)

    # Transaction N: a record to `other`, and one to `target` that the network holds.
    if protocol.explicit_add:
        assert producer.add_partitions([(topic, target), (topic, other)]) == 0
    assert producer.produce(leaders[other], topic, other, b"N-other") == 0
    proxy = HoldingProxy(c.nodes[leaders[target]].port).start()
    late = WireClient(f"127.0.0.1:{proxy.port}")
    try:
        proxy.hold()
        correlation, frame = producer.produce_frame(late, topic, target, b"N-late")
        late.send_raw(frame)
        wait_for(lambda: proxy.held > 0, 10, "N's Produce held in the proxy")

        assert producer.end(commit=True) == 0
        assert producer.wait_complete() == "CompleteCommit"
        # Transaction N+1 begins.
        if protocol.explicit_add:
            assert producer.add_partitions([(topic, other)]) == 0
        assert producer.produce(leaders[other], topic, other, b"N1-other") == 0

        proxy.release()
        error = producer.produce_answer(late, correlation)
    finally:
        late.close()
        proxy.stop()
    return producer, leaders, target, other, error


def _check_refused(c, topic, producer, leaders, target, other, error, expected) -> None:
    assert error == expected, f"late Produce answered {ErrorCode(error).name}"
    assert producer.end(commit=True) == 0
    producer.wait_complete()
    assert "N-late" not in _values(_log(c, topic, leaders[target], target))
    assert _values(_log(c, topic, leaders[other], other, isolation=1)) == ["N-other", "N1-other"]


@pytest.fixture
def verification(late_cluster):
    def switch(on: bool) -> None:
        set_cluster_config(late_cluster, VERIFICATION, "true" if on else "false")
    return switch


@pytest.mark.parametrize("placement", PLACEMENTS)
def test_v1_verification_refuses_the_late_record(late_cluster, topic, verification, placement):
    verification(True)
    producer, leaders, target, other, error = _late_produce(
        late_cluster, topic, f"v1-on-{placement}", V1, placement)
    try:
        # Produce v11 gets TRANSACTION_ABORTABLE (INVALID_TXN_STATE before v11).
        _check_refused(late_cluster, topic, producer, leaders, target, other, error,
                       ErrorCode.TRANSACTION_ABORTABLE)
    finally:
        producer.close()


@pytest.mark.parametrize("placement", PLACEMENTS)
def test_v1_without_verification_the_late_record_joins_the_next_transaction(
        late_cluster, topic, verification, placement):
    c = late_cluster
    verification(False)
    producer, leaders, target, other, error = _late_produce(
        c, topic, f"v1-off-{placement}", V1, placement)
    try:
        assert error == 0, f"late Produce answered {ErrorCode(error).name}"
        # After N's COMMIT marker.
        assert _log(c, topic, leaders[target], target) == [(0, "COMMIT"), (1, "N-late")]
        # Transaction N+1 holds it now: read_committed stops before it while N+1 is open.
        assert "N-late" not in _values(_log(c, topic, leaders[target], target, isolation=1))

        assert producer.add_partitions([(topic, target)]) == 0
        assert producer.produce(leaders[target], topic, target, b"N1-target") == 0
        assert producer.end(commit=True) == 0
        producer.wait_complete()
        entries = _log(c, topic, leaders[target], target, isolation=1)
        assert entries == [(0, "COMMIT"), (1, "N-late"), (2, "N1-target"), (3, "COMMIT")]
        # A stock read_committed consumer reads it too.
        read = clients.read_all(c.bootstrap(1), topic, 3, 4, "read_committed",
                                f"{topic}-reader")
        assert read[target] == [b"N-late", b"N1-target"]
        assert read[other] == [b"N-other", b"N1-other"]
    finally:
        producer.close()


# -- the same for a TxnOffsetCommit ----------------------------------------------------------

def _group_placed(c, txn_coordinator: int, placement: str, prefix: str) -> tuple[str, int]:
    """A group id whose coordinator is (or is not) the transaction coordinator's broker:
    (group, its coordinator)."""
    for i in range(60):
        group = f"{prefix}-{i}"
        node = wait_for(lambda: _coordinator_of(c, group), 30, f"{group}'s coordinator")
        if (node == txn_coordinator) == (placement == "leader-on-coordinator"):
            return group, node
    raise AssertionError(f"no group id placed {placement}")


def _coordinator_of(c, group: str) -> int | None:
    error, node = clients.find_coordinator(c, 1, group, 0)
    return node if error == 0 else None


def _late_offset_commit(c, topic: str, txn_id: str, protocol, placement: str):
    """Transaction N's TxnOffsetCommit held until N has committed and N+1 has begun:
    (producer, group, group coordinator, the held commit's error code)."""
    producer = RawTxnProducer(c, txn_id, protocol)
    producer.init()
    group, group_node = _group_placed(c, producer.coordinator, placement, f"{txn_id}-group")
    leaders = c.leaders(topic, producer.coordinator)
    if protocol.explicit_add:
        assert producer.add_partitions([(topic, 0)]) == 0
        assert producer.add_offsets(group) == 0
    assert producer.produce(leaders[0], topic, 0, b"N") == 0
    proxy = HoldingProxy(c.nodes[group_node].port).start()
    late = WireClient(f"127.0.0.1:{proxy.port}")
    try:
        proxy.hold()
        correlation, frame = producer.offset_commit_frame(late, group, topic, 0, 5)
        late.send_raw(frame)
        wait_for(lambda: proxy.held > 0, 10, "N's TxnOffsetCommit held in the proxy")
        assert producer.end(commit=True) == 0
        assert producer.wait_complete() == "CompleteCommit"
        if protocol.explicit_add:
            assert producer.add_partitions([(topic, 0)]) == 0
        assert producer.produce(leaders[0], topic, 0, b"N1") == 0
        proxy.release()
        error = producer.offset_commit_answer(late, correlation)
    finally:
        late.close()
        proxy.stop()
    return producer, group, group_node, error


def _check_offsets_refused(c, topic, producer, group, group_node, error, expected) -> None:
    assert error == expected, f"late TxnOffsetCommit answered {ErrorCode(error).name}"
    assert producer.end(commit=True) == 0
    producer.wait_complete()
    # Nothing pending, nothing committed: the late offsets were never written.
    assert committed_offset(c, group_node, group, topic, 0) == (0, -1)


@pytest.mark.parametrize("placement", PLACEMENTS)
def test_v1_verification_refuses_the_late_offset_commit(late_cluster, topic, verification,
                                                        placement):
    verification(True)
    producer, group, group_node, error = _late_offset_commit(
        late_cluster, topic, f"v1-offsets-{placement}", V1, placement)
    try:
        # TxnOffsetCommit v4 gets TRANSACTION_ABORTABLE (INVALID_TXN_STATE before v4).
        _check_offsets_refused(late_cluster, topic, producer, group, group_node, error,
                               ErrorCode.TRANSACTION_ABORTABLE)
    finally:
        producer.close()


@pytest.mark.parametrize("placement", PLACEMENTS)
def test_v2_epoch_bump_refuses_the_late_record(late_cluster, topic, verification, placement):
    c = late_cluster
    finalize_transaction_version(c, 2)
    verification(True)
    producer, leaders, target, other, error = _late_produce(
        c, topic, f"v2-{placement}", V2, placement)
    try:
        assert producer.epoch > 0
        _check_refused(c, topic, producer, leaders, target, other, error,
                       ErrorCode.INVALID_PRODUCER_EPOCH)
    finally:
        producer.close()


@pytest.mark.parametrize("placement", PLACEMENTS)
def test_v2_epoch_bump_refuses_the_late_offset_commit(late_cluster, topic, verification,
                                                      placement):
    finalize_transaction_version(late_cluster, 2)
    verification(True)
    producer, group, group_node, error = _late_offset_commit(
        late_cluster, topic, f"v2-offsets-{placement}", V2, placement)
    try:
        _check_offsets_refused(late_cluster, topic, producer, group, group_node, error,
                               ErrorCode.INVALID_PRODUCER_EPOCH)
    finally:
        producer.close()
