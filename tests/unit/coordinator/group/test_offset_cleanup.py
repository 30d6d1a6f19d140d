"""When the group coordinator lets an Empty group go (Kafka's cleanupGroupMetadata).

A group that is Empty and holds no offsets is removed: after its last offset expires, is
deleted with OffsetDelete or goes with its topic -- but not while a transaction's offsets
for it are still pending, which count as offsets in Kafka (GroupMetadata.hasOffsets).
"""
from __future__ import annotations

from kafkapy.coordinator.group.offsets import OffsetAndMetadata
from tests.support.group_coordinator import Harness


def _offset(h, offset: int = 1) -> dict:
    return {("t", 0): OffsetAndMetadata(offset, -1, "", h.clock.time_ms())}


def test_offset_delete_of_the_last_offset_removes_the_group(tmp_path):
    h = Harness(tmp_path)
    c = h.coordinator
    c.commit_offsets("g", "", None, -1, {**_offset(h), ("t", 1): _offset(h)[("t", 0)]})
    assert c.delete_offsets("g", [("t", 0)]) == (0, {("t", 0): 0})
    assert "g" in c._groups                  # one offset left
    assert c.delete_offsets("g", [("t", 1)]) == (0, {("t", 1): 0})
    assert "g" not in c._groups
    assert c.describe_group("g").state == "Dead"
    assert "g" not in h.restart()._groups    # its offsets' tombstones were written


def test_pending_transactional_offsets_keep_an_empty_group(tmp_path):
    h = Harness(tmp_path, offsets_retention_ms=60_000)
    c = h.coordinator
    errors = c.commit_txn_offsets("txn-g", 42, 0, "", None, -1, _offset(h))
    assert errors == {("t", 0): 0}
    h.clock.advance(120_000)
    c.expire_offsets()
    assert "txn-g" in c._groups              # pending offsets count, as in Kafka
    c.complete_txn_offsets(42, [c.partition_for("txn-g")], commit=False)
    c.expire_offsets()
    assert "txn-g" not in c._groups          # aborted: nothing left, so it goes


def test_deleting_a_topic_drops_its_offsets_and_the_groups_left_without_any(tmp_path):
    h = Harness(tmp_path)
    c = h.coordinator
    om = _offset(h)[("t", 0)]
    c.commit_offsets("only-t", "", None, -1, {("t", 0): om, ("t", 1): om})
    c.commit_offsets("t-and-u", "", None, -1, {("t", 0): om, ("u", 0): om})
    c.handle_deleted_topic("t")
    assert "only-t" not in c._groups
    assert c.fetch_offsets("t-and-u", None) == (0, [(("u", 0), om)])
    restarted = h.restart()
    assert "only-t" not in restarted._groups
    assert restarted.fetch_offsets("t-and-u", None) == (0, [(("u", 0), om)])
