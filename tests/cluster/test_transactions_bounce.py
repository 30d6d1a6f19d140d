"""Kafka's ``transactions_test`` on three kafkapy brokers: exactly-once copying through
broker and copier bounces, at transaction.version 1 and 2.

20,000 numbered records (idempotently produced, alternately to the 2 partitions of the
input topic) are copied by two of Kafka 3.9's TransactionalMessageCopier processes
(``tests/support/transactions_e2e.py``), one per input partition, into a 3-partition output
topic; both topics have replication factor 3 and min.insync.replicas 2.  The copiers
consume read_committed, produce in transactions of ``TRANSACTION_SIZE`` records, send
their consumer positions in the transaction (one with the consumer's group metadata, one
with the group id only, as Kafka's matrix does) and abort about a third of their
transactions at random.  While they copy: copier 0 is stopped with SIGTERM and started
again, copier 1 is killed with SIGKILL and started again, the transaction coordinator of
copier 0 is stopped with SIGTERM (controlled shutdown) and restarted, and another broker
is killed with SIGKILL and restarted.  A read_committed consumer reads the output topic
the whole time.  Then:
- the output topic read_committed holds exactly the input records (as sets), each once,
  each output partition the same records in the same order as its input partition;
- the concurrent consumer saw the same, with no duplicate: a record of an aborted
  transaction is always copied again by a committed one, so an aborted record read would
  be a duplicate;
- read_uncommitted holds more records than the input: transactions were aborted, so the
  read_committed checks above had aborted records to leave out;
- every output partition's last stable offset is its high watermark: no transaction was
  left open.

transaction.version 1: kafka-clients 3.9.0 (EndTxn v4, AddPartitionsToTxn before each
new partition).  transaction.version 2 (finalized with Kafka 3.9's kafka-features.sh on
the same cluster, after the first run): the same copier on kafka-clients 4.3.0, which then
speaks EndTxn v5 (the producer epoch goes up at every commit and abort) and Produce v12
(partitions join the transaction with their first Produce); the producer epoch the
coordinator reports at the end shows which of the two ran.
"""
from __future__ import annotations

import time

import pytest

from tests.support import cluster_clients as clients
from tests.support.cluster import running_cluster, wait_for
from tests.support.transactions_e2e import (CommittedReader, Copier, copier_classpath,
                                            describe_transaction, end_offsets,
                                            finalize_transaction_version, finalized_features,
                                            wait_fully_replicated, wait_progress)
from tests.support.zookeeper_server import zookeeper_server  # noqa: F401 (fixture)

RECORDS = 20_000
INPUT_PARTITIONS = 2
OUTPUT_PARTITIONS = 3
TRANSACTION_SIZE = 200
TOPIC_CONFIGS = {"min.insync.replicas": "2"}
COPY_TIMEOUT_S = 120


@pytest.fixture(scope="module")
def txn_cluster(tmp_path_factory, zookeeper_server):  # noqa: F811
    yield from running_cluster(tmp_path_factory.mktemp("txn-bounce"), zookeeper_server)


def _seed(bootstrap: str, topic: str) -> dict[int, list[bytes]]:
    values = {p: [str(i).encode() for i in range(p, RECORDS, INPUT_PARTITIONS)]
              for p in range(INPUT_PARTITIONS)}
    clients.produce_confluent(bootstrap, topic, values)
    return values


def _coordinator(c, transactional_id: str) -> int:
    def ask():
        error, node = clients.find_coordinator(c, c.running_ids()[0], transactional_id, 1)
        return error == 0 and node
    return wait_for(ask, 30, f"the coordinator of {transactional_id}")


def _bounce_broker(c, node: int, clean: bool, topics: list[str]) -> None:
    if clean:
        # A JVM ends its shutdown hooks with 143 (128 + SIGTERM); kafkapy exits 0.
        assert c.terminate(node) in (0, 143), c.log_text(node)[-3000:]
    else:
        c.kill(node)
        # As Kafka's test: the registration is gone (session expired) before the restart.
        wait_for(lambda: node not in c.registered(), 30, f"broker {node} deregistered")
    c.restart(node)
    wait_fully_replicated(c, topics)


@pytest.mark.parametrize("transaction_version, client_version", [
    pytest.param(1, "3.9.0", id="tv1-clients-3.9"),
    pytest.param(2, "4.3.0", id="tv2-clients-4.3"),
])
def test_exactly_once_copy_through_bounces(txn_cluster, tmp_path, transaction_version,
                                           client_version):
    c = txn_cluster
    started = time.monotonic()
    classpath = copier_classpath(client_version)
    if transaction_version >= 2:
        finalize_transaction_version(c, transaction_version)
    finalized = finalized_features(c.bootstrap(1)).get("transaction.version", 0)
    assert finalized == transaction_version or (transaction_version == 1 and finalized < 2)

    tag = f"tv{transaction_version}"
    source, sink, group = f"{tag}-input", f"{tag}-output", f"{tag}-copiers"
    bootstrap = ",".join(c.bootstrap(i) for i in sorted(c.nodes))
    clients.create_topic(c.bootstrap(1), source, INPUT_PARTITIONS, 3, configs=TOPIC_CONFIGS)
    clients.create_topic(c.bootstrap(1), sink, OUTPUT_PARTITIONS, 3, configs=TOPIC_CONFIGS)
    wait_fully_replicated(c, [source, sink])
    seeded = _seed(bootstrap, source)

    copiers = [Copier(classpath, bootstrap, transactional_id=f"{tag}-copier-{p}", group=group,
                      input_topic=source, output_topic=sink, partition=p,
                      total=len(seeded[p]), transaction_size=TRANSACTION_SIZE,
                      log_path=tmp_path / f"copier-{p}.log", use_group_metadata=p == 0)
               for p in range(INPUT_PARTITIONS)]
    reader = CommittedReader(bootstrap, sink, OUTPUT_PARTITIONS, f"{tag}-reader")
    reader.start()
    for copier in copiers:
        copier.start()
    topics = [source, sink, "__transaction_state", "__consumer_offsets"]
    bounced_at: dict[str, float] = {}
    try:
        bounced_at["copier 0 clean"] = wait_progress(copiers[0], 0.1, 60)
        copiers[0].bounce(clean=True)
        bounced_at["copier 1 hard"] = wait_progress(copiers[1], 0.2, 60)
        copiers[1].bounce(clean=False)

        clean_node = _coordinator(c, copiers[0].transactional_id)
        bounced_at["broker clean"] = wait_progress(copiers[0], 0.3, 60)
        _bounce_broker(c, clean_node, True, topics)
        hard_node = _coordinator(c, copiers[1].transactional_id)
        if hard_node == clean_node:
            hard_node = clean_node % 3 + 1
        bounced_at["broker hard"] = min(cp.progress for cp in copiers)
        _bounce_broker(c, hard_node, False, topics)

        for copier in copiers:
            copier.wait_done(COPY_TIMEOUT_S)
        concurrent = reader.stop(RECORDS, 60)
    finally:
        for copier in copiers:
            if copier.running():
                copier.stop(clean=False)
        reader.halt()
    copied = time.monotonic() - started

    final = clients.read_all(bootstrap, sink, OUTPUT_PARTITIONS, RECORDS, "read_committed",
                             f"{tag}-verifier")
    everything = clients.read_all(bootstrap, sink, OUTPUT_PARTITIONS, RECORDS,
                                  "read_uncommitted", f"{tag}-uncommitted")

    # Every bounce came while the copy was under way.
    assert all(progress < 1.0 for progress in bounced_at.values()), bounced_at
    seeded_set = {v for vs in seeded.values() for v in vs}
    output = [v for vs in final.values() for v in vs]
    assert len(output) == len(set(output)), f"{len(output) - len(set(output))} duplicates"
    assert set(output) == seeded_set, (len(set(output)), len(seeded_set))
    for p in range(INPUT_PARTITIONS):
        assert final[p] == seeded[p], f"output partition {p} is not input partition {p}"
    assert final[INPUT_PARTITIONS] == []

    seen = [v for _, v in concurrent]
    assert len(seen) == len(set(seen)), (
        f"the concurrent read_committed consumer saw {len(seen) - len(set(seen))} records "
        f"twice (aborted ones)")
    assert set(seen) == seeded_set, (len(set(seen)), len(seeded_set))
    for p in range(INPUT_PARTITIONS):
        assert [v for q, v in concurrent if q == p] == seeded[p]

    aborted = sum(map(len, everything.values())) - RECORDS
    assert aborted > 0, "no aborted records in the output topic"
    # No transaction left open (hanging) in the output: its last stable offsets are its ends.
    assert end_offsets(c, sink, OUTPUT_PARTITIONS, 1) == end_offsets(c, sink,
                                                                     OUTPUT_PARTITIONS, 0)

    # The producer epoch: at transaction.version 2 it goes up at every commit and abort,
    # at 1 only when a copier starts (InitProducerId) or is fenced.
    epochs = {}
    for copier in copiers:
        node = _coordinator(c, copier.transactional_id)
        error, state, _, epoch = describe_transaction(c.bootstrap(node),
                                                      copier.transactional_id)
        assert error == 0, error
        epochs[copier.transactional_id] = epoch
        transactions = copier.total // TRANSACTION_SIZE
        if transaction_version >= 2:
            assert epoch >= transactions, (epoch, transactions)
        else:
            assert epoch <= 3 * copier.starts, (epoch, copier.starts)
    print(f"{tag}: copied in {copied:.1f}s, bounced at {bounced_at}, {aborted} aborted "
          f"records, epochs {epochs}")
