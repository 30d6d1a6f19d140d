"""Kafka's own verifiable producer and consumer across leader bounces: no acknowledged loss.

``bin/kafka-verifiable-producer.sh`` (kafka-clients 3.9's KafkaProducer, acks=-1, so
idempotent) writes the increasing integers "0", "1", ... at a bounded rate to a 3-partition
RF-3 topic with ``min.insync.replicas=2`` and prints one JSON line per outcome
(``producer_send_success`` with partition and offset, or ``producer_send_error``);
``bin/kafka-verifiable-consumer.sh --verbose`` consumes in a group, committing, and prints
every record (``record_data``).  Meanwhile the test bounces partition leaders twice:
SIGTERM (a controlled shutdown moves leadership away first) or kill -9 (the controller
moves leadership when the session ends), restart on the same log dir, wait until it is
back in every ISR.  Afterwards every value the producer saw acknowledged was
consumed, at the partition and offset it was acknowledged with.

This is how Kafka's own system tests (``replication_test.py``, ``produce_consume_validate``)
check a cluster; runs against real Kafka 3.9 too (``KAFKAPY_CLUSTER_REFERENCE=kafka``).
"""
from __future__ import annotations


import pytest

from tests.support import cluster_clients as clients
from tests.support.cluster import Cluster, wait_for
from tests.support.verifiable import JsonLinesTool, verifiable_consumer

MESSAGES = 3000
THROUGHPUT = 120          # records/s: the producer runs ~25 s, long enough for two bounces
PARTITIONS = 3
BOUNCES = 2
REJOIN_S = 90


def full_isrs(c: Cluster, topic: str) -> bool:
    return all(sorted(s["isr"]) == [1, 2, 3] for s in c.states(topic).values())


@pytest.mark.parametrize("bounce_kind", ["sigterm", "kill"])
def test_verifiable_producer_and_consumer_across_leader_bounces(cluster, unique, tmp_path,
                                                                bounce_kind):
    c = cluster
    topic = unique("verifiable")
    bootstrap = ",".join(c.bootstrap(i) for i in (1, 2, 3))
    clients.create_topic(c.bootstrap(c.controller_id()), topic, partitions=PARTITIONS,
                         replication=3, configs={"min.insync.replicas": "2"})
    c.wait_topic(topic, PARTITIONS)
    wait_for(lambda: full_isrs(c, topic), REJOIN_S, "full ISRs after creation")

    consumer = verifiable_consumer(bootstrap, topic, unique("verifier"), tmp_path / "consumer")
    producer = None
    try:
        producer = JsonLinesTool("kafka-verifiable-producer.sh", [
            "--bootstrap-server", bootstrap, "--topic", topic, "--acks", "-1",
            "--max-messages", str(MESSAGES), "--throughput", str(THROUGHPUT)],
            tmp_path / "producer")
        wait_for(lambda: len(producer.named("producer_send_success")) >= 200, 90,
                 lambda: f"the verifiable producer's first acknowledgements\n"
                         f"{producer.stderr_tail()}")
        for bounce in range(BOUNCES):
            wait_for(lambda: full_isrs(c, topic), REJOIN_S,
                     lambda: f"full ISRs before bounce {bounce}: {c.states(topic)}\n{c.summary()}")
            victim = c.partition_state(topic, bounce % PARTITIONS)["leader"]
            acked_before = len(producer.named("producer_send_success"))
            if bounce_kind == "sigterm":
                assert c.terminate(victim) in (0, 143), f"broker {victim} exit code after SIGTERM"
            else:
                c.kill(victim)
                wait_for(lambda: victim not in c.registered(), 30,
                         f"killed broker {victim}'s session to end")
            c.restart(victim)
            wait_for(lambda: full_isrs(c, topic), REJOIN_S,
                     lambda: f"bounced broker {victim} back in every ISR: {c.states(topic)}\n"
                             f"{c.summary()}")
            wait_for(lambda: (len(producer.named("producer_send_success")) > acked_before + 50
                              or producer.proc.poll() is not None), 90,
                     lambda: f"acknowledgements after bouncing {victim}\n{producer.stderr_tail()}")
        producer.proc.wait(180)
        producer.stop()
        acked = producer.acked()
        errors = producer.named("producer_send_error")
        assert acked, producer.stderr_tail()
        consumer.wait_read(acked, 120)
    finally:
        if producer is not None:
            producer.stop()
        consumer.stop()

    lost, moved = consumer.lost_and_moved(acked)
    assert not lost and not moved, (
        f"acknowledged {len(acked)} (errors {len(errors)}): lost {len(lost)} {lost[:10]}, "
        f"moved {moved[:10]}")
    tool = producer.named("tool_data")
    assert tool and tool[-1]["acked"] == len(acked), tool
