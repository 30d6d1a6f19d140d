"""Moving replicas between brokers: partition reassignment as an operator runs it.

Kafka 3.9's own ``bin/kafka-reassign-partitions.sh`` (AlterPartitionReassignments /
ListPartitionReassignments through the Java admin client) and kafkapy's
``kafkapy-reassign-partitions`` (same options, same JSON) drive every move; the broker side
is the ZooKeeper-mode controller's onPartitionReassignment: the target replicas are added
(RS = ORS + TRS), they join the ISR, leadership moves if the leader is not a target, the old
replicas are stopped and their logs deleted, and the assignment becomes TRS.

What is checked, against kafkapy and (``KAFKAPY_CLUSTER_REFERENCE=kafka``) against three
Kafka 3.9 brokers:
* a topic moves from brokers {1,2} to {2,3} under an acks=all (idempotent) producer and a
  consumer group (Kafka's verifiable producer and consumer): no acknowledged record lost or
  moved, no offset gap seen by the consumer, ``--verify`` reports completion, and broker 1's
  partition dirs are gone;
* replication factor 1 -> 3 and 3 -> 2 by reassignment: ``kafka-topics.sh --describe`` shows
  the new replicas and ISR, the current leader is kept when it stays in the set (as
  Kafka's controller keeps it), a removed replica's dir is deleted, the data reads back whole;
* a reassignment in flight (its target broker SIGSTOPped, so it cannot join the ISR) whose
  controller is killed with kill -9: the next controller finishes it once the target runs;
* ``--cancel`` of a reassignment in flight restores the original replicas and deletes the
  cancelled replica on its broker; ListPartitionReassignments (raw, at the controller) lists
  RS, adding and removing while in flight, at a new controller after failover, and nothing
  once cancelled;
* the legacy ``/admin/reassign_partitions`` znode still drives moves and is deleted after,
  also when the controller is killed while its move is in flight;
* the partition's leader killed mid-move: the controller leads, the move completes;
* the adding replica's broker killed mid-move and restarted: the move completes;
* a second reassignment replaces one in flight; the no-longer-needed replica is deleted;
* a topic deleted mid-move is gone everywhere once the move can finish, and can be re-made;
* ``--execute --throttle`` sets Kafka's throttle configs and ``--verify`` clears them;
* refusals (NOT_CONTROLLER, dead or duplicate brokers, unknown partitions, nothing to cancel);
* moving a group's ``__consumer_offsets`` partition moves its coordinator, offsets intact.

The two tests that pause a target broker run on a cluster of their own with 12 s ZooKeeper
sessions (the paused broker must stay registered while the JVM tool submits the move).

Invariants: every wait is bounded; every broker and tool process ends with the test;
traffic stays on 127.0.0.1.
"""
from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest

from tests.support import cluster_clients as clients
from tests.support.cluster import kafka_tool, running_cluster, wait_for
from tests.support.verifiable import JsonLinesTool, verifiable_consumer

TOOLS = ("kafka", "kafkapy")
VERIFY_S = 120          # a small topic's move completes in seconds; this bounds the polling
DELETE_S = 60           # a stopped replica's dir goes after log.segment.delete.delay.ms (1 s)
THROUGHPUT = 150        # records/s of the verifiable producer during a move
MAX_MESSAGES = 9000     # bounds the producer (60 s at THROUGHPUT); it is stopped before
# Tests that SIGSTOP a move's target broker run with longer ZooKeeper sessions, so the paused
# broker stays registered while Kafka's tool (a JVM start, slow on a loaded machine) submits
# the move: the tool refuses target brokers the cluster does not list.
PATIENT_SESSION_MS = 12000
PATIENT_FAILOVER_S = PATIENT_SESSION_MS / 1000 + 30


@pytest.fixture
def patient_cluster(tmp_path, zookeeper_server):  # noqa: F811
    yield from running_cluster(tmp_path / "cluster", zookeeper_server,
                               {"zookeeper.session.timeout.ms": str(PATIENT_SESSION_MS)})


# --------------------------------------------------------------------------- the tools

_QUICK_ADMIN: list[str] = []


def _quick_admin_config() -> str:
    """An admin-client properties file with a short request timeout, for Kafka's tool while
    a broker is paused: its admin client may send a metadata request to any broker, and a
    SIGSTOPped one accepts the connection but never answers; after this timeout the client
    retries elsewhere instead of stalling for the default 30 s."""
    if not _QUICK_ADMIN:
        import tempfile
        fd, path = tempfile.mkstemp(prefix="kafkapy-quick-admin-", suffix=".properties")
        with os.fdopen(fd, "w") as f:
            f.write("request.timeout.ms=4000\n")
        _QUICK_ADMIN.append(path)
    return _QUICK_ADMIN[0]


def reassign(tool: str, bootstrap: str, *args: str, timeout: float = 120.0,
             paused: bool = False):
    """kafka-reassign-partitions.sh (``tool`` "kafka") or kafkapy-reassign-partitions;
    ``paused``: a broker of the cluster is SIGSTOPped (see ``_quick_admin_config``)."""
    if tool == "kafka":
        extra = ("--command-config", _quick_admin_config()) if paused else ()
        return kafka_tool("kafka-reassign-partitions.sh", "--bootstrap-server", bootstrap,
                          *args, *extra, timeout=timeout)
    return clients.kafkapy_tool("kafkapy-reassign-partitions", "--bootstrap-server", bootstrap,
                                *args, timeout=timeout)


def plan_file(tmp_path: Path, topic: str, target: dict[int, list[int]], name: str) -> str:
    """A reassignment JSON file (Kafka's format, version 1)."""
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": p, "replicas": r} for p, r in sorted(target.items())]}))
    return str(path)


def execute(tool: str, bootstrap: str, plan: str, paused: bool = False) -> str:
    result = reassign(tool, bootstrap, "--reassignment-json-file", plan, "--execute",
                      paused=paused)
    assert result.returncode == 0, (
        f"--execute exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    assert "Successfully started partition reassignment" in result.stdout, result.stdout
    return result.stdout


def verify_lines(tool: str, bootstrap: str, plan: str, paused: bool = False) -> tuple[int, str]:
    result = reassign(tool, bootstrap, "--reassignment-json-file", plan, "--verify",
                      paused=paused)
    return result.returncode, result.stdout + result.stderr


def wait_verified(tool: str, bootstrap: str, plan: str, topic: str, partitions, cluster,
                  timeout: float = VERIFY_S) -> str:
    """Run ``--verify`` until it reports "Reassignment of partition T-P is completed." for
    every partition (and exits 0); the last output."""
    last = {"out": ""}

    def done():
        code, out = verify_lines(tool, bootstrap, plan)
        last["out"] = out
        return code == 0 and all(f"Reassignment of partition {topic}-{p} is completed." in out
                                 for p in partitions)
    wait_for(done, timeout, lambda: f"--verify to report {topic} {sorted(partitions)} completed; "
             f"last output:\n{last['out']}\n{cluster.summary()}", interval=1.0)
    return last["out"]


# --------------------------------------------------------------------------- the cluster's state

def in_sync(c, topic: str, target: dict[int, list[int]]) -> bool:
    """The assignment znode is ``target`` and each ISR is exactly its replica set."""
    if c.assignment(topic) != target:
        return False
    return all(sorted(c.partition_state(topic, p)["isr"]) == sorted(r) for p, r in target.items())


def wait_settled(c, topic: str, target: dict[int, list[int]], timeout: float = 60.0) -> None:
    """Until the znodes and every running broker's metadata show ``target`` with full ISRs."""
    def settled():
        if not in_sync(c, topic, target):
            return False
        for i in c.running_ids():
            view = c.metadata(i, [topic]).topics.get(topic, {})
            if {p: v.replicas for p, v in view.items()} != target:
                return False
            if any(sorted(v.isr) != sorted(target[p]) for p, v in view.items()):
                return False
        return True
    wait_for(settled, timeout, lambda: f"{topic} settled on {target}: znode "
             f"{c.assignment(topic)} states {c.states(topic)}\n{c.summary()}")


def partition_dirs(c, node_id: int, topic: str) -> list[str]:
    """The topic's partition dirs on a broker, including ones renamed for deletion
    (``<topic>-<p>.<id>-delete``)."""
    pattern = re.compile(rf"^{re.escape(topic)}-\d+(\..*-delete)?$")
    log_dir = Path(c.nodes[node_id].log_dir)
    if not log_dir.is_dir():
        return []
    return sorted(d.name for d in log_dir.iterdir() if pattern.match(d.name))


def has_dir(c, node_id: int, topic: str, partition: int) -> bool:
    """The broker has a dir of the partition (live, or renamed for deletion)."""
    name = f"{topic}-{partition}"
    return any(d == name or d.startswith(name + ".") for d in partition_dirs(c, node_id, topic))


def wait_dirs_gone(c, node_id: int, topic: str, timeout: float = DELETE_S) -> None:
    wait_for(lambda: not partition_dirs(c, node_id, topic), timeout,
             lambda: f"{topic}'s dirs to leave broker {node_id}'s log dir: "
                     f"{partition_dirs(c, node_id, topic)}")


def listed_raw(c, node: int) -> dict:
    """One raw ListPartitionReassignments v0 to broker ``node`` (no admin client, which might
    pick a paused broker): {(topic, p): (replicas, adding, removing)} in flight."""
    r = clients.request(c, node, 46, 0, timeout_ms=30000, topics=None)
    assert r.error_code == 0, r
    return {(t.name, p.partition_index): (list(p.replicas), list(p.adding_replicas),
                                          list(p.removing_replicas))
            for t in r.topics for p in t.partitions}


def produce_and_check(c, via: int, topic: str, partitions: list[int], count: int,
                      tag: str) -> dict[int, list[bytes]]:
    values = {p: clients.record_values(topic, p, count, tag) for p in partitions}
    clients.produce_confluent(c.bootstrap(via), topic, values)
    return values


def read_back(c, via: int, topic: str, expected: dict[int, list[bytes]]) -> None:
    counts = {p: len(v) for p, v in expected.items()}
    got = clients.consume_confluent(c.bootstrap(via), topic, counts)
    assert got == expected, {p: (len(got[p]), len(expected[p])) for p in expected}


# --------------------------------------------------------------------------- tests

@pytest.mark.parametrize("tool", TOOLS)
def test_move_a_topic_from_brokers_1_2_to_2_3_under_traffic(shared_cluster, unique, tmp_path,
                                                             tool):
    c = shared_cluster
    topic = unique(f"move-{tool}")
    before = {0: [1, 2], 1: [2, 1], 2: [1, 2], 3: [2, 1]}
    target = {0: [2, 3], 1: [3, 2], 2: [2, 3], 3: [3, 2]}
    bootstrap = ",".join(c.bootstrap(i) for i in (1, 2, 3))
    clients.create_topic(c.bootstrap(c.controller_id()), topic, assignment=before,
                         configs={"min.insync.replicas": "2"})
    c.wait_topic(topic, len(before))
    wait_settled(c, topic, before)
    plan = plan_file(tmp_path, topic, target, "move")

    consumer = verifiable_consumer(bootstrap, topic, unique("mover"), tmp_path / "consumer")
    producer = None
    try:
        producer = JsonLinesTool("kafka-verifiable-producer.sh", [
            "--bootstrap-server", bootstrap, "--topic", topic, "--acks", "-1",
            "--max-messages", str(MAX_MESSAGES), "--throughput", str(THROUGHPUT),
            # Keyed records reach every partition (keys 0..15 hash to all four).
            "--repeating-keys", "16"],
            tmp_path / "producer")
        wait_for(lambda: len(producer.named("producer_send_success")) >= 200, 90,
                 lambda: f"the verifiable producer's first acknowledgements\n"
                         f"{producer.stderr_tail()}")
        execute(tool, c.bootstrap(2), plan)
        out = wait_verified(tool, c.bootstrap(3), plan, topic, target, c)
        wait_settled(c, topic, target)
        # Traffic goes on to the moved partitions (their new leaders) before the producer stops.
        acked_at_completion = len(producer.named("producer_send_success"))
        wait_for(lambda: (len(producer.named("producer_send_success")) >= acked_at_completion + 300
                          or producer.proc.poll() is not None), 60,
                 lambda: f"acknowledgements after the move\n{producer.stderr_tail()}")
        producer.stop()
        acked = producer.acked()
        assert acked, producer.stderr_tail()
        consumer.wait_read(acked, 90)
    finally:
        if producer is not None:
            producer.stop()
        consumer.stop()

    lost, moved = consumer.lost_and_moved(acked)
    assert not lost and not moved, (
        f"acknowledged {len(acked)}: lost {lost[:10]}, moved {moved[:10]}")
    offsets: dict[int, set[int]] = {}
    for e in consumer.named("record_data"):
        offsets.setdefault(e["partition"], set()).add(e["offset"])
    gaps = {p: sorted(set(range(max(o) + 1)) - o)[:10] for p, o in offsets.items()
            if o != set(range(max(o) + 1))}
    assert not gaps, f"offsets the consumer never saw: {gaps}"
    assert sorted(offsets) == sorted(target), offsets.keys()

    assert "Clearing broker-level throttles" in out, out
    assert c.assignment(topic) == target
    assert all(c.partition_state(topic, p)["leader"] in r for p, r in target.items())
    wait_dirs_gone(c, 1, topic)
    assert partition_dirs(c, 3, topic) == sorted(f"{topic}-{p}" for p in target)
    listed = reassign(tool, c.bootstrap(1), "--list")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert f"{topic}-" not in listed.stdout, listed.stdout


def test_replication_factor_1_to_3_keeps_the_leader(shared_cluster, unique, tmp_path):
    c = shared_cluster
    topic = unique("rf-up")
    before = {0: [1], 1: [2], 2: [3]}
    # p0 and p2: the current leader stays, though not first (as in Kafka); p1: it is first.
    target = {0: [2, 3, 1], 1: [2, 3, 1], 2: [1, 2, 3]}
    clients.create_topic(c.bootstrap(c.controller_id()), topic, assignment=before)
    c.wait_topic(topic, 3)
    data = produce_and_check(c, 1, topic, [0, 1, 2], 500, "a")
    plan = plan_file(tmp_path, topic, target, "rf-up")

    execute("kafka", c.bootstrap(3), plan)
    wait_verified("kafka", c.bootstrap(1), plan, topic, target, c)
    wait_settled(c, topic, target)

    rows = clients.describe_topic(c.bootstrap(2), topic)
    assert {p: r["Replicas"] for p, r in rows.items()} == target, rows
    assert {p: sorted(r["Isr"]) for p, r in rows.items()} == {p: [1, 2, 3] for p in target}, rows
    assert {p: r["Leader"] for p, r in rows.items()} == {0: 1, 1: 2, 2: 3}, rows
    for node in (1, 2, 3):   # every new replica has a log with the records in it
        for p in target:
            segment = Path(c.nodes[node].log_dir) / f"{topic}-{p}" / "00000000000000000000.log"
            assert segment.is_file() and segment.stat().st_size > 0, (node, p)
    data[0] += produce_and_check(c, 2, topic, [0], 100, "b")[0]
    read_back(c, 3, topic, data)


def test_replication_factor_3_to_2(shared_cluster, unique, tmp_path):
    c = shared_cluster
    topic = unique("rf-down")
    before = {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}
    # p0: leader 1 stays; p1: leader 2 removed, the first target in the ISR (3) leads;
    # p2: leader 3 stays though 2 comes first.
    target = {0: [1, 2], 1: [3, 1], 2: [2, 3]}
    removed = {0: 3, 1: 2, 2: 1}
    clients.create_topic(c.bootstrap(c.controller_id()), topic, assignment=before)
    c.wait_topic(topic, 3)
    wait_settled(c, topic, before)
    data = produce_and_check(c, 1, topic, [0, 1, 2], 300, "a")
    plan = plan_file(tmp_path, topic, target, "rf-down")

    execute("kafka", c.bootstrap(2), plan)
    wait_verified("kafka", c.bootstrap(2), plan, topic, target, c)
    wait_settled(c, topic, target)

    rows = clients.describe_topic(c.bootstrap(1), topic)
    assert {p: r["Replicas"] for p, r in rows.items()} == target, rows
    assert {p: sorted(r["Isr"]) for p, r in rows.items()} == {
        p: sorted(r) for p, r in target.items()}, rows
    assert {p: r["Leader"] for p, r in rows.items()} == {0: 1, 1: 3, 2: 3}, rows
    for p, node in removed.items():
        wait_for(lambda: not has_dir(c, node, topic, p), DELETE_S,
                 lambda: f"{topic}-{p}'s removed replica dir to leave broker {node}: "
                         f"{partition_dirs(c, node, topic)}")
    data = {p: v + produce_and_check(c, 3, topic, [p], 50, "b")[p] for p, v in data.items()}
    read_back(c, 2, topic, data)


def _pause_target(c):
    """(controller, holder, target): the target broker is neither the controller nor the
    broker holding the topic, so pausing it stops nothing but the move."""
    controller = c.controller_id()
    others = sorted(i for i in c.running_ids() if i != controller)
    return controller, others[0], others[1]


def test_new_controller_finishes_a_reassignment_in_flight(patient_cluster, unique, tmp_path):
    c = patient_cluster
    topic = unique("failover-move")
    controller, holder, target_broker = _pause_target(c)
    before = {0: [holder], 1: [holder]}
    target = {0: [holder, target_broker], 1: [target_broker, holder]}
    clients.create_topic(c.bootstrap(controller), topic, assignment=before)
    c.wait_topic(topic, 2)
    data = produce_and_check(c, holder, topic, [0, 1], 400, "a")
    plan = plan_file(tmp_path, topic, target, "failover")

    # The target cannot fetch, so the move stays in flight: ISR without it.
    c.pause(target_broker)
    try:
        execute("kafka", c.bootstrap(holder), plan, paused=True)
        code, out = verify_lines("kafka", c.bootstrap(holder), plan, paused=True)
        assert code == 0 and all(f"Reassignment of partition {topic}-{p} is still in progress."
                                 in out for p in target), out
        assert c.assignment(topic) == target   # RS = TRS + ORS, TRS first (here the same set)
        topic_znode = c.znode_json(f"/brokers/topics/{topic}")
        assert {int(p): r for p, r in topic_znode["adding_replicas"].items()} == {
            0: [target_broker], 1: [target_broker]}, topic_znode

        c.kill(controller)
        wait_for(lambda: c.controller_id() not in (None, controller), PATIENT_FAILOVER_S,
                 lambda: f"a controller other than the killed {controller}\n{c.summary()}")
        # The new controller knows the move from the topic znode.
        assert listed_raw(c, c.controller_id()) == {
            (topic, p): (r, [target_broker], []) for p, r in target.items()}
    finally:
        c.resume(target_broker)
    wait_verified("kafka", c.bootstrap(holder), plan, topic, target, c)
    wait_settled(c, topic, target)
    topic_znode = c.znode_json(f"/brokers/topics/{topic}")
    assert not topic_znode.get("adding_replicas") and not topic_znode.get("removing_replicas"), (
        topic_znode)
    assert {p: c.partition_state(topic, p)["leader"] for p in target} == {0: holder, 1: holder}
    data = {p: v + produce_and_check(c, target_broker, topic, [p], 50, "b")[p]
            for p, v in data.items()}
    read_back(c, target_broker, topic, data)


def test_cancel_restores_the_original_replicas(patient_cluster, unique, tmp_path):
    c = patient_cluster
    topic = unique("cancel-move")
    controller, holder, target_broker = _pause_target(c)
    before = {0: [holder, controller]}
    target = {0: [target_broker, holder]}
    clients.create_topic(c.bootstrap(controller), topic, assignment=before)
    c.wait_topic(topic, 1)
    wait_settled(c, topic, before)
    data = produce_and_check(c, holder, topic, [0], 300, "a")
    plan = plan_file(tmp_path, topic, target, "cancel")

    c.pause(target_broker)
    try:
        execute("kafka", c.bootstrap(holder), plan, paused=True)
        # In flight: RS = TRS + ORS (distinct, in that order), adding/removing in the znode,
        # and the brokers' metadata shows RS.
        in_flight = [target_broker, holder, controller]
        wait_for(lambda: c.assignment(topic) == {0: in_flight}
                 and c.metadata(holder, [topic]).topics[topic][0].replicas == in_flight, 30,
                 lambda: f"RS {in_flight} in the znode and metadata: {c.assignment(topic)}, "
                         f"{c.metadata(holder, [topic]).topics.get(topic)}")
        topic_znode = c.znode_json(f"/brokers/topics/{topic}")
        assert (topic_znode.get("adding_replicas"), topic_znode.get("removing_replicas")) == (
            {"0": [target_broker]}, {"0": [controller]}), topic_znode
        assert listed_raw(c, controller) == {(topic, 0): (in_flight, [target_broker],
                                                          [controller])}
        view = c.metadata(holder, [topic]).topics[topic][0]
        assert sorted(view.isr) == sorted(before[0]), view   # the paused target is not in it
        listed = reassign("kafka", c.bootstrap(holder), "--list", paused=True)
        assert listed.returncode == 0 and f"{topic}-0" in listed.stdout, listed.stdout
        # --preserve-throttles: clearing them means IncrementalAlterConfigs at every broker,
        # the paused one too; the --verify below clears them once it runs again.
        cancelled = reassign("kafka", c.bootstrap(holder), "--reassignment-json-file", plan,
                             "--cancel", "--preserve-throttles", paused=True)
    finally:
        c.resume(target_broker)
    assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
    assert f"Successfully cancelled partition reassignment for: {topic}-0" in cancelled.stdout, (
        cancelled.stdout)
    # Answered once done: the original replicas are back in the znode, nothing is listed.
    assert c.assignment(topic) == before
    assert listed_raw(c, controller) == {}
    c.wait_ready(timeout=PATIENT_FAILOVER_S)
    wait_settled(c, topic, before)
    # The cancelled replica was stopped with delete on the target (its session never ended,
    # so the requests reach it once it runs).
    wait_dirs_gone(c, target_broker, topic)
    code, out = verify_lines("kafka", c.bootstrap(holder), plan)
    assert code == 0 and "Clearing broker-level throttles" in out, out
    assert (f"There is no active reassignment of partition {topic}-0, but replica set is "
            f"{holder},{controller} rather than {target_broker},{holder}.") in out, out
    assert c.partition_state(topic, 0)["leader"] == holder
    topic_znode = c.znode_json(f"/brokers/topics/{topic}")
    assert not topic_znode.get("adding_replicas") and not topic_znode.get("removing_replicas"), (
        topic_znode)
    data[0] += produce_and_check(c, controller, topic, [0], 50, "b")[0]
    read_back(c, holder, topic, data)


def test_legacy_reassign_partitions_znode(shared_cluster, unique):
    """Kafka 3.9's ZooKeeper-mode controller still reads ``/admin/reassign_partitions`` (what
    pre-2.4 tools wrote): it runs the moves and deletes the znode when they are done."""
    c = shared_cluster
    topic = unique("legacy-move")
    before = {0: [1, 2], 1: [2, 3]}
    # p0: leader 1 removed, the first target in the ISR (3) leads; p1: leader 2 stays.
    target = {0: [3, 2], 1: [1, 2]}
    clients.create_topic(c.bootstrap(c.controller_id()), topic, assignment=before)
    c.wait_topic(topic, 2)
    wait_settled(c, topic, before)
    data = produce_and_check(c, 2, topic, [0, 1], 300, "a")

    c.zk.create("/admin/reassign_partitions", json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": p, "replicas": r} for p, r in target.items()]}).encode(),
        makepath=True)
    wait_for(lambda: not c.zk.exists("/admin/reassign_partitions"), VERIFY_S,
             lambda: f"the controller to finish the moves and delete /admin/reassign_partitions: "
                     f"{c.assignment(topic)} {c.states(topic)}\n{c.summary()}")
    wait_settled(c, topic, target)
    assert {p: c.partition_state(topic, p)["leader"] for p in target} == {0: 3, 1: 2}
    wait_for(lambda: not has_dir(c, 1, topic, 0) and not has_dir(c, 3, topic, 1), DELETE_S,
             lambda: f"removed replicas' dirs: broker 1 {partition_dirs(c, 1, topic)}, "
                     f"broker 3 {partition_dirs(c, 3, topic)}")
    read_back(c, 1, topic, data)


def _config_znode(c, path: str) -> dict:
    return c.znode_json(path).get("config", {}) if c.zk.exists(path) else {}


def _replica_list(text: str | None) -> set[str]:
    return {x.strip() for x in (text or "").split(",") if x.strip()}


@pytest.mark.parametrize("tool", TOOLS)
def test_execute_throttle_sets_and_verify_clears_the_throttles(shared_cluster, unique, tmp_path,
                                                               tool):
    """``--execute --throttle R`` sets what Kafka's tool sets: the topic's leader throttled
    replicas (every current replica of a moving partition), follower throttled replicas (the
    new ones), and both rates on every broker the moves touch; ``--verify`` after completion
    removes them all.  Read from the config znodes (/config/topics, /config/brokers)."""
    c = shared_cluster
    topic = unique(f"throttle-{tool}")
    before = {0: [1, 2], 1: [2, 1]}
    target = {0: [2, 3], 1: [3, 2]}
    rate = str(200 * 1024 * 1024)   # high: the move is not slowed, only the configs matter
    clients.create_topic(c.bootstrap(c.controller_id()), topic, assignment=before)
    c.wait_topic(topic, 2)
    wait_settled(c, topic, before)
    data = produce_and_check(c, 1, topic, [0, 1], 200, "a")
    plan = plan_file(tmp_path, topic, target, "throttle")

    result = reassign(tool, c.bootstrap(1), "--reassignment-json-file", plan, "--execute",
                      "--throttle", rate)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Warning: You must run --verify periodically" in result.stdout, result.stdout
    assert f"The inter-broker throttle limit was set to {rate} B/s" in result.stdout, result.stdout
    topic_config = _config_znode(c, f"/config/topics/{topic}")
    assert _replica_list(topic_config.get("leader.replication.throttled.replicas")) == {
        "0:1", "0:2", "1:2", "1:1"}, topic_config
    assert _replica_list(topic_config.get("follower.replication.throttled.replicas")) == {
        "0:3", "1:3"}, topic_config
    for broker in (1, 2, 3):
        config = _config_znode(c, f"/config/brokers/{broker}")
        assert (config.get("leader.replication.throttled.rate"),
                config.get("follower.replication.throttled.rate")) == (rate, rate), (broker, config)

    out = wait_verified(tool, c.bootstrap(2), plan, topic, target, c)
    assert "Clearing broker-level throttles on brokers 1,2,3" in out, out
    assert f"Clearing topic-level throttles on topic {topic}" in out, out
    throttles = {"leader.replication.throttled.rate", "follower.replication.throttled.rate",
                 "replica.alter.log.dirs.io.max.bytes.per.second"}
    for broker in (1, 2, 3):
        left = throttles & set(_config_znode(c, f"/config/brokers/{broker}"))
        assert not left, (broker, left)
    left = {"leader.replication.throttled.replicas",
            "follower.replication.throttled.replicas"} & set(
        _config_znode(c, f"/config/topics/{topic}"))
    assert not left, left
    wait_settled(c, topic, target)
    read_back(c, 3, topic, data)


def _alter(c, node: int, topic_partitions: dict[tuple[str, int], list[int] | None]):
    """One raw AlterPartitionReassignments v0 to broker ``node``: (top-level error,
    {(topic, partition): error code})."""
    from tests.support.request_fields import fields
    by_topic: dict[str, list[dict]] = {}
    for (t, p), replicas in topic_partitions.items():
        by_topic.setdefault(t, []).append(dict(partition_index=p, replicas=replicas))
    r = clients.request(c, node, 45, 0, **fields(45, timeout_ms=30000, topics=[
        dict(name=t, partitions=ps) for t, ps in by_topic.items()]))
    return r.error_code, {(t.name, p.partition_index): p.error_code
                          for t in r.responses for p in t.partitions}


INVALID_REPLICA_ASSIGNMENT = 39
UNKNOWN_TOPIC_OR_PARTITION = 3
NO_REASSIGNMENT_IN_PROGRESS = 85
NOT_CONTROLLER = 41


def test_refused_reassignments(shared_cluster, unique):
    """What the controller refuses, per partition, as Kafka 3.9's does; a broker that is not
    the controller refuses the whole request (NOT_CONTROLLER), List too."""
    c = shared_cluster
    topic = unique("refused")
    clients.create_topic(c.bootstrap(c.controller_id()), topic, assignment={0: [1], 1: [2]})
    c.wait_topic(topic, 2)
    controller = c.controller_id()
    other = next(i for i in c.running_ids() if i != controller)

    code, _ = _alter(c, other, {(topic, 0): [2]})
    assert code == NOT_CONTROLLER
    listed = clients.request(c, other, 46, 0, timeout_ms=30000, topics=None)
    assert listed.error_code == NOT_CONTROLLER

    code, errors = _alter(c, controller, {
        (topic, 0): [1, 9],                 # broker 9 is not alive
        (topic, 1): [2, 2],                 # duplicate
        (topic, 7): [1],                    # no such partition
        (topic, 8): None,                   # cancel: no such partition, nothing in flight
        (unique("nope"), 0): [1],           # no such topic
    })
    assert code == 0
    assert errors == {(topic, 0): INVALID_REPLICA_ASSIGNMENT,
                      (topic, 1): INVALID_REPLICA_ASSIGNMENT,
                      (topic, 7): UNKNOWN_TOPIC_OR_PARTITION,
                      (topic, 8): NO_REASSIGNMENT_IN_PROGRESS,
                      (unique("nope"), 0): UNKNOWN_TOPIC_OR_PARTITION}, errors
    code, errors = _alter(c, controller, {(topic, 0): None})   # cancel: nothing in flight
    assert (code, errors) == (0, {(topic, 0): NO_REASSIGNMENT_IN_PROGRESS}), errors
    assert c.assignment(topic) == {0: [1], 1: [2]}
    listed = clients.request(c, controller, 46, 0, timeout_ms=30000, topics=None)
    assert listed.error_code == 0 and not [t for t in listed.topics if t.name == topic], listed


def test_moving_an_offsets_partition_moves_the_group_coordinator(shared_cluster, unique,
                                                                 tmp_path):
    """The __consumer_offsets partition of a group is reassigned away from its leader: the
    group's coordinator moves with the leadership, its committed offsets are still there,
    and commits go on at the new coordinator."""
    c = shared_cluster
    topic, group = unique("coordinated"), unique("moved-group")
    clients.create_topic(c.bootstrap(1), topic, partitions=2, replication=1)
    c.wait_topic(topic, 2)
    clients.commit_offsets(c.bootstrap(1), group, topic, {0: 17, 1: 42})
    error, old = clients.find_coordinator(c, 2, group)
    assert error == 0
    from kafkapy.coordinator.group.hashing import partition_for
    offsets_partition = partition_for(group, len(c.assignment("__consumer_offsets")))
    assert c.partition_state("__consumer_offsets", offsets_partition)["leader"] == old
    replicas = c.assignment("__consumer_offsets")[offsets_partition]
    target = [b for b in replicas if b != old]
    plan = plan_file(tmp_path, "__consumer_offsets", {offsets_partition: target}, "offsets")
    try:
        execute("kafka", c.bootstrap(1), plan)
        wait_verified("kafka", c.bootstrap(1), plan, "__consumer_offsets", [offsets_partition], c)
        new_leader = c.partition_state("__consumer_offsets", offsets_partition)["leader"]
        assert new_leader == target[0], (new_leader, target)
        wait_for(lambda: all(clients.find_coordinator(c, i, group) == (0, new_leader)
                             for i in c.running_ids()), 60,
                 f"every broker naming {new_leader} the coordinator of {group}")
        assert clients.committed_offsets(c.bootstrap(3), group, topic, [0, 1]) == {0: 17, 1: 42}
        clients.commit_offsets(c.bootstrap(2), group, topic, {0: 18})
        assert clients.committed_offsets(c.bootstrap(1), group, topic, [0, 1]) == {0: 18, 1: 42}
    finally:
        # Give the partition its third replica back for the module's other tests.
        back = plan_file(tmp_path, "__consumer_offsets", {offsets_partition: replicas}, "back")
        execute("kafka", c.bootstrap(1), back)
        wait_verified("kafka", c.bootstrap(1), back, "__consumer_offsets", [offsets_partition], c)



def test_leader_killed_mid_reassignment(patient_cluster, unique, tmp_path):
    """Partition [x, c] led by x moves to [c, z] with z paused (in flight, RS = [c, z, x]);
    x is killed: c (the controller, in the ISR) leads.  Once z runs it joins, the move
    completes without x (dead), and no acknowledged record is lost."""
    c = patient_cluster
    topic = unique("leader-dies")
    controller = c.controller_id()
    x, z = sorted(i for i in c.running_ids() if i != controller)
    before = {0: [x, controller]}
    target = {0: [controller, z]}
    clients.create_topic(c.bootstrap(controller), topic, assignment=before,
                         configs={"min.insync.replicas": "1"})
    c.wait_topic(topic, 1)
    wait_settled(c, topic, before)
    data = produce_and_check(c, controller, topic, [0], 400, "a")
    plan = plan_file(tmp_path, topic, target, "leader-dies")

    c.pause(z)
    try:
        execute("kafka", c.bootstrap(controller), plan, paused=True)
        wait_for(lambda: c.assignment(topic) == {0: [controller, z, x]}, 30,
                 lambda: f"RS [c, z, x] in flight: {c.assignment(topic)}")
        c.kill(x)
        wait_for(lambda: c.partition_state(topic, 0)["leader"] == controller, PATIENT_FAILOVER_S,
                 lambda: f"the controller {controller} to lead {topic}-0 after killing {x}: "
                         f"{c.partition_state(topic, 0)}\n{c.summary()}")
        # Written while the move is in flight, to the new leader alone.
        data[0] += produce_and_check(c, controller, topic, [0], 100, "b")[0]
    finally:
        c.resume(z)
    wait_verified("kafka", c.bootstrap(controller), plan, topic, target, c)
    wait_settled(c, topic, target)
    assert c.partition_state(topic, 0)["leader"] == controller
    data[0] += produce_and_check(c, z, topic, [0], 50, "c")[0]
    read_back(c, z, topic, data)


def test_new_controller_resumes_a_legacy_znode_reassignment(patient_cluster, unique):
    """A move written to /admin/reassign_partitions, in flight (target paused) when the
    controller is killed: the next controller reads the znode on failover, finishes the
    move and deletes the znode."""
    c = patient_cluster
    topic = unique("legacy-failover")
    controller, holder, target_broker = _pause_target(c)
    before = {0: [holder]}
    target = {0: [target_broker, holder]}
    clients.create_topic(c.bootstrap(controller), topic, assignment=before)
    c.wait_topic(topic, 1)
    data = produce_and_check(c, holder, topic, [0], 300, "a")

    c.pause(target_broker)
    try:
        c.zk.create("/admin/reassign_partitions", json.dumps({"version": 1, "partitions": [
            {"topic": topic, "partition": 0, "replicas": target[0]}]}).encode(), makepath=True)
        wait_for(lambda: c.znode_json(f"/brokers/topics/{topic}").get("adding_replicas") == {
            "0": [target_broker]}, 30,
            lambda: f"the controller to start the move: {c.znode_json(f'/brokers/topics/{topic}')}")
        c.kill(controller)
        wait_for(lambda: c.controller_id() not in (None, controller), PATIENT_FAILOVER_S,
                 lambda: f"a controller other than the killed {controller}\n{c.summary()}")
    finally:
        c.resume(target_broker)
    wait_for(lambda: not c.zk.exists("/admin/reassign_partitions"), VERIFY_S,
             lambda: f"the new controller to finish and delete /admin/reassign_partitions: "
                     f"{c.assignment(topic)} {c.states(topic)}\n{c.summary()}")
    wait_settled(c, topic, target)
    assert c.partition_state(topic, 0)["leader"] == holder
    read_back(c, target_broker, topic, data)


def test_a_new_target_replaces_a_reassignment_in_flight(patient_cluster, unique, tmp_path):
    """[h] is moving to [h, t] (t paused) when a second reassignment asks for [h, c]: the
    new target replaces the old one (Kafka's ``--additional``), the replica added for the
    first is no longer needed and is stopped with delete, the move to [h, c] completes
    without waiting for t."""
    c = patient_cluster
    topic = unique("retarget")
    controller, holder, target_broker = _pause_target(c)
    before = {0: [holder]}
    first = {0: [holder, target_broker]}
    second = {0: [holder, controller]}
    clients.create_topic(c.bootstrap(controller), topic, assignment=before)
    c.wait_topic(topic, 1)
    data = produce_and_check(c, holder, topic, [0], 300, "a")
    plan = plan_file(tmp_path, topic, second, "second")

    c.pause(target_broker)
    try:
        execute("kafka", c.bootstrap(holder), plan_file(tmp_path, topic, first, "first"),
                paused=True)
        assert c.znode_json(f"/brokers/topics/{topic}").get("adding_replicas") == {
            "0": [target_broker]}
        # The second one as one raw request to the controller (fast: the target must not stay
        # paused long enough for its session to end, or the StopReplica for it would never
        # be sent; and an admin client might pick the paused broker for its metadata).
        code, errors = _alter(c, controller, {(topic, 0): second[0]})
        assert (code, errors) == (0, {(topic, 0): 0}), (code, errors)
        wait_for(lambda: in_sync(c, topic, second), 30,
                 lambda: f"{topic} on {second} with t paused: {c.assignment(topic)} "
                         f"{c.states(topic)}")
    finally:
        c.resume(target_broker)
    wait_verified("kafka", c.bootstrap(holder), plan, topic, second, c)
    wait_settled(c, topic, second)
    topic_znode = c.znode_json(f"/brokers/topics/{topic}")
    assert not topic_znode.get("adding_replicas") and not topic_znode.get("removing_replicas"), (
        topic_znode)
    assert c.partition_state(topic, 0)["leader"] == holder
    wait_dirs_gone(c, target_broker, topic)
    read_back(c, controller, topic, data)


def test_deleting_a_topic_while_it_moves(patient_cluster, unique, tmp_path):
    """A topic deleted while its move is in flight (target paused): once the target runs,
    the topic is gone everywhere (znodes, every broker's dirs, no reassignment listed), and
    a topic of the same name can be made and used again."""
    from kafka.admin import KafkaAdminClient
    c = patient_cluster
    topic = unique("delete-moving")
    controller, holder, target_broker = _pause_target(c)
    clients.create_topic(c.bootstrap(controller), topic, assignment={0: [holder], 1: [holder]})
    c.wait_topic(topic, 2)
    produce_and_check(c, holder, topic, [0, 1], 200, "a")
    plan = plan_file(tmp_path, topic, {0: [holder, target_broker], 1: [target_broker]}, "moving")

    c.pause(target_broker)
    try:
        execute("kafka", c.bootstrap(holder), plan, paused=True)
        # What DeleteTopics writes (the request itself would wait for the deletion).
        c.zk.create(f"/admin/delete_topics/{topic}", b"", makepath=True)
        time.sleep(1.0)
    finally:
        c.resume(target_broker)
    wait_for(lambda: not c.zk.exists(f"/brokers/topics/{topic}")
             and not c.zk.exists(f"/admin/delete_topics/{topic}"), VERIFY_S,
             lambda: f"{topic} deleted after its move: {c.zk.get_children('/admin/delete_topics')} "
                     f"{c.zk.exists(f'/brokers/topics/{topic}')}\n{c.summary()}")
    for node in c.running_ids():
        wait_dirs_gone(c, node, topic)
    admin = KafkaAdminClient(bootstrap_servers=c.bootstrap(c.controller_id()),
                             request_timeout_ms=30000)
    try:
        wait_for(lambda: not admin.list_partition_reassignments(), 30,
                 "no reassignment listed after the deletion")
    finally:
        admin.close()
    for node in c.running_ids():
        wait_for(lambda: topic not in c.metadata(node).topics, 30,
                 f"{topic} out of broker {node}'s metadata")
    clients.create_topic(c.bootstrap(controller), topic, assignment={0: [target_broker, holder]})
    c.wait_topic(topic, 1)
    again = produce_and_check(c, holder, topic, [0], 100, "again")
    read_back(c, target_broker, topic, again)


def test_target_broker_restarted_mid_reassignment(patient_cluster, unique, tmp_path):
    """The adding replica's broker is killed (kill -9) mid-move and started again on its
    log dir: the same controller sees it fail and come back, and the move completes."""
    c = patient_cluster
    topic = unique("target-restart")
    controller, holder, target_broker = _pause_target(c)
    before = {0: [holder], 1: [holder]}
    target = {0: [target_broker], 1: [holder, target_broker]}
    clients.create_topic(c.bootstrap(controller), topic, assignment=before)
    c.wait_topic(topic, 2)
    data = produce_and_check(c, holder, topic, [0, 1], 300, "a")
    plan = plan_file(tmp_path, topic, target, "target-restart")

    c.pause(target_broker)
    execute("kafka", c.bootstrap(holder), plan, paused=True)
    c.kill(target_broker)
    wait_for(lambda: target_broker not in c.registered(), PATIENT_FAILOVER_S,
             f"killed broker {target_broker}'s session to end")
    code, out = verify_lines("kafka", c.bootstrap(holder), plan)
    assert code == 0 and all(f"Reassignment of partition {topic}-{p} is still in progress."
                             in out for p in target), out
    c.restart(target_broker)
    wait_verified("kafka", c.bootstrap(holder), plan, topic, target, c)
    wait_settled(c, topic, target)
    assert c.partition_state(topic, 0)["leader"] == target_broker
    assert c.partition_state(topic, 1)["leader"] == holder
    wait_for(lambda: not has_dir(c, holder, topic, 0), DELETE_S,
             lambda: f"{topic}-0's old replica dir to leave broker {holder}: "
                     f"{partition_dirs(c, holder, topic)}")
    read_back(c, target_broker, topic, data)
