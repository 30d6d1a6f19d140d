"""Transactions v2 with stock clients on three kafkapy brokers (RF 3, transaction.version 2
finalized with kafka-features.sh).

``TxnEpochs`` (tests/java/kafka4/TxnEpochs.java) runs transactions that write one record
to each of three partitions led by the three brokers (so the coordinator adds partitions
both in-process and over the network) and send offsets for a group, aborting every third
one, and prints its own producer id and epoch after each.  The brokers' request counters
(``kafka_network_requestmetrics_requests`` by API and version, summed over the cluster)
say what went over the wire.

- kafka-clients 4.3.0: every EndTxn is v5 and the client goes on at epoch + 1 after every
  commit and abort; the partitions and the offsets partition are added by Produce v12 and
  TxnOffsetCommit v5 (no AddPartitionsToTxn v0-3 nor AddOffsetsToTxn from it; the
  leaders' AddPartitionsToTxn v5 instead); read_committed sees the committed records only
  and the group's offset is the last committed transaction's;
- kafka-clients 3.9.0 and confluent-kafka on the same cluster keep transactions v1 (EndTxn
  below v5, AddPartitionsToTxn, one epoch) and still commit and abort.
"""
from __future__ import annotations

import re
import subprocess
import urllib.request
from collections import Counter

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.support import cluster_clients as clients
from tests.support.cluster import running_cluster, unique, wait_for  # noqa: F401 (fixture)
from tests.support.broker_process import free_port
from tests.support.java_clients import ROOT, client_jars, compiled
from tests.support.transactions_e2e import finalize_transaction_version
from tests.support.zookeeper_server import zookeeper_server  # noqa: F401 (fixture)

PROGRAM = ROOT / "tests" / "java" / "kafka4" / "TxnEpochs.java"
PARTITIONS = 3
ASSIGNMENT = {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}   # partition p led by broker p + 1
TRANSACTIONS = 6                                            # 2 and 5 are aborted
COMMITTED = [i for i in range(TRANSACTIONS) if i % 3 != 2]
_SAMPLE = re.compile(r'^kafka_network_requestmetrics_requests_total\{request="([^"]+)",'
                     r'version="(\d+)"\} (\S+)$', re.M)


@pytest.fixture(scope="module")
def v2_cluster(tmp_path_factory, zookeeper_server):  # noqa: F811
    ports = {}

    def metrics_ports(c):
        for node_id, node in c.nodes.items():
            ports[node_id] = free_port()
            node.process.overrides["kafkapy.metrics.port"] = str(ports[node_id])

    for c in running_cluster(tmp_path_factory.mktemp("txn-v2"), zookeeper_server,
                             prepare=metrics_ports):
        c.metrics_ports = ports
        finalize_transaction_version(c, 2)
        yield c


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    versions = ("3.9.0", "4.3.0")
    client_jars(versions)
    base = tmp_path_factory.mktemp("txn-epochs")
    return {v: compiled(v, [PROGRAM], base / v) for v in versions}


@pytest.fixture
def topic(v2_cluster, unique):
    name = unique("txn-v2")
    clients.create_topic(v2_cluster.bootstrap(1), name, assignment=ASSIGNMENT)
    want = {p: r[0] for p, r in ASSIGNMENT.items()}
    wait_for(lambda: all(v2_cluster.leaders(name, i) == want for i in v2_cluster.running_ids()),
             30, f"{name}'s leaders {want} on every broker")
    return name


def _requests(cluster) -> Counter:
    """(API name, version) -> requests answered, over every broker."""
    total: Counter = Counter()
    for port in cluster.metrics_ports.values():
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read()
        for name, version, value in _SAMPLE.findall(text.decode()):
            total[(name, int(version))] += int(float(value))
    return total


def _run(program, cluster, topic: str, txn_id: str, group: str) -> list[list[str]]:
    proc = subprocess.run(program.command("TxnEpochs", cluster.bootstrap(1), topic,
                                          str(PARTITIONS), txn_id, str(TRANSACTIONS), group),
                          capture_output=True, text=True, timeout=180)
    lines = [line.split() for line in proc.stdout.splitlines() if line.strip()]
    assert proc.returncode == 0 and lines[-1] == ["done"], (
        f"TxnEpochs ({program.version}) exited {proc.returncode}:\n{proc.stdout}\n"
        f"{proc.stderr[-3000:]}")
    return lines


def _transactions(lines) -> list[tuple[int, str, int, int, bool]]:
    return [(int(i), outcome, int(pid), int(epoch), tv2 == "true")
            for kind, i, outcome, pid, epoch, tv2 in (ln for ln in lines if ln[0] == "txn")]


def _read(bootstrap: str, topic: str, isolation: str) -> list[tuple[int, str]]:
    """Every (partition, value) of ``topic`` up to the end a reader at ``isolation`` sees."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{topic}-{isolation}",
                  "isolation.level": isolation, "enable.auto.commit": False,
                  "enable.partition.eof": True})
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        got, at_end = [], set()
        for _ in range(300):
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == -191:       # _PARTITION_EOF
                    at_end.add(m.partition())
                    if len(at_end) == PARTITIONS:
                        break
                continue
            at_end.discard(m.partition())
            got.append((m.partition(), m.value().decode()))
        assert len(at_end) == PARTITIONS, f"{isolation} reader stopped early: {got}"
        return sorted(got)
    finally:
        c.close()


def _committed_offset(bootstrap: str, group: str, topic: str) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        return c.committed([TopicPartition(topic, 0)], timeout=30)[0].offset
    finally:
        c.close()


def _expected(txn_id: str, indexes) -> list[tuple[int, str]]:
    return sorted((p, f"{txn_id}-{i}") for i in indexes for p in range(PARTITIONS))


def test_kafka_clients_4_3_bump_the_epoch_at_every_end(v2_cluster, programs, topic):
    c, txn_id, group = v2_cluster, f"{topic}-java43", f"{topic}-g43"
    before = _requests(c)
    lines = _run(programs["4.3.0"], c, topic, txn_id, group)
    sent = _requests(c) - before
    init = next(ln for ln in lines if ln[0] == "init")
    pid, epoch = int(init[1]), int(init[2])
    txns = _transactions(lines)
    assert [(i, outcome) for i, outcome, *_ in txns] == [
        (i, "abort" if i % 3 == 2 else "commit") for i in range(TRANSACTIONS)]
    # epoch + 1 after every commit and every abort, on the same producer id, in v2 mode
    assert [(p, e, tv2) for _, _, p, e, tv2 in txns] == [
        (pid, epoch + n, True) for n in range(1, TRANSACTIONS + 1)]
    assert sent[("EndTxn", 5)] >= TRANSACTIONS       # (a retried one counts twice)
    assert not [k for k in sent if k[0] == "EndTxn" and k[1] < 5], sent
    assert sent[("Produce", 12)] > 0 and not [k for k in sent if k[0] == "Produce" and k[1] < 12]
    # (more when a commit met its own transaction's pending add: CONCURRENT_TRANSACTIONS)
    assert sent[("TxnOffsetCommit", 5)] >= TRANSACTIONS
    assert not [k for k in sent if k[0] == "TxnOffsetCommit" and k[1] < 5], sent
    # Nothing added by the client itself; the leaders asked the coordinator instead.
    assert not [k for k in sent if k in {("AddPartitionsToTxn", v) for v in range(4)}], sent
    assert not [k for k in sent if k[0] == "AddOffsetsToTxn"], sent
    assert sent[("AddPartitionsToTxn", 5)] > 0, sent
    bootstrap = c.bootstrap(2)
    assert _read(bootstrap, topic, "read_committed") == _expected(txn_id, COMMITTED)
    assert _read(bootstrap, topic, "read_uncommitted") == _expected(txn_id, range(TRANSACTIONS))
    assert _committed_offset(bootstrap, group, topic) == COMMITTED[-1] + 1


def test_kafka_clients_3_9_keep_transactions_v1(v2_cluster, programs, topic):
    c, txn_id, group = v2_cluster, f"{topic}-java39", f"{topic}-g39"
    before = _requests(c)
    lines = _run(programs["3.9.0"], c, topic, txn_id, group)
    sent = _requests(c) - before
    init = next(ln for ln in lines if ln[0] == "init")
    pid, epoch = int(init[1]), int(init[2])
    assert [(p, e, tv2) for _, _, p, e, tv2 in _transactions(lines)] == [
        (pid, epoch, False)] * TRANSACTIONS
    assert sum(n for (api, v), n in sent.items() if api == "EndTxn" and v < 5) >= TRANSACTIONS
    assert sent[("EndTxn", 5)] == 0 and sent[("Produce", 12)] == 0
    assert sum(n for (api, v), n in sent.items() if api == "AddPartitionsToTxn" and v < 4) > 0
    assert sum(n for (api, _), n in sent.items() if api == "AddOffsetsToTxn") >= TRANSACTIONS
    bootstrap = c.bootstrap(3)
    assert _read(bootstrap, topic, "read_committed") == _expected(txn_id, COMMITTED)
    assert _committed_offset(bootstrap, group, topic) == COMMITTED[-1] + 1


def test_confluent_kafka_keeps_transactions_v1(v2_cluster, topic):
    c, txn_id = v2_cluster, f"{topic}-ck"
    before = _requests(c)
    p = Producer({"bootstrap.servers": c.bootstrap(1), "transactional.id": txn_id,
                  "linger.ms": 5})
    p.init_transactions(30)
    for i in range(3):
        p.begin_transaction()
        for part in range(PARTITIONS):
            p.produce(topic, value=f"{txn_id}-{i}".encode(), partition=part)
        p.flush(30)
        if i == 1:
            p.abort_transaction(30)
        else:
            p.commit_transaction(30)
    sent = _requests(c) - before
    assert sent[("EndTxn", 5)] == 0 and sent[("Produce", 12)] == 0
    assert sum(n for (api, v), n in sent.items() if api == "EndTxn") >= 3
    assert _read(c.bootstrap(1), topic, "read_committed") == _expected(txn_id, [0, 2])
