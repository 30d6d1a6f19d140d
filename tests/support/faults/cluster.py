"""ZooKeeper and three brokers, each process under a group of its own, for fault runs.

``FaultCluster`` is ``tests/support/cluster.py``'s ``Cluster`` (brokers 1, 2 and 3 on a
ZooKeeper chroot; kill -9, SIGSTOP/SIGCONT, SIGTERM, restart on the same port and log
dir) with, per instance, the implementation (``"kafkapy"`` or ``"kafka"``: Apache Kafka 3.9
in ZooKeeper mode), every broker launched under the group ``Net.gid("b<id>")``, and the
faults a run schedules:

* ``cut(x, y)`` / ``isolate(x, others)`` / ``heal()``: network partitions between brokers
  (by id) and ZooKeeper (``ZK``), both directions (``tests/support/faults/net.py``); the
  test process still reaches everyone;
* ``pause_in_fsync(id)``: SIGSTOP the moment one of the broker's threads is seen inside
  fsync/fdatasync (``/proc/<pid>/task/*/syscall`` polled): stopped as the sync returns;
* ``expire_session(id)``: cut from ZooKeeper until the registration goes, then healed: the
  broker finds its session expired and registers again;
* ``clean_restart(id)`` (SIGTERM, start again); ``restart`` waits until ZooKeeper has dropped the old registration.

ZooKeeper is the session's ``faults_zookeeper`` (tests/faults/conftest.py), started under
``Net.gid(ZK)``.  ``SETTINGS``: session timeout 6 s, RF 3 with ``min.insync.replicas`` 2
for every topic (internal ones too), ISR shrink after 3 s without fetching, no unclean
elections.

After a run: ``wait_healthy(topics)`` (every broker registered, every partition led with
its full replica set in ISR and each replica's log ending at the leader's end offset), and
``replica_logs(topics)``: each broker's data records read straight from its segment files
(``{(topic, partition): {broker: [(offset, value), ...]}}``, values decoded as UTF-8, control
batches left out), the input of the checker's divergence check.
"""
from __future__ import annotations

import time
from pathlib import Path

from kafka.record import MemoryRecords

from kafkapy.coordinator.group.hashing import partition_for as group_partition
from kafkapy.coordinator.transaction.coordinator import partition_for as txn_partition

from tests.support.cluster import (CLUSTER_SETTINGS, Cluster, KafkaNode, KafkapyNode,
                                   wait_for)

ZK = "zk"
SESSION_TIMEOUT_MS = 6000
SESSION_S = SESSION_TIMEOUT_MS / 1000
SETTINGS = dict(CLUSTER_SETTINGS, **{
    "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
    # Connecting is not bounded by the short session: on a loaded machine a broker's first
    # connection to ZooKeeper took longer than 6 s (its default is the session timeout).
    "zookeeper.connection.timeout.ms": "30000",
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "replica.lag.time.max.ms": "3000",
    "replica.fetch.wait.max.ms": "200",
    "unclean.leader.election.enable": "false",
    "offsets.commit.required.acks": "-1",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "2000",
    "transaction.max.timeout.ms": "60000",
})
KINDS = ("kafkapy", "kafka")


# x86-64 system call numbers of fsync and fdatasync (/proc/<pid>/task/<tid>/syscall's first
# field while the thread is blocked in a call)
_SYNC_CALLS = {"74", "75"}


def _syscalls(pid: int) -> list[tuple[str, str]]:
    """(thread id, the system call it is in, or "running") for each thread of ``pid``."""
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            call = (task / "syscall").read_text().split(" ", 1)[0].strip()
        except OSError:     # the thread ended meanwhile
            continue
        out.append((task.name, call))
    return out


def member(node: int | str) -> str:
    """The net member name of a broker id, or ``ZK``."""
    return ZK if node == ZK else f"b{node}"


class FaultCluster(Cluster):
    """See the module docstring."""

    def __init__(self, base: Path, zk_server, net, kind: str = "kafkapy",
                 extra_settings: dict[str, str] | None = None) -> None:
        assert kind in KINDS, kind
        settings = dict(SETTINGS, **(extra_settings or {}))
        super().__init__(base, zk_server, extra_settings=settings)
        self.kind = kind
        self.net = net
        node_cls = KafkaNode if kind == "kafka" else KafkapyNode
        settings = dict(settings, **{"zookeeper.connect": self.zk_connect})
        self.nodes = {i: node_cls(i, self.base, settings) for i in self.nodes}
        for i, node in self.nodes.items():
            node.gid = net.gid(member(i))

    def bootstrap_all(self) -> str:
        return ",".join(self.bootstrap(i) for i in sorted(self.nodes))

    # -- faults ---------------------------------------------------------------------------
    def cut(self, x: int | str, y: int | str) -> None:
        self.net.cut(member(x), member(y))

    def isolate(self, x: int | str, others) -> None:
        self.net.isolate(member(x), [member(o) for o in others])

    def heal(self, x: int | str | None = None, y: int | str | None = None) -> None:
        if x is None:
            self.net.heal()
        else:
            self.net.heal(member(x), member(y))

    def wait_unregistered(self, node_id: int, timeout: float | None = None) -> None:
        wait_for(lambda: node_id not in self.registered(), timeout or SESSION_S + 20,
                 f"ZooKeeper to drop broker {node_id}'s registration")

    def pause_in_fsync(self, node_id: int, timeout: float = 10.0) -> bool:
        """SIGSTOP the broker while one of its threads is in fsync or fdatasync (its topic
        must sync often: ``flush.messages=1``).  The sync waits on the disk uninterruptibly,
        so the stop takes hold as the call returns, before the broker sees its result.
        True when a thread was inside the call as the signal was sent; False when none was
        seen in ``timeout`` seconds (the broker is paused all the same)."""
        pid = self.nodes[node_id].proc.pid
        deadline = time.monotonic() + timeout
        syncing = False
        while not syncing and time.monotonic() < deadline:
            syncing = any(call in _SYNC_CALLS for _, call in _syscalls(pid))
        self.pause(node_id)
        return syncing

    def expire_session(self, node_id: int) -> None:
        self.cut(node_id, ZK)
        try:
            self.wait_unregistered(node_id)
        finally:
            self.heal(node_id, ZK)

    def restart(self, node_id: int, timeout: float = 90.0) -> None:
        """Start a stopped broker again, once ZooKeeper has dropped its old registration:
        Kafka 3.9 started within the old session's timeout finds its id registered by that
        session and exits (kafkapy waits for the expiry itself), so both start the same way."""
        self.wait_unregistered(node_id)
        super().restart(node_id, timeout)

    def clean_restart(self, node_id: int) -> None:
        self.terminate(node_id)
        self.restart(node_id)

    # -- who is who -----------------------------------------------------------------------
    def leader(self, topic: str, partition: int) -> int:
        return self.partition_state(topic, partition)["leader"]

    def isr(self, topic: str, partition: int) -> list[int]:
        return self.partition_state(topic, partition)["isr"]

    def group_coordinator(self, group: str) -> int:
        """The broker leading the group's ``__consumer_offsets`` partition."""
        partitions = int(SETTINGS["offsets.topic.num.partitions"])
        return self.leader("__consumer_offsets", group_partition(group, partitions))

    def txn_coordinator(self, transactional_id: str) -> int:
        """The broker leading the id's ``__transaction_state`` partition."""
        partitions = int(SETTINGS["transaction.state.log.num.partitions"])
        return self.leader("__transaction_state", txn_partition(transactional_id, partitions))

    # -- after the run --------------------------------------------------------------------
    def wait_healthy(self, topics, timeout: float = 90.0) -> None:
        """Until every broker is registered, and every partition of ``topics`` has a live
        leader, all its replicas in ISR and every replica's log ending where the leader's
        does (read from the files: nothing is written any more)."""
        ids = sorted(self.nodes)

        def healthy():
            if self.registered() != ids:
                return False
            for topic in topics:
                for p, replicas in self.assignment(topic).items():
                    state = self.partition_state(topic, p)
                    if state["leader"] not in ids or sorted(state["isr"]) != sorted(replicas):
                        return False
                    ends = {self._log_end(i, topic, p) for i in replicas}
                    if len(ends) != 1:
                        return False
            return True
        wait_for(healthy, timeout, lambda: f"{topics}: full ISRs and equal log ends\n"
                 + self.summary())

    def _log_end(self, node_id: int, topic: str, partition: int) -> int:
        records = read_partition_dir(self.nodes[node_id].log_dir / f"{topic}-{partition}",
                                     with_control=True)
        return records[-1][0] + 1 if records else 0

    def replica_logs(self, topics) -> dict[tuple[str, int], dict[int, list[tuple[int, str]]]]:
        logs: dict = {}
        for topic in topics:
            for p, replicas in self.assignment(topic).items():
                logs[(topic, p)] = {
                    i: read_partition_dir(self.nodes[i].log_dir / f"{topic}-{p}")
                    for i in replicas}
        return logs


def read_partition_dir(path: Path, with_control: bool = False) -> list[tuple[int, str | None]]:
    """``(offset, value)`` of every record in a partition dir's segment files, oldest
    first (the record batch format both implementations write); control batches only with
    ``with_control`` (their value None).  A torn last batch ends the read."""
    out: list[tuple[int, str | None]] = []
    for segment in sorted(Path(path).glob("*.log")):
        records = MemoryRecords(segment.read_bytes())
        while True:
            try:
                batch = records.next_batch()
            except Exception:  # noqa: BLE001 - a torn tail
                break
            if batch is None:
                break
            control = batch.is_control_batch
            if control and not with_control:
                continue
            for record in batch:
                value = None if control or record.value is None else \
                    record.value.decode("utf-8", "replace")
                out.append((record.offset, value))
    return out
