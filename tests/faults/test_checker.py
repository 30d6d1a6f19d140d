"""The fault checker on small synthetic histories: a clean history checks clean, and each
anomaly planted in it is found with the right count (and nothing else is)."""
from __future__ import annotations

import pytest

from tests.support.faults.checker import ANOMALIES, check
from tests.support.faults.history import History

T = "t"
OUT = "out"


class Builder:
    """Writes ops with explicit, increasing times into a History."""

    def __init__(self) -> None:
        self.history = History()
        self.clock = 0.0

    def _tick(self) -> float:
        self.clock += 1.0
        return self.clock

    def send(self, process, value, partition=0, offset=None, outcome="ok", topic=T):
        invocation = self.history.append({"process": process, "type": "invoke", "f": "send",
                                          "topic": topic, "value": value, "time": self._tick()})
        fields = {"partition": partition, "offset": offset} if outcome == "ok" else {
            "error": "timed out" if outcome == "info" else "rejected"}
        self.history.append({**{k: v for k, v in invocation.items() if k != "index"},
                             "type": outcome, "invoke_index": invocation["index"],
                             "time": self._tick(), **fields})

    def poll(self, process, records, epoch=0, isolation="read_uncommitted", topic=T,
             group="g"):
        return self.history.append({
            "process": process, "type": "ok", "f": "poll", "group": group, "epoch": epoch,
            "isolation": isolation, "time": self._tick(),
            "value": [[topic, partition, offset, value] for partition, offset, value in records]})

    def commit(self, process, offsets, group="g", outcome="ok", topic=T):
        value = [[topic, partition, offset] for partition, offset in offsets]
        invocation = self.history.append({"process": process, "type": "invoke", "f": "commit",
                                          "group": group, "value": value,
                                          "time": self._tick()})
        return invocation, outcome

    def complete_commit(self, pending) -> None:
        invocation, outcome = pending
        self.history.append({**{k: v for k, v in invocation.items() if k != "index"},
                             "type": outcome, "invoke_index": invocation["index"],
                             "time": self._tick()})

    def txn(self, process, writes, offsets=(), intent="commit", outcome="ok", group="copy",
            ended=True, topic=OUT, source=T, copies=()):
        value = {"writes": [[topic, p, o, v] for p, o, v in writes],
                 "offsets": [[source, p, o] for p, o in offsets], "intent": intent,
                 "copies": [[source, p, o, v] for p, o, v in copies]}
        invocation = self.history.append({"process": process, "type": "invoke", "f": "txn",
                                          "group": group, "value": value,
                                          "time": self._tick()})
        end_time = self._tick() if ended else None
        self.history.append({**{k: v for k, v in invocation.items() if k != "index"},
                             "type": outcome, "invoke_index": invocation["index"],
                             "end_time": end_time, "time": self._tick()})

    def committed_offsets(self, group, offsets, topic=T):
        self.history.append({"process": "final", "type": "ok", "f": "read-offsets",
                             "topic": topic, "group": group, "time": self._tick(),
                             "value": [[p, o] for p, o in offsets]})

    def final(self, records, partition=0, isolation="read_uncommitted", end=None, topic=T,
              outcome="ok"):
        end = end if end is not None else max((o + 1 for o, _ in records), default=0)
        self.history.append({"process": "final", "type": outcome, "f": "read-final",
                             "topic": topic, "partition": partition, "isolation": isolation,
                             "end": end, "time": self._tick(),
                             "value": [[o, v] for o, v in records]})


def clean() -> Builder:
    """Two producers, two consumers in one group with a rebalance between them, offsets
    committed forward, a copier that commits one transaction and aborts one, final reads."""
    b = Builder()
    b.send("p0", "p0-0", 0, 0)
    b.send("p1", "p1-0", 0, 1)
    b.send("p0", "p0-1", 0, 2)
    b.send("p1", "p1-1", 1, 0)
    b.send("p1", "p1-2", outcome="info")          # timed out: may or may not be there
    b.send("p0", "p0-2", outcome="fail")          # definitely not written
    b.poll("c0", [(0, 0, "p0-0"), (0, 1, "p1-0")])
    b.complete_commit(b.commit("c0", [(0, 2)]))
    b.poll("c0", [(0, 2, "p0-1"), (1, 0, "p1-1")])
    b.complete_commit(b.commit("c0", [(0, 3), (1, 1)]))
    # Rebalance: c1 takes partition 0 from its committed offset; polls again from there.
    b.poll("c1", [(0, 2, "p0-1")], epoch=1)
    b.complete_commit(b.commit("c1", [(0, 3)]))
    # The copier: committed txn writes at out/0 offsets 0..1 (marker at 2), an aborted one
    # at 3..4 (marker at 5), then a committed one at 6 (marker at 7).
    # Each copies records of t (the offsets are a view of one partition: enough here).
    b.txn("x0", [(0, 0, "p0-0>x0.0"), (0, 1, "p1-0>x0.0")], offsets=[(0, 2)],
          copies=[(0, 0, "p0-0"), (0, 1, "p1-0")])
    b.txn("x0", [(0, 3, "p0-1>x0.1"), (0, 4, "p1-1>x0.1")], offsets=[(0, 3)], intent="abort",
          copies=[(0, 2, "p0-1"), (1, 0, "p1-1")])
    b.txn("x0", [(0, 6, "p0-1>x0.2")], offsets=[(0, 3)], copies=[(0, 2, "p0-1")])
    b.poll("r0", [(0, 0, "p0-0>x0.0"), (0, 1, "p1-0>x0.0")], isolation="read_committed",
           topic=OUT, group="reader")
    b.poll("r0", [(0, 6, "p0-1>x0.2")], isolation="read_committed", topic=OUT, group="reader")
    b.final([(0, "p0-0"), (1, "p1-0"), (2, "p0-1"), (3, "p1-2")])
    b.final([(0, "p0-0"), (1, "p1-0"), (2, "p0-1"), (3, "p1-2")], isolation="read_committed")
    b.final([(0, "p1-1")], partition=1)
    b.final([(0, "p0-0>x0.0"), (1, "p1-0>x0.0"), (6, "p0-1>x0.2")], topic=OUT,
            isolation="read_committed", end=8)
    b.final([(0, "p0-0>x0.0"), (1, "p1-0>x0.0"), (3, "p0-1>x0.1"), (4, "p1-1>x0.1"),
             (6, "p0-1>x0.2")], topic=OUT, end=8)
    return b


REPLICAS = {(T, 0): {1: [(0, "p0-0"), (1, "p1-0"), (2, "p0-1"), (3, "p1-2")],
                     2: [(0, "p0-0"), (1, "p1-0"), (2, "p0-1"), (3, "p1-2")],
                     3: [(0, "p0-0"), (1, "p1-0")]}}


def only(report, name: str, count: int) -> None:
    expected = {anomaly: 0 for anomaly in ANOMALIES}
    expected[name] = count
    assert report.counts == expected, report.examples


def clean_with_offsets() -> Builder:
    """``clean()`` and the groups' committed offsets read at the end."""
    b = clean()
    b.committed_offsets("g", [(0, 3), (1, 1)])
    b.committed_offsets("copy", [(0, 3), (1, -1)])
    return b


def test_clean_history_checks_clean():
    report = check(clean_with_offsets().history, REPLICAS)
    assert report.counts == {name: 0 for name in ANOMALIES}, report.examples
    assert report.valid
    assert report.acked == 7          # four sends, three records of committed transactions
    assert report.unknown == 1 and report.failed == 3
    assert set(report.longest_unavailability) == {"send", "poll", "commit", "txn"}


def test_history_round_trips_through_its_file(tmp_path):
    history = clean().history
    history.dump(tmp_path / "h.jsonl")
    loaded = History.load(tmp_path / "h.jsonl")
    assert loaded.ops == history.ops
    assert check(loaded, REPLICAS).counts == check(history, REPLICAS).counts


def test_lost_write():
    b = clean()
    b.send("p0", "p0-9", 0, 4)         # acked at offset 4, but the final read lacks it
    b.send("p1", "p1-9", 1, 1)         # and another on partition 1
    b.send("p1", "p1-8", outcome="info")   # unknown: absent is not lost
    b.final([(0, "p0-0"), (1, "p1-0"), (2, "p0-1"), (3, "p1-2")], end=5)
    b.final([(0, "p1-1")], partition=1, end=2)
    report = check(b.history, REPLICAS)
    only(report, "lost-write", 2)
    assert {e["value"] for e in report.examples["lost-write"]} == {"p0-9", "p1-9"}


def test_lost_write_of_unknown_outcome_that_a_poll_returned():
    b = clean()
    b.send("p1", "p1-5", outcome="info")       # timed out, yet a consumer polled it at 4
    b.poll("c6", [(0, 4, "p1-5")], epoch=3)
    b.send("p1", "p1-6", outcome="info")       # timed out, never seen: absent is fine
    # An unknown transaction polled only at read_uncommitted proves nothing; one polled at
    # read_committed committed.
    b.txn("x1", [(0, 8, "p1-2>x1.0")], outcome="info")
    b.txn("x1", [(0, 9, "p0-0>x1.1")], outcome="info")
    b.poll("r9", [(0, 8, "p1-2>x1.0")], topic=OUT)
    b.poll("r9", [(0, 9, "p0-0>x1.1")], topic=OUT, isolation="read_committed", epoch=1)
    b.final([(0, "p0-0"), (1, "p1-0"), (2, "p0-1"), (3, "p1-2")], end=5)
    b.final([(0, "p0-0>x0.0"), (1, "p1-0>x0.0"), (6, "p0-1>x0.2")], topic=OUT,
            isolation="read_committed", end=10)
    b.final([(0, "p0-0>x0.0"), (1, "p1-0>x0.0"), (3, "p0-1>x0.1"), (4, "p1-1>x0.1"),
             (6, "p0-1>x0.2")], topic=OUT, end=10)
    report = check(b.history)
    only(report, "lost-write", 2)
    assert {e["value"] for e in report.examples["lost-write"]} == {"p1-5", "p0-0>x1.1"}


def test_lost_write_of_a_committed_transaction():
    b = clean()
    b.txn("x0", [(0, 8, "p1-1>x0.3")], offsets=[(1, 1)])
    # committed, its delivery report never seen: looked for in every partition of the topic
    b.txn("x0", [(None, None, "p1-2>x0.4")], offsets=[(0, 4)])
    b.final([(0, "p0-0>x0.0"), (1, "p1-0>x0.0"), (6, "p0-1>x0.2")], topic=OUT,
            isolation="read_committed", end=12)
    only(check(b.history), "lost-write", 2)


def test_lost_write_without_final_reads_by_polls():
    b = Builder()
    b.send("p0", "a", 0, 0)
    b.send("p0", "b", 0, 1)
    b.send("p0", "c", 0, 2)
    b.send("p0", "d", 0, 3)             # beyond the highest poll: not known lost
    b.poll("c0", [(0, 0, "a")])
    b.poll("c1", [(0, 2, "c")])         # c1 saw offset 2, so "b" at 1 should be seen by someone
    only(check(b.history), "lost-write", 1)
    b.send("p0", "e", 0, 4)
    b.poll("c1", [(0, 4, "f")])         # offset 4 read holding another value: "e" is gone,
    report = check(b.history)           # and "d" at 3 is now below a read offset, unread
    assert (report.counts["lost-write"], report.counts["inconsistent-offsets"]) == (3, 1)


def test_duplicate():
    b = clean()
    b.final([(0, "p0-0"), (1, "p1-0"), (2, "p0-1"), (3, "p1-2"), (4, "p0-1")])
    report = check(b.history)
    only(report, "duplicate", 1)
    assert report.examples["duplicate"][0]["at"] == [(0, 2), (0, 4)]


def test_duplicate_copy():
    b = clean()
    # A second committed transaction (a zombie copier, say) copies p0-0 again; an unknown one
    # copies p1-0 again; the aborted copy of p1-1 is read too: only committed copies count.
    b.txn("x9", [(0, 8, "p0-0>x9.0")], offsets=[(0, 1)], copies=[(0, 0, "p0-0")], group="x9")
    b.txn("x9", [(0, 9, "p1-0>x9.1")], offsets=[(0, 2)], copies=[(0, 1, "p1-0")], group="x9",
          outcome="info")
    b.final([(0, "p0-0>x0.0"), (1, "p1-0>x0.0"), (6, "p0-1>x0.2"), (8, "p0-0>x9.0"),
             (9, "p1-0>x9.1")], topic=OUT, isolation="read_committed", end=11)
    b.final([(0, "p0-0>x0.0"), (1, "p1-0>x0.0"), (3, "p0-1>x0.1"), (4, "p1-1>x0.1"),
             (6, "p0-1>x0.2"), (8, "p0-0>x9.0"), (9, "p1-0>x9.1")], topic=OUT, end=11)
    report = check(b.history)
    only(report, "duplicate", 2)
    assert [e["copied"] for e in report.examples["duplicate"]] == [[T, 0, 0], [T, 0, 1]]


def test_inconsistent_offsets():
    b = clean()
    b.send("p0", "p0-7", 0, 4)          # acked at offset 4, which a poll finds holding another
    b.poll("c0", [(0, 3, "p1-2"), (0, 4, "p0-8")], epoch=5)
    b.final([(0, "p0-0"), (1, "p1-0"), (2, "p0-1"), (3, "p1-2"), (4, "p0-8"), (5, "p0-7")])
    report = check(b.history)
    only(report, "inconsistent-offsets", 1)
    assert report.examples["inconsistent-offsets"][0]["values"] == ["p0-7", "p0-8"]


def test_inconsistent_offsets_of_transactional_writes():
    b = clean()
    # An aborted transaction's record was delivered at offset 8; the log holds another there.
    b.txn("x0", [(0, 8, "p1-2>x0.3")], offsets=[(0, 4)], intent="abort")
    b.final([(0, "p0-0>x0.0"), (1, "p1-0>x0.0"), (3, "p0-1>x0.1"), (4, "p1-1>x0.1"),
             (6, "p0-1>x0.2"), (8, "zz")], topic=OUT, end=10)
    only(check(b.history), "inconsistent-offsets", 1)


def test_nonmonotonic_poll():
    b = clean()
    b.poll("c0", [(0, 0, "p0-0")])      # c0, epoch 0, already at offset 2 on partition 0
    b.poll("c0", [(1, 0, "p1-1")])      # the same offset again on partition 1
    b.poll("c1", [(0, 2, "p0-1")], epoch=2)   # a new epoch may start anywhere
    only(check(b.history), "nonmonotonic-poll", 2)


def test_poll_skip():
    b = clean()
    b.poll("c3", [(0, 0, "p0-0"), (0, 2, "p0-1")])   # within one poll, skips offset 1
    b.poll("c3", [(0, 3, "p1-2")])                   # next: no skip
    b.poll("c4", [(0, 1, "p1-0")])
    b.poll("c4", [(0, 3, "p1-2")])                   # across polls, skips offset 2
    # A read_committed reader passing over markers and aborted records does not skip.
    b.poll("r1", [(0, 1, "p1-0>x0.0"), (0, 6, "p0-1>x0.2")], isolation="read_committed",
           topic=OUT)
    # The same gap read at read_uncommitted skips the aborted records it should have seen.
    b.poll("r2", [(0, 1, "p1-0>x0.0"), (0, 6, "p0-1>x0.2")], topic=OUT)
    report = check(b.history)
    only(report, "poll-skip", 3)
    assert report.examples["poll-skip"][0]["skipped"] == [1]


def test_aborted_read():
    b = clean()
    b.poll("r3", [(0, 3, "p0-1>x0.1")], isolation="read_committed", topic=OUT)
    b.poll("c5", [(0, 4, "p0-2")])     # a send the client was told failed
    # read_uncommitted may see aborted records: not an anomaly
    b.poll("r4", [(0, 3, "p0-1>x0.1")], topic=OUT)
    b.final([(0, "p0-0"), (1, "p1-0"), (2, "p0-1"), (3, "p1-2"), (4, "p0-2")])
    report = check(b.history)
    # the poll of the aborted transaction, the poll and the final read of the failed send
    only(report, "aborted-read", 3)


def test_uncommitted_read():
    b = clean()
    # The copier has written but not yet committed; a read_committed poll sees the record.
    invocation = b.history.append({"process": "x1", "type": "invoke", "f": "txn", "group": "copy",
                                   "time": b._tick(), "value": {
                                       "writes": [[OUT, 0, 8, "p1-2>x1.0"]],
                                       "offsets": [[T, 0, 4]], "intent": "commit"}})
    b.poll("r5", [(0, 8, "p1-2>x1.0")], isolation="read_committed", topic=OUT)
    b.history.append({**{k: v for k, v in invocation.items() if k != "index"}, "type": "ok",
                      "invoke_index": invocation["index"], "end_time": b._tick(),
                      "time": b._tick()})
    b.poll("r6", [(0, 8, "p1-2>x1.0")], isolation="read_committed", topic=OUT)  # after: fine
    # A transaction that never ended (no completion), read at read_committed.
    b.history.append({"process": "x2", "type": "invoke", "f": "txn", "group": "copy",
                      "time": b._tick(), "value": {"writes": [[OUT, 0, 10, "p0-0>x2.0"]],
                                                   "offsets": [], "intent": "commit"}})
    b.poll("r7", [(0, 10, "p0-0>x2.0")], isolation="read_committed", topic=OUT)
    b.final([(0, "p0-0>x0.0"), (1, "p1-0>x0.0"), (6, "p0-1>x0.2"), (8, "p1-2>x1.0")],
            topic=OUT, isolation="read_committed", end=10)
    b.final([(0, "p0-0>x0.0"), (1, "p1-0>x0.0"), (3, "p0-1>x0.1"), (4, "p1-1>x0.1"),
             (6, "p0-1>x0.2"), (8, "p1-2>x1.0"), (10, "p0-0>x2.0")], topic=OUT, end=11)
    only(check(b.history), "uncommitted-read", 2)


def test_commit_backwards():
    b = clean()
    b.complete_commit(b.commit("c1", [(0, 2)]))     # after c0's 3 and c1's 3: backwards
    b.complete_commit(b.commit("c1", [(1, 1)]))     # equal: fine
    b.complete_commit(b.commit("c1", [(1, 0)], outcome="fail"))   # failed: not a commit
    b.complete_commit(b.commit("c1", [(0, 1)], group="other"))    # another group
    # Concurrent commits may complete in either order.
    first, second = b.commit("c0", [(1, 5)]), b.commit("c1", [(1, 4)])
    b.complete_commit(first)
    b.complete_commit(second)
    # A committed transaction's offsets going back in the copier's group.
    b.txn("x0", [(0, 8, "p1-2>x0.3")], offsets=[(0, 1)])
    b.final([(0, "p0-0>x0.0"), (1, "p1-0>x0.0"), (6, "p0-1>x0.2"), (8, "p1-2>x0.3")],
            topic=OUT, isolation="read_committed", end=10)
    report = check(b.history)
    only(report, "commit-backwards", 2)


def test_commit_backwards_at_the_end():
    b = clean()
    b.committed_offsets("g", [(0, 2), (1, -1)])    # both below what was committed ok
    b.committed_offsets("copy", [(0, 3)])
    only(check(b.history), "commit-backwards", 2)


def test_lost_write_of_a_copy():
    b = clean()
    # The copier group's offset on partition 0 is 4 at the end, yet p1-2 (offset 3) was
    # never copied by a committed transaction; a copy by an aborted one does not count.
    b.txn("x0", [(0, 8, "p1-2>x0.3")], offsets=[(0, 4)], copies=[(0, 3, "p1-2")],
          intent="abort")
    b.final([(0, "p0-0>x0.0"), (1, "p1-0>x0.0"), (3, "p0-1>x0.1"), (4, "p1-1>x0.1"),
             (6, "p0-1>x0.2"), (8, "p1-2>x0.3")], topic=OUT, end=10)
    b.committed_offsets("g", [(0, 3), (1, 1)])
    b.committed_offsets("copy", [(0, 4)])
    report = check(b.history)
    only(report, "lost-write", 1)
    assert report.examples["lost-write"][0]["value"] == "p1-2"


def test_divergent_replicas():
    b = clean()
    replicas = {(T, 0): {1: [(0, "p0-0"), (1, "p1-0"), (2, "p0-1"), (3, "p1-2")],
                         2: [(0, "p0-0"), (1, "p1-0"), (2, "zz"), (3, "p1-2"), (4, "tail")],
                         3: [(0, "p0-0"), (1, "p1-0"), (2, "p0-1"), (3, "p1-2"), (4, "other")]}}
    report = check(b.history, replicas)
    only(report, "divergent-replicas", 2)
    # A single replica disagreeing with the final read below its end diverges too.
    only(check(b.history, {(T, 1): {1: [(0, "p1-9")]}}), "divergent-replicas", 1)


@pytest.mark.parametrize("name", ANOMALIES)
def test_every_anomaly_has_a_planted_test(name):
    assert f"test_{name.replace('-', '_')}" in globals()


def test_an_open_transaction_after_healing_is_noted():
    b = clean()
    assert check(b.history).notes == []
    b.final([(0, "p0-0>x0.0"), (1, "p1-0>x0.0")], topic=OUT, isolation="read_committed",
            end=3)
    b.final([(0, "p0-0>x0.0"), (1, "p1-0>x0.0"), (3, "p0-1>x0.1"), (4, "p1-1>x0.1"),
             (6, "p0-1>x0.2")], topic=OUT, end=8)
    report = check(b.history)
    assert report.notes == [f"{OUT}/0: last stable offset 3 below the high watermark 8 after "
                            f"healing (an open transaction)"]
    # the committed record past the last stable offset is unreadable: counted lost
    only(report, "lost-write", 1)


def test_a_final_read_that_did_not_reach_the_end_is_noted():
    b = clean()
    b.final([(0, "p1-1")], partition=1, end=2, outcome="info")
    report = check(b.history)
    assert report.notes == [f"final reads that did not reach the end: {T}/1 read_uncommitted"]
    only(report, "lost-write", 0)


def test_longest_unavailability_counts_successes_only():
    b = Builder()
    b.send("p0", "a", 0, 0)                               # ok at t=2
    b.poll("c0", [(0, 0, "a")])                           # t=3
    b.clock += 10
    b.history.append({"process": "c0", "type": "ok", "f": "poll", "value": [], "group": "g",
                      "epoch": 0, "isolation": "read_uncommitted", "time": b._tick()})  # 14
    b.send("p0", "b", outcome="info")                     # invoked 15, info 16
    b.send("p0", "c", 0, 1)                               # ok at 18
    b.poll("c0", [(0, 1, "c")])                           # 19
    report = check(b.history)
    assert report.longest_unavailability == {"send": 16.0, "poll": 16.0}
