"""Each fault workload against one real kafkapy broker, no faults: its history, with the final
reads, checks clean, and records what the workload is meant to record."""
from __future__ import annotations

import os
import signal
import time
import uuid

import pytest
from confluent_kafka import Producer

from tests.support.faults.checker import ANOMALIES, check
from tests.support.faults.history import History
from tests.support.broker_process import free_port
from tests.support.cluster import wait_for
from tests.support.cluster_clients import create_topic
from tests.support.faults.workloads import (GroupConsumerWorkload, ProducerWorkload,
                                            TxnCopierWorkload, copied_value, final_reads)

PARTITIONS = 3


def create_topics(bootstrap: str, *names: str) -> None:
    for name in names:
        create_topic(bootstrap, name, partitions=PARTITIONS)


def values_of(history: History, f: str, type_: str = "ok") -> list:
    return [op for op in history.ops if op["f"] == f and op["type"] == type_]


def polled_values(history: History, topic: str) -> set:
    return {value for op in values_of(history, "poll")
            for t, _, _, value in op["value"] if t == topic}


def committed_ends(history: History) -> dict:
    ends = {}
    for op in values_of(history, "commit"):
        for _, partition, offset in op["value"]:
            ends[partition] = max(ends.get(partition, 0), offset)
    return ends


def sent_ends(history: History) -> dict:
    ends = {}
    for op in values_of(history, "send"):
        ends[op["partition"]] = max(ends.get(op["partition"], 0), op["offset"] + 1)
    return ends


def assert_clean(report) -> None:
    assert report.counts == {name: 0 for name in ANOMALIES}, report.examples


@pytest.fixture
def topic():
    return f"faults-{uuid.uuid4().hex[:8]}"


def test_producers_acknowledge_every_unique_value(broker, topic, tmp_path):
    create_topics(broker.bootstrap, topic)
    history = History()
    producers = ProducerWorkload(topic, producers=2, max_ops=150, max_seconds=30,
                                 interval=0.002).start(broker.bootstrap, history)
    assert producers.wait(40) and not producers.errors
    final_reads(broker.bootstrap, topic, history)
    history.dump(tmp_path / "history.jsonl")
    report = check(History.load(tmp_path / "history.jsonl"))
    assert_clean(report)
    sends = values_of(history, "send")
    assert report.acked == len(sends) == 300
    assert len({(op["partition"], op["offset"]) for op in sends}) == 300
    finals = values_of(history, "read-final")
    assert len(finals) == 2 * PARTITIONS
    assert sum(op["end"] for op in finals) == 2 * 300


def test_group_consumers_poll_and_commit_what_was_sent(broker, topic):
    create_topics(broker.bootstrap, topic)
    history = History()
    consumers = GroupConsumerWorkload(topic, consumers=2, max_seconds=40).start(
        broker.bootstrap, history)
    wait_for(lambda: len(consumers.assignments) == 2 and all(
        consumers.assignments.values()), 30, "both consumers to have partitions")
    producers = ProducerWorkload(topic, producers=2, max_ops=100, max_seconds=30,
                                 interval=0.01).start(broker.bootstrap, history)
    assert producers.wait(40) and not producers.errors
    sent = {op["value"] for op in values_of(history, "send")}
    wait_for(lambda: sent <= polled_values(history, topic), 30, "the consumers to poll all")
    # The consumers commit what they polled: the group's committed offsets reach the end of
    # every partition.
    wait_for(lambda: committed_ends(history) == sent_ends(history), 30,
               "the commits to reach every partition's end")
    consumers.stop()
    assert not consumers.errors
    final_reads(broker.bootstrap, topic, history)
    report = check(history)
    assert_clean(report)
    assert report.acked == 200
    commits = values_of(history, "commit")
    assert commits and {op["group"] for op in commits} == {f"{topic}-group"}
    # Both consumers took part; each poll carries its consumer's assignment epoch.
    polls = values_of(history, "poll")
    assert {op["process"] for op in polls} == {"consumer-0", "consumer-1"}
    assert all(op["epoch"] >= 1 for op in polls)


def test_transactional_copier_commits_and_aborts(broker, topic):
    source, target = topic, f"{topic}-out"
    create_topics(broker.bootstrap, source, target)
    history = History()
    copier = TxnCopierWorkload(source, target, copiers=2, abort_every=3, batch=20,
                               max_seconds=50).start(broker.bootstrap, history)
    readers = GroupConsumerWorkload(target, consumers=1, isolation="read_committed",
                                    max_seconds=50, name="reader").start(
        broker.bootstrap, history)
    early = ProducerWorkload(source, producers=1, max_ops=100, max_seconds=30,
                             interval=0.02).start(broker.bootstrap, history)
    # A zombie: another producer with copier-0's transactional id fences it mid-run; copier-0
    # replaces its producer (fencing the zombie in turn) and goes on from the committed offsets.
    wait_for(lambda: any(op["process"] == "copier-0" for op in values_of(history, "txn")),
               30, "a transaction of copier-0")
    zombie = Producer({"bootstrap.servers": broker.bootstrap,
                       "transactional.id": f"{copier.txn_prefix}-0", "log_level": 0})
    zombie.init_transactions(30)
    del zombie
    # Input sent after the fence, on every partition, so that copier-0 (which holds at least
    # one of them) has a transaction to begin with its fenced producer, however far it had
    # copied when the zombie came.
    late = ProducerWorkload(source, producers=1, max_ops=60, max_seconds=30, interval=0.02,
                            name="late-producer").start(broker.bootstrap, history)
    for producers in (early, late):
        assert producers.wait(40) and not producers.errors
    assert {op["partition"] for op in values_of(history, "send")
            if op["process"] == "late-producer-0"} == set(range(PARTITIONS))
    sent = {op["value"] for op in values_of(history, "send")}

    def copied() -> set:
        return {copied_value(value) for value in polled_values(history, target)}

    wait_for(lambda: sent <= copied(), 40, "the copy of every value to be read")
    copier.stop()
    readers.stop()
    assert not copier.errors and not readers.errors
    final_reads(broker.bootstrap, source, history)
    final_reads(broker.bootstrap, target, history)
    report = check(history)
    assert_clean(report)
    # The groups' offsets were read at the end: the copier's on the input, the reader's on
    # the output, each at the end of every partition.
    offsets = {(op["group"], op["topic"]): dict(op["value"])
               for op in values_of(history, "read-offsets")}
    assert set(offsets) == {(copier.group, source), (readers.group, target)}
    ends = {op["partition"]: op["end"] for op in values_of(history, "read-final")
            if op["topic"] == source and op["isolation"] == "read_committed"}
    assert offsets[(copier.group, source)] == ends
    txns = values_of(history, "txn")
    intents = {op["value"]["intent"] for op in txns}
    assert intents == {"commit", "abort"}
    fenced = [op for op in history.ops if op["f"] == "txn" and op["type"] in ("fail", "info")
              and op["process"] == "copier-0"]
    assert fenced, "the zombie never fenced copier-0"
    # Exactly once: every input value is in the committed output once.
    committed = [copied_value(value) for op in values_of(history, "read-final")
                 if op["topic"] == target and op["isolation"] == "read_committed"
                 for _, value in op["value"]]
    assert sorted(committed) == sorted(sent)
    # The aborted copies delivered before the abort are in the log, seen only at
    # read_uncommitted (an abort purges what was not sent yet).
    aborted = {value for op in txns if op["value"]["intent"] == "abort"
               for _, _, offset, value in op["value"]["writes"] if offset is not None}
    uncommitted = {value for op in values_of(history, "read-final")
                   if op["topic"] == target and op["isolation"] == "read_uncommitted"
                   for _, value in op["value"]}
    assert aborted and aborted <= uncommitted


def test_stop_is_bounded_while_the_broker_is_paused(broker, topic):
    """With the broker stopped (SIGSTOP) mid-run, stop() still returns within its bound;
    the sends left in flight complete as unknown (info) or stay without a completion."""
    create_topics(broker.bootstrap, topic)
    history = History()
    consumers = GroupConsumerWorkload(topic, consumers=1, max_seconds=60).start(
        broker.bootstrap, history)
    producers = ProducerWorkload(topic, producers=1, max_ops=100000, max_seconds=60,
                                 interval=0.01).start(broker.bootstrap, history)
    wait_for(lambda: len(values_of(history, "poll")) >= 3, 30, "polls")
    os.kill(broker.proc.pid, signal.SIGSTOP)
    try:
        time.sleep(1.0)   # the responses the broker sent before it stopped are read by now
        begun = time.monotonic()
        producers.stop(timeout=3)
        consumers.stop(timeout=3)
        took = time.monotonic() - begun
    finally:
        os.kill(broker.proc.pid, signal.SIGCONT)
    assert took < 10, took   # two stops of 3 s, with room for a loaded machine
    assert producers.done() and consumers.done()
    assert not producers.errors and not consumers.errors
    sends = [op for op in history.ops if op["f"] == "send"]
    outcomes = [op for op in sends if op["type"] != "invoke"]
    assert {op["type"] for op in outcomes} <= {"ok", "info"}
    # Nothing was acknowledged once the stopped broker's last responses were read, and the
    # sends in flight then did not complete ok.
    assert not [op for op in outcomes if op["type"] == "ok" and op["time"] > begun]
    ok = [op for op in outcomes if op["type"] == "ok"]
    assert len(ok) < len(sends) - len(outcomes)


def test_clients_keep_running_while_nothing_answers(topic):
    """Against a port nobody listens on (what a cut broker looks like to a new client) the
    clients log their connection errors quietly, keep trying, and stop when told."""
    history = History()
    bootstrap = f"127.0.0.1:{free_port()}"
    workloads = [ProducerWorkload(topic, producers=1, max_seconds=30, interval=0.05),
                 GroupConsumerWorkload(topic, consumers=1, max_seconds=30),
                 TxnCopierWorkload(topic, f"{topic}-out", max_seconds=30)]
    for workload in workloads:
        workload.start(bootstrap, history)
    time.sleep(1.5)
    for workload in workloads:
        assert not workload.done()
        workload.stop(timeout=3)
        assert workload.done() and not workload.errors
    sends = values_of(history, "send", "invoke")
    assert sends and not values_of(history, "send", "ok")


def test_acknowledged_writes_cut_from_the_log_are_found_lost(fresh_broker, topic):
    """The whole path proven able to fail: acknowledged writes, then the partition's log cut
    short on disk while the broker is down (a disk that lost its tail); the final reads after
    the restart miss them and the checker counts each one lost."""
    create_topic(fresh_broker.bootstrap, topic, partitions=1)
    history = History()
    producers = ProducerWorkload(topic, producers=1, max_ops=60, max_seconds=30,
                                 interval=0.01).start(fresh_broker.bootstrap, history)
    assert producers.wait(40) and not producers.errors
    acked = {op["value"] for op in values_of(history, "send")}
    assert len(acked) == 60
    fresh_broker.kill()
    segment = next((fresh_broker.log_dir / f"{topic}-0").glob("*.log"))
    segment.write_bytes(segment.read_bytes()[:segment.stat().st_size // 2])
    fresh_broker.start()
    final_reads(fresh_broker.bootstrap, topic, history)
    kept = {value for op in values_of(history, "read-final") for _, value in op["value"]}
    assert kept < acked
    report = check(history)
    expected = {name: 0 for name in ANOMALIES}
    expected["lost-write"] = len(acked - kept)
    assert report.counts == expected, report.examples
