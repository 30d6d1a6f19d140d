"""Scouting the mixed cluster: Kafka 3.9 and kafkapy brokers on one ZooKeeper.

Two clusters, each of 2 Kafka 3.9 brokers (ids 1, 2) and 1 kafkapy broker (id 3), all with
``inter.broker.protocol.version=3.9``:

- ``kafka_led`` (module): Kafka broker 1 starts first and is the controller.  Its
  LeaderAndIsr / UpdateMetadata reach kafkapy (a topic with RF=3 created through Kafka, one
  partition led by each broker, every broker's metadata equal), Kafka followers fetch from
  the kafkapy leader and kafkapy follows Kafka leaders (the replicas' segment files are
  byte-identical), acks=all with min.insync.replicas=3 (every replica, both kinds, must
  have the records), Kafka's kafka-topics.sh describes the cluster through kafkapy;
  AlterPartition from kafkapy (leader of a partition whose Kafka follower is paused) to the
  Kafka controller shrinks and then expands the ISR; StopReplica(delete) from Kafka's
  controller removes kafkapy's replica of a deleted topic; and last, kafkapy takes over as
  controller (Kafka's controller killed, the other Kafka broker paused past its session so
  that kafkapy wins the election) and drives the Kafka broker when it comes back.
- ``kafkapy_led`` (per test): kafkapy starts first and is the controller; it drives both
  Kafka brokers (the same checks, AlterPartition from a Kafka leader to kafkapy's
  controller), then is killed and a Kafka broker takes over.

Every wait is bounded; traffic to 127.0.0.1 only.
"""
from __future__ import annotations

import time

import pytest

from kafkapy.coordinator.group.hashing import partition_for
from tests.support.cluster_clients import (consume_confluent, create_topic, delete_topic,
                                   produce_confluent, read_all)
from tests.support.mixed import KAFKA_IDS, KAFKAPY_ID, _start_mixed
from tests.support.wire import WireClient
from tests.support.mixed import Mixed, kafka_tool, wait_for

ASSIGNMENT = {0: [3, 1, 2], 1: [1, 2, 3], 2: [2, 3, 1]}   # one leader of each broker
TIMEOUT = 60


# --------------------------------------------------------------------------- cluster


@pytest.fixture(scope="class")
def kafka_led(tmp_path_factory, zookeeper_server):  # noqa: F811
    from tests.support.mixed import _require_kafka
    _require_kafka()
    m = _start_mixed(tmp_path_factory.mktemp("kafka-led"), zookeeper_server, "kafka")
    yield m
    m.stop()


@pytest.fixture(scope="class")
def kafkapy_led(tmp_path_factory, zookeeper_server):  # noqa: F811
    from tests.support.mixed import _require_kafka
    _require_kafka()
    m = _start_mixed(tmp_path_factory.mktemp("kafkapy-led"), zookeeper_server, "kafkapy")
    yield m
    m.stop()


# --------------------------------------------------------------------------- checks

def _init_producer_id(m: Mixed, node_id: int, timeout: float = 10.0) -> tuple[int, int]:
    """InitProducerId v4 (no transactional id) to one broker, retried while it answers
    COORDINATOR_LOAD_IN_PROGRESS (14: no producer id block yet); (error, producer id)."""
    deadline = time.monotonic() + timeout
    while True:
        client = WireClient(m.bootstrap(node_id), timeout=10)
        try:
            r = client.request(22, 4, transactional_id=None, transaction_timeout_ms=60000,
                               producer_id=-1, producer_epoch=-1)
        finally:
            client.close()
        if r.error_code != 14 or time.monotonic() >= deadline:
            return r.error_code, r.producer_id
        time.sleep(0.5)


def _names_for_partitions(prefix: str, partitions: int) -> dict[int, str]:
    """One group / transactional id per partition of a 3-partition internal topic
    (Kafka's Utils.abs(id.hashCode) % partitions)."""
    out: dict[int, str] = {}
    i = 0
    while len(out) < partitions:
        name = f"{prefix}-{i}"
        out.setdefault(partition_for(name, partitions), name)
        i += 1
    return out

def _segments(m: Mixed, node_id: int, topic: str, partition: int) -> list[bytes]:
    d = m.log_dir(node_id) / f"{topic}-{partition}"
    return [p.read_bytes() for p in sorted(d.glob("*.log"))]


def _replicas_identical(m: Mixed, topic: str, assignment: dict[int, list[int]]) -> None:
    """Until every replica's segment files equal the leader's byte for byte."""
    def same():
        return all(_segments(m, r, topic, p) == _segments(m, replicas[0], topic, p)
                   and _segments(m, r, topic, p) != []
                   for p, replicas in assignment.items() for r in replicas)
    wait_for(same, TIMEOUT, lambda: f"{topic}: replicas byte-identical\n" + m.summary())


def _wait_metadata_agrees(m: Mixed, topic: str, assignment: dict[int, list[int]]) -> None:
    """Every broker's Metadata shows each partition's leader (its preferred replica) and a
    full ISR, the same on all."""
    def agree():
        views = [m.metadata(i, [topic]).topics.get(topic, {}) for i in m.running_ids()]
        for view in views:
            if sorted(view) != sorted(assignment):
                return False
            for p, replicas in assignment.items():
                pv = view[p]
                if pv.error or pv.leader != replicas[0] or sorted(pv.isr) != sorted(replicas):
                    return False
        return True
    wait_for(agree, TIMEOUT, lambda: f"{topic}: every broker's metadata agreeing\n" + m.summary())


def _produce_consume_everywhere(m: Mixed, topic: str, tag: str, n: int = 20) -> None:
    """acks=all (min.insync.replicas=3: every replica acknowledged) through each broker,
    then read back through each broker."""
    values = {p: [f"{tag}-{p}-{i}".encode() for i in range(n)] for p in ASSIGNMENT}
    before = {p: 0 for p in ASSIGNMENT}
    for i in m.running_ids():
        acked = produce_confluent(m.bootstrap(i), topic, values)
        for p, offs in acked.items():
            assert offs == list(range(before[p], before[p] + n)), (i, p, offs)
            before[p] += n
    expected = {p: vals * len(m.running_ids()) for p, vals in values.items()}
    for i in m.running_ids():
        got = consume_confluent(m.bootstrap(i), topic, {p: len(v) for p, v in expected.items()})
        assert got == expected, f"read through broker {i}"


def _describe(m: Mixed, via: int, topic: str) -> str:
    out = kafka_tool("kafka-topics.sh", "--bootstrap-server", m.bootstrap(via), "--describe",
                     "--topic", topic)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def _isr(m: Mixed, topic: str, partition: int) -> list[int]:
    return m.partition_state(topic, partition)["isr"]


def _check_isr_round_trip(m: Mixed, topic: str, partition: int, paused: int) -> None:
    """Pause a follower of ``partition`` and write to its leader (a follower whose log end
    equals the leader's counts as caught up, in Kafka as here): the leader's AlterPartition
    (to whichever controller) drops it from the ISR in ZooKeeper while its session (and
    broker epoch) lives on; resumed, it catches up and is added back."""
    leader = m.partition_state(topic, partition)["leader"]
    epoch = m.broker_epoch(paused)
    m.pause(paused)
    paused_at = time.monotonic()
    try:
        produce_confluent(m.bootstrap(leader), topic, {partition: [b"while-paused"] * 5},
                          acks="1")
        wait_for(lambda: paused not in _isr(m, topic, partition), 30,
                 lambda: f"{topic}-{partition}: ISR without paused broker {paused} "
                         f"(now {_isr(m, topic, partition)})\n" + m.summary())
        assert m.broker_epoch(paused) == epoch, "the paused broker's session expired"
    finally:
        m.resume(paused)
    held = time.monotonic() - paused_at
    wait_for(lambda: paused in _isr(m, topic, partition), 30,
             lambda: f"{topic}-{partition}: broker {paused} back in the ISR "
                     f"(now {_isr(m, topic, partition)})\n" + m.summary())
    assert m.broker_epoch(paused) == epoch, \
        f"broker {paused}'s session expired after its {held:.1f} s pause"


# --------------------------------------------------------------------------- shared checks

def _check_rf3_topic(m: Mixed, topic: str, via: int, describe_via: int) -> None:
    """RF=3 topic created through ``via``: metadata agreed everywhere, acks=all with
    min.insync.replicas=3 through every broker, replicas byte-identical, Kafka's
    kafka-topics.sh describing it through ``describe_via``."""
    create_topic(m.bootstrap(via), topic, assignment=ASSIGNMENT,
                 configs={"min.insync.replicas": "3"})
    _wait_metadata_agrees(m, topic, ASSIGNMENT)
    _produce_consume_everywhere(m, topic, topic)
    _replicas_identical(m, topic, ASSIGNMENT)
    text = _describe(m, describe_via, topic)
    for p, replicas in ASSIGNMENT.items():
        assert f"Partition: {p}\tLeader: {replicas[0]}\t" in text, text


def _internal_leaders(m: Mixed, topic: str) -> dict[int, str]:
    return {p: f"{v.leader}({m.kinds.get(v.leader)})"
            for p, v in m.metadata(KAFKAPY_ID, [topic]).topics.get(topic, {}).items()}


def _check_groups_on_every_coordinator(m: Mixed, topic: str) -> None:
    """A consumer group per __consumer_offsets partition (so coordinators of both kinds):
    subscribe, consume, commit through one broker; the offsets read back through another."""
    from confluent_kafka import Consumer, TopicPartition
    brokers = m.running_ids()
    for n, (p, group) in enumerate(sorted(_names_for_partitions("mixed-group", 3).items())):
        via, other = brokers[n % len(brokers)], brokers[(n + 1) % len(brokers)]
        c = Consumer({"bootstrap.servers": m.bootstrap(via), "group.id": group,
                      "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        try:
            c.subscribe([topic])
            seen = 0
            deadline = time.monotonic() + 30
            while seen < 3 and time.monotonic() < deadline:
                msg = c.poll(0.5)
                if msg is not None and msg.error() is None:
                    seen += 1
            assert seen >= 3, f"group {group} via {via}: read {seen} records"
            c.commit(offsets=[TopicPartition(topic, q, 1) for q in ASSIGNMENT],
                     asynchronous=False)
        finally:
            c.close()
        r = Consumer({"bootstrap.servers": m.bootstrap(other), "group.id": group})
        try:
            got = r.committed([TopicPartition(topic, q) for q in ASSIGNMENT], timeout=30)
        finally:
            r.close()
        assert [tp.offset for tp in got] == [1] * len(ASSIGNMENT), \
            (group, p, _internal_leaders(m, "__consumer_offsets"))


def _check_transactions_on_every_coordinator(m: Mixed, topic: str,
                                             init_timeout: float = 30) -> None:
    """A transactional id per __transaction_state partition: commit then abort over all
    partitions (markers to leaders of both kinds); read_committed sees the commits only."""
    from confluent_kafka import Producer
    ids = _names_for_partitions("mixed-txn", 3)
    for n, (p, tid) in enumerate(sorted(ids.items())):
        via = m.running_ids()[n % len(m.running_ids())]
        prod = Producer({"bootstrap.servers": m.bootstrap(via), "transactional.id": tid,
                         "transaction.timeout.ms": 30000})
        prod.init_transactions(init_timeout)
        for outcome in ("commit", "abort"):
            prod.begin_transaction()
            for q in ASSIGNMENT:
                prod.produce(topic, f"{tid}-{outcome}".encode(), partition=q)
            prod.flush(30)
            (prod.commit_transaction if outcome == "commit" else prod.abort_transaction)(30)
    expected = len(ids) * len(ASSIGNMENT)
    got = read_all(m.bootstrap(KAFKAPY_ID), topic, len(ASSIGNMENT), expected,
                   "read_committed", group=f"{topic}-rc")
    values = sorted(v for vs in got.values() for v in vs)
    assert values == sorted(f"{tid}-commit".encode() for tid in ids.values()
                            for _ in ASSIGNMENT), \
        (values, _internal_leaders(m, "__transaction_state"))


def _check_groups(m: Mixed, topic: str, via: int) -> None:
    create_topic(m.bootstrap(via), topic, assignment=ASSIGNMENT)
    _wait_metadata_agrees(m, topic, ASSIGNMENT)
    produce_confluent(m.bootstrap(via), topic, {p: [b"a", b"b"] for p in ASSIGNMENT})
    _check_groups_on_every_coordinator(m, topic)


def _check_transactions(m: Mixed, topic: str, via: int, init_timeout: float = 30) -> None:
    create_topic(m.bootstrap(via), topic, assignment=ASSIGNMENT)
    _wait_metadata_agrees(m, topic, ASSIGNMENT)
    _check_transactions_on_every_coordinator(m, topic, init_timeout)


def _produce_raw(m: Mixed, node_id: int, topic: str, partition: int, batch: bytes,
                 acks: int):
    from kafkapy.protocol.messages import REQUESTS
    produce = REQUESTS[0]
    client = WireClient(m.bootstrap(node_id), timeout=30)
    try:
        r = client.request(0, 9, transactional_id=None, acks=acks, timeout_ms=10000,
                           topic_data=[produce.TopicProduceData(name=topic, partition_data=[
                               produce.TopicProduceData.PartitionProduceData(
                                   index=partition, records=batch)])])
    finally:
        client.close()
    p = r.responses[0].partition_responses[0]
    return p.error_code, p.base_offset


def _check_controlled_shutdown(m: Mixed, node_id: int, topic: str, pid_from: int) -> str:
    """SIGTERM ``node_id``: its ControlledShutdown to the controller (the other kind) moves
    its leaderships away before it exits.  An idempotent batch written to it as leader,
    retried to the new leader (the other kind: a follower that built the producer state
    from replicated batches), is answered with its original offset (no duplicate).  Then
    it restarts, rejoins every ISR, and Kafka's kafka-leader-election.sh (PREFERRED, to
    whichever controller) gives it its leaderships back.  Returns its log."""
    from kafkapy.records.record import build_batch
    [p] = [p for p, rs in ASSIGNMENT.items() if rs[0] == node_id]
    err, pid = _init_producer_id(m, pid_from)
    assert err == 0, err
    batch = build_batch([(b"idem", f"cs-{node_id}".encode(), (), int(time.time() * 1000))],
                        producer_id=pid, producer_epoch=0, base_sequence=0)
    err, offset = _produce_raw(m, node_id, topic, p, batch, acks=-1)
    assert err == 0, (err, m.partition_state(topic, p), m.metadata(node_id, [topic]).topics)
    code = m.terminate(node_id, timeout=60)
    assert code in (0, 143), code
    out = m.log_text(node_id)
    state = m.partition_state(topic, p)
    assert state["leader"] not in (node_id, -1), (state, out[-3000:])
    again = _produce_raw(m, state["leader"], topic, p, batch, acks=1)
    assert again == (0, offset), (f"retry to new leader {state['leader']}: {again}, "
                                  f"original offset {offset}")
    m.restart(node_id, timeout=120)
    m.wait_ready(timeout=TIMEOUT)
    wait_for(lambda: all(node_id in s["isr"] for s in m.states(topic).values()), TIMEOUT,
             lambda: f"{node_id} back in every ISR of {topic}: {m.states(topic)}")
    other = next(i for i in m.running_ids() if m.kinds[i] != m.kinds[node_id])
    run = kafka_tool("kafka-leader-election.sh", "--bootstrap-server", m.bootstrap(other),
                     "--election-type", "PREFERRED", "--topic", topic, "--partition", str(p))
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    wait_for(lambda: m.partition_state(topic, p)["leader"] == node_id, TIMEOUT,
             lambda: f"{topic}-{p} led by {node_id} again: {m.partition_state(topic, p)}")
    return out


def _check_divergent_truncation(m: Mixed, topic: str, leader: int, follower: int) -> None:
    """``leader`` (one kind) writes records its ``follower`` (the other kind) never gets,
    dies (kill -9) while the follower, still in the ISR, becomes leader with a new epoch and
    writes other records; restarted, the old leader follows and must truncate its divergent
    suffix through the new leader's OffsetForLeaderEpoch / diverging-epoch answer.  The two
    logs end byte-identical, holding the common prefix and the new leader's records."""
    create_topic(m.bootstrap(leader), topic, assignment={0: [leader, follower]},
                 configs={"min.insync.replicas": "1"})
    _wait_metadata_agrees(m, topic, {0: [leader, follower]})
    produce_confluent(m.bootstrap(leader), topic, {0: [b"common"] * 5})
    _replicas_identical(m, topic, {0: [leader, follower]})
    m.pause(follower)
    try:
        # A fetch the follower had in flight (long poll: replica.fetch.wait.max.ms) must be
        # answered before the divergent writes, or it would carry them to the paused
        # process's socket and the follower would have them after all.
        time.sleep(1.0)
        produce_confluent(m.bootstrap(leader), topic, {0: [b"divergent"] * 4}, acks="1")
        m.kill(leader)
    finally:
        m.resume(follower)
    wait_for(lambda: m.partition_state(topic, 0)["leader"] == follower, 40,
             lambda: f"{topic}-0 led by {follower}: {m.partition_state(topic, 0)}\n" + m.summary())
    produce_confluent(m.bootstrap(follower), topic, {0: [b"new-leader"] * 3}, acks="1")
    m.restart(leader, timeout=120)
    wait_for(lambda: leader in m.partition_state(topic, 0)["isr"], TIMEOUT,
             lambda: f"{leader} back in the ISR of {topic}-0\n" + m.summary())
    _replicas_identical(m, topic, {0: [follower, leader]})
    got = consume_confluent(m.bootstrap(leader), topic, {0: 8})
    assert got == {0: [b"common"] * 5 + [b"new-leader"] * 3}, got


# --------------------------------------------------------------------------- Kafka controller

class TestKafkaController:
    """Kafka broker 1 is the controller; kafkapy is broker 3."""

    def test_kafka_controller_drives_kafkapy(self, kafka_led):
        _check_rf3_topic(kafka_led, "kc-rf3", via=1, describe_via=KAFKAPY_ID)

    def test_alter_partition_kafkapy_leader_to_kafka_controller(self, kafka_led):
        m = kafka_led
        topic = "kc-isr"
        assignment = {0: [KAFKAPY_ID, 1, 2]}
        create_topic(m.bootstrap(1), topic, assignment=assignment)
        _wait_metadata_agrees(m, topic, assignment)
        follower = next(i for i in KAFKA_IDS if i != m.controller_id())
        _check_isr_round_trip(m, topic, 0, paused=follower)
        produce_confluent(m.bootstrap(KAFKAPY_ID), topic, {0: [b"after-expand"]})
        _replicas_identical(m, topic, assignment)

    def test_producer_ids_unique_across_kinds(self, kafka_led):
        """Kafka brokers take blocks from Kafka's controller (AllocateProducerIds),
        kafkapy from /latest_producer_id_block: no id handed out twice."""
        m = kafka_led
        got = {i: _init_producer_id(m, i) for i in m.running_ids()}
        assert all(err == 0 for err, _ in got.values()), got
        assert len({pid for _, pid in got.values()}) == len(got), got

    def test_groups_on_both_kinds(self, kafka_led):
        _check_groups(kafka_led, "kc-groups", via=1)

    def test_transactions_on_both_kinds(self, kafka_led):
        _check_transactions(kafka_led, "kc-txn", via=1)

    def test_stop_replica_delete_from_kafka_controller(self, kafka_led):
        m = kafka_led
        topic = "kc-delete"
        create_topic(m.bootstrap(1), topic, assignment=ASSIGNMENT)
        _wait_metadata_agrees(m, topic, ASSIGNMENT)
        produce_confluent(m.bootstrap(1), topic, {p: [b"x"] for p in ASSIGNMENT})
        delete_topic(m.bootstrap(1), topic)

        def gone():
            dirs = [d for i in m.running_ids() for d in m.log_dir(i).glob(f"{topic}-*")
                    if not d.name.endswith("-delete")]
            return not dirs and not m.zk.exists(f"/admin/delete_topics/{topic}")
        wait_for(gone, TIMEOUT, lambda: f"{topic} deleted on every broker\n" + m.summary())
        assert topic not in m.metadata(KAFKAPY_ID).topics

    def test_controlled_shutdown_kafkapy_to_kafka_controller(self, kafka_led):
        m = kafka_led
        _check_controlled_shutdown(m, KAFKAPY_ID, "kc-rf3", pid_from=1)

    def test_kafkapy_truncates_against_kafka_leader(self, kafka_led):
        """kafkapy (3) led, diverged, and follows Kafka broker 2 after its restart."""
        _check_divergent_truncation(kafka_led, "kc-diverge", leader=KAFKAPY_ID, follower=2)

    def test_kafkapy_takes_over_from_kafka_controller(self, kafka_led):
        """Last of the class: it kills broker 1."""
        m = kafka_led
        topic = "kc-takeover"
        create_topic(m.bootstrap(1), topic, assignment=ASSIGNMENT,
                     configs={"min.insync.replicas": "1"})
        _wait_metadata_agrees(m, topic, ASSIGNMENT)
        assert m.controller_id() == 1
        # Broker 2 paused past its session: only kafkapy can win the election.
        m.pause(2)
        m.kill(1)
        try:
            wait_for(lambda: m.controller_id() == KAFKAPY_ID, 30,
                     lambda: "kafkapy elected controller\n" + m.summary())
            wait_for(lambda: m.registered() == [KAFKAPY_ID], 30, "broker 2's session expired")
        finally:
            m.resume(2)
        wait_for(lambda: sorted(m.registered()) == [2, KAFKAPY_ID], 60,
                 lambda: "broker 2 registered again\n" + m.summary())
        m.wait_ready([2, KAFKAPY_ID], timeout=TIMEOUT)
        # kafkapy's controller leads the partitions broker 1 had elsewhere and brings
        # broker 2 (a new incarnation) back into every ISR.
        live = {p: [r for r in rs if r != 1] for p, rs in ASSIGNMENT.items()}

        def led_by_live():
            states = m.states(topic)
            return all(states[p]["leader"] in live[p]
                       and sorted(states[p]["isr"]) == sorted(live[p]) for p in live)
        wait_for(led_by_live, TIMEOUT, lambda: f"{topic}: live leaders, ISR = live replicas "
                 f"{m.states(topic)}\n" + m.summary())
        values = {p: [f"takeover-{p}-{i}".encode() for i in range(10)] for p in ASSIGNMENT}
        produce_confluent(m.bootstrap(2), topic, values)
        got = consume_confluent(m.bootstrap(2), topic, {p: 10 for p in ASSIGNMENT})
        assert got == values
        _replicas_identical(m, topic, live)


# --------------------------------------------------------------------------- kafkapy controller

class TestKafkapyController:
    """kafkapy (broker 3) is the controller; Kafka brokers 1 and 2 joined after it."""

    def test_kafkapy_controller_drives_kafka(self, kafkapy_led):
        _check_rf3_topic(kafkapy_led, "pc-rf3", via=KAFKAPY_ID, describe_via=1)

    def test_alter_partition_kafka_leader_to_kafkapy_controller(self, kafkapy_led):
        # Partition 1 is led by Kafka broker 1; Kafka broker 2 is its follower.
        _check_isr_round_trip(kafkapy_led, "pc-rf3", 1, paused=2)

    def test_kafka_broker_gets_producer_ids_from_kafkapy_controller(self, kafkapy_led):
        err, _pid = _init_producer_id(kafkapy_led, 1, timeout=8)
        assert err == 0, f"InitProducerId on Kafka broker 1: error {err} for 8 s"

    def test_groups_on_both_kinds(self, kafkapy_led):
        _check_groups(kafkapy_led, "pc-groups", via=KAFKAPY_ID)

    def test_transactions_on_both_kinds(self, kafkapy_led):
        _check_transactions(kafkapy_led, "pc-txn", via=KAFKAPY_ID, init_timeout=10)

    def test_controlled_shutdown_kafka_to_kafkapy_controller(self, kafkapy_led):
        out = _check_controlled_shutdown(kafkapy_led, 2, "pc-rf3", pid_from=KAFKAPY_ID)
        assert "Controlled shutdown request returned successfully" in out, out[-3000:]

    def test_kafka_truncates_against_kafkapy_leader(self, kafkapy_led):
        """Kafka broker 1 led, diverged, and follows kafkapy (3, also the controller)."""
        _check_divergent_truncation(kafkapy_led, "pc-diverge", leader=1, follower=KAFKAPY_ID)

    def test_kafka_takes_over_from_kafkapy_controller(self, kafkapy_led):
        """Last of the class: kafkapy's controller is killed, a Kafka broker takes over."""
        m = kafkapy_led
        m.kill(KAFKAPY_ID)
        wait_for(lambda: m.controller_id() in KAFKA_IDS, 30,
                 lambda: "a Kafka broker elected controller\n" + m.summary())
        m.restart(KAFKAPY_ID, timeout=120)
        m.wait_ready(timeout=TIMEOUT)
        wait_for(lambda: all(KAFKAPY_ID in s["isr"] for s in m.states("pc-rf3").values()),
                 TIMEOUT, lambda: f"kafkapy back in every ISR: {m.states('pc-rf3')}")
        produce_confluent(m.bootstrap(1), "pc-rf3", {p: [b"after-failover"] for p in ASSIGNMENT})
        _replicas_identical(m, "pc-rf3", ASSIGNMENT)

    def test_kafka_broker_producer_ids_after_kafka_took_over(self, kafkapy_led):
        """Kafka broker 1 took blocks from kafkapy's controller earlier in this class; now a
        Kafka broker controls and broker 1 still gets ids.  (Kafka 3.9's
        RPCProducerIdManager wedges for good, requestInFlight never cleared, if a controller
        ever answers API 67 with UnsupportedVersion: it must always be served.)"""
        m = kafkapy_led
        assert m.controller_id() in KAFKA_IDS
        err, _pid = _init_producer_id(m, 1, timeout=8)
        assert err == 0, f"InitProducerId on Kafka broker 1: error {err} for 8 s"
