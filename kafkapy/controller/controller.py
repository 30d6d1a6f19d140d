"""The controller: topic creation, deletion, partition growth and leader elections.

It is the only writer of topic state.  Every change goes request -> controller
-> metadata store (Kafka's znode layout and JSON payloads) -> metadata cache ->
listeners (the replica manager creates or deletes logs).  With the embedded
store this broker is always the controller; the ZooKeeper controller issue
adds election, fencing and multi-broker state machines on the same seams.

Invariants: the store is written before the cache, so a crash never leaves the
cache ahead of durable state; leader epochs only grow.
"""
from __future__ import annotations

from typing import Callable

import structlog
from kazoo.exceptions import NodeExistsError, NoNodeError

from kafkapy.controller.assignment import assign_replicas
from kafkapy.limits import free_descriptors, open_file_limit
from kafkapy.metadata import paths
from kafkapy.metadata.cache import MetadataCache, PartitionState, TopicMetadata
from kafkapy.metadata.ephemeral import claim
from kafkapy.metadata.store import CreateOp
from kafkapy.metadata.topics import (
    collision_key, invalid_topic_reason, new_topic_id, parse_topic_id, topic_id_text)
from kafkapy.protocol.errors import ErrorCode, KafkaError

_log = structlog.get_logger("kafkapy.controller")
_OPS_PER_MULTI = 1000

TopicListener = Callable[[str, "TopicMetadata | None"], None]


class Controller:
    def __init__(self, store, cache: MetadataCache, validate_topic_configs) -> None:
        self._store = store
        self._cache = cache
        self._validate_configs = validate_topic_configs
        self._listeners: list[TopicListener] = []
        self.epoch = 0

    def add_listener(self, listener: TopicListener) -> None:
        self._listeners.append(listener)

    # -- start-up ----------------------------------------------------------------
    async def elect(self, node_id: int, timestamp_ms: int, wait_ms: int) -> None:
        """Become controller: claim ``/controller``, then bump ``/controller_epoch``.

        A ``/controller`` left by this broker's previous, killed session is waited out
        (up to ``wait_ms``); one held by a live broker stops start-up, since this broker
        cannot yet join a cluster of several.
        """
        await claim(self._store, paths.CONTROLLER, paths.encode_controller(node_id, timestamp_ms),
                    wait_ms, _controller_holder)
        try:
            data, stat = self._store.get(paths.CONTROLLER_EPOCH)
            self.epoch = paths.decode_controller_epoch(data) + 1
            self._store.set(paths.CONTROLLER_EPOCH, paths.encode_controller_epoch(self.epoch),
                            version=stat.version)
        except NoNodeError:
            self.epoch = 1
            self._store.create(paths.CONTROLLER_EPOCH, paths.encode_controller_epoch(1),
                               makepath=True)
        self._cache.controller_id = node_id

    def load_topics(self) -> None:
        for name in self._store.get_children(paths.BROKER_TOPICS):
            topic = self._read_topic(name)
            if topic is not None:
                self._cache.put_topic(topic)
        for name in self._store.get_children(paths.ADMIN_DELETE_TOPICS):
            self.delete_topic(name)

    def _read_topic(self, name: str) -> TopicMetadata | None:
        try:
            data, _ = self._store.get(paths.topic_path(name))
        except NoNodeError:
            return None
        assignment = paths.decode_topic_assignment(data, name)
        topic = TopicMetadata(name=name, topic_id=parse_topic_id(assignment.topic_id),
                              configs=self._read_configs(name))
        if assignment.partitions and not any(
                self._store.exists(paths.partition_state_path(name, i))
                for i in assignment.partitions):
            return None  # never brought online (no live replica at creation): still hidden
        for index, replicas in assignment.partitions.items():
            topic.partitions[index] = self._read_partition_state(name, index, replicas)
        return topic

    def _read_partition_state(self, name: str, index: int, replicas: list[int]) -> PartitionState:
        try:
            data, stat = self._store.get(paths.partition_state_path(name, index))
        except NoNodeError:
            return PartitionState(index, replicas, replicas[0] if replicas else -1, 0,
                                  list(replicas), self.epoch)
        doc = paths.decode_partition_state(data, stat)
        return PartitionState(index, replicas, doc.leader, doc.leader_epoch, doc.isr,
                              doc.controller_epoch)

    def _read_configs(self, name: str) -> dict[str, str]:
        try:
            data, _ = self._store.get(paths.topic_config_path(name))
        except NoNodeError:
            return {}
        return paths.decode_entity_config(data)

    # -- topic creation ------------------------------------------------------------
    def check_new_topic(self, name: str) -> None:
        reason = invalid_topic_reason(name)
        if reason:
            raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, reason)
        # The store too: a topic created without a live replica is not in the cache.
        if name in self._cache.topics or self._store.exists(paths.topic_path(name)):
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        key = collision_key(name)
        colliding = [t for t in self._cache.topics if collision_key(t) == key]
        if colliding:
            raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                             f"Topic '{name}' collides with existing topics: "
                             f"{', '.join(colliding)}")

    def create_topic(self, name: str, num_partitions: int, replication_factor: int,
                     assignments: dict[int, list[int]] | None = None,
                     configs: dict[str, str] | None = None,
                     validate_only: bool = False) -> TopicMetadata:
        self.check_new_topic(name)
        configs = dict(configs or {})
        self._validate_configs(configs)
        brokers = self._cache.live_broker_ids()
        if assignments:
            assignment = self._check_assignments(assignments)
        else:
            assignment = assign_replicas(brokers, num_partitions, replication_factor)
        _check_descriptors(len(assignment))
        topic = TopicMetadata(name=name, topic_id=new_topic_id(), configs=configs)
        live = set(brokers)
        for index, replicas in assignment.items():
            topic.partitions[index] = _new_partition(index, replicas, live, self.epoch)
        if validate_only:
            return topic
        self._write_configs(name, configs)
        self._write_assignment(topic)
        if not any(set(r) & live for r in assignment.values()):
            # Kafka's ZooKeeper controller cannot elect any leader: the topic stays in
            # the store only, unknown to the metadata cache, until its brokers appear.
            _log.warning("created topic without a live replica", topic=name,
                         assignment=assignment)
            return topic
        self._write_new_partition_states(name, topic.partitions.values())
        self._cache.put_topic(topic)
        _log.info("created topic", topic=name, partitions=len(assignment),
                  replication_factor=len(next(iter(assignment.values()))))
        self._notify(name, topic)
        return topic

    @staticmethod
    def _check_assignments(assignments: dict[int, list[int]]) -> dict[int, list[int]]:
        """A new topic's manual assignment, checked in the order and with the messages of
        Kafka's AdminZkClient.validateTopicCreate -- which, like it, lets replicas name
        unknown brokers (or none): such partitions get no leader."""
        if len({len(r) for r in assignments.values()}) != 1:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             "All partitions should have the same number of replicas")
        if any(len(set(r)) != len(r) for r in assignments.values()):
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"Duplicate replica assignment found: {_scala_map(assignments)}")
        if sorted(assignments) != list(range(len(assignments))):
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             "partitions should be a consecutive 0-based integer sequence")
        return {i: list(r) for i, r in sorted(assignments.items())}

    @staticmethod
    def _check_added_assignments(assignments: list[list[int]], brokers: list[int],
                                 current: int, count: int, rf: int) -> dict[int, list[int]]:
        """CreatePartitions' manual assignment, checked in the order and with the messages
        of Kafka's ZkAdminManager.createPartitions and AdminZkClient's validation."""
        unknown = sorted({r for replicas in assignments for r in replicas} - set(brokers))
        if unknown:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"Unknown broker(s) in replica assignment: "
                             f"{', '.join(map(str, unknown))}.")
        if len(assignments) != count - current:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"Increasing the number of partitions by {count - current} "
                             f"but {len(assignments)} assignments provided.")
        new = {current + i: list(r) for i, r in enumerate(assignments)}
        for index, replicas in new.items():
            if not replicas:
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"Cannot have replication factor of 0 for partition id {index}.")
            if len(set(replicas)) != len(replicas):
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"Duplicate brokers not allowed in replica assignment: "
                                 f"{', '.join(map(str, replicas))} for partition id {index}.")
        bad = [(i, len(r)) for i, r in new.items() if len(r) != rf]
        if bad:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"Inconsistent replication factor between partitions, partition 0 "
                             f"has {rf} while partitions [{', '.join(str(i) for i, _ in bad)}] "
                             f"have replication factors [{', '.join(str(n) for _, n in bad)}], "
                             f"respectively.")
        return new

    def _write_configs(self, name: str, configs: dict[str, str]) -> None:
        self._put(paths.topic_config_path(name), paths.encode_entity_config(configs))

    def _write_assignment(self, topic: TopicMetadata) -> None:
        self._put(paths.topic_path(topic.name), paths.encode_topic_assignment(
            {p: s.replicas for p, s in topic.partitions.items()}, topic_id_text(topic.topic_id)))

    def _write_partition_state(self, name: str, state: PartitionState) -> None:
        self._put(paths.partition_state_path(name, state.partition), paths.encode_partition_state(
            state.leader, state.leader_epoch, state.isr, self.epoch))

    def _write_new_partition_states(self, name: str, states) -> None:
        """The znodes of new partitions (``partitions/N`` and its ``state``) in one store
        transaction per ``_OPS_PER_MULTI``: one write of the embedded store's file, one
        ZooKeeper round trip, where a write per znode made a topic of thousands of
        partitions stall the broker for seconds.  ZooKeeper bounds one request at
        jute.maxbuffer (1 MiB), hence the chunks."""
        ops = []
        if not self._store.exists(paths.topic_partitions_path(name)):
            ops.append(CreateOp(paths.topic_partitions_path(name)))
        for state in states:
            payload = paths.encode_partition_state(state.leader, state.leader_epoch, state.isr,
                                                   self.epoch)
            ops.append(CreateOp(paths.topic_partition_path(name, state.partition)))
            ops.append(CreateOp(paths.partition_state_path(name, state.partition), payload))
        for start in range(0, len(ops), _OPS_PER_MULTI):
            chunk = ops[start:start + _OPS_PER_MULTI]
            try:
                self._store.multi(chunk)
            except NodeExistsError:     # left over from an earlier incarnation: one by one
                for op in chunk:
                    self._put(op.path, op.data)

    def _put(self, path: str, payload: bytes) -> None:
        if self._store.exists(path):
            self._store.set(path, payload)
        else:
            self._store.create(path, payload, makepath=True)

    # -- partitions, configs and deletion ----------------------------------------------
    def create_partitions(self, name: str, count: int,
                          assignments: list[list[int]] | None = None,
                          validate_only: bool = False) -> None:
        topic = self._cache.topic(name)
        if topic is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                             f"The topic '{name}' does not exist.")
        current = len(topic.partitions)
        if count < current:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS,
                             f"Topic currently has {current} partitions, which is higher than "
                             f"the requested {count}.")
        if count == current:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS,
                             f"Topic already has {current} partitions.")
        brokers = self._cache.live_broker_ids()
        rf = len(topic.partitions[0].replicas)
        if assignments is not None:
            new = self._check_added_assignments(assignments, brokers, current, count, rf)
        else:
            new = assign_replicas(brokers, count - current, rf, first_partition=current)
        _check_descriptors(len(new))
        if validate_only:
            return
        for index, replicas in new.items():
            topic.partitions[index] = PartitionState(index, replicas, replicas[0], 0,
                                                     list(replicas), self.epoch)
        self._write_assignment(topic)
        self._write_new_partition_states(name, (topic.partitions[i] for i in new))
        _log.info("added partitions", topic=name, count=count)
        self._notify(name, topic)

    def elect_leader(self, name: str, index: int, leader: int) -> PartitionState:
        """Make ``leader`` the partition's leader with the next leader epoch.  A leader
        from outside the ISR (an unclean election) becomes the whole ISR, as in Kafka."""
        topic = self._cache.topic(name)
        old = topic.partitions[index]
        isr = list(old.isr) if leader in old.isr else [leader]
        state = PartitionState(index, old.replicas, leader, old.leader_epoch + 1, isr, self.epoch)
        self._write_partition_state(name, state)
        topic.partitions[index] = state
        _log.info("elected leader", topic=name, partition=index, leader=leader,
                  leader_epoch=state.leader_epoch, isr=isr)
        self._notify(name, topic)
        return state

    def alter_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        topic = self._cache.topic(name)
        if topic is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                             f"The topic '{name}' does not exist.")
        self._validate_configs(configs)
        self._write_configs(name, configs)
        self._store.create(paths.CONFIG_CHANGE_SEQ_PATH, paths.encode_config_change(
            f"topics/{name}"), sequence=True, makepath=True)
        topic.configs = dict(configs)
        self._notify(name, topic)

    def delete_topic(self, name: str) -> None:
        """Mark for deletion, remove logs (through listeners), then the znodes."""
        marker = paths.delete_topic_path(name)
        if not self._store.exists(marker):
            try:
                self._store.create(marker, b"", makepath=True)
            except NodeExistsError:
                pass
        self._cache.remove_topic(name)
        self._notify(name, None)
        for path in (paths.topic_path(name), paths.topic_config_path(name)):
            if self._store.exists(path):
                self._store.delete(path, recursive=True)
        self._store.delete(marker)
        _log.info("deleted topic", topic=name)

    def _notify(self, name: str, topic: TopicMetadata | None) -> None:
        for listener in self._listeners:
            listener(name, topic)


def _check_descriptors(new_partitions: int) -> None:
    """Each partition holds a descriptor for its active segment: refuse partitions the
    process could not open, rather than fail their logs half-way and leave the broker
    unable to accept a connection.  (Kafka has no such check; it relies on a large
    ulimit.  kafkapy raises its soft limit to the hard one at start.)"""
    free = free_descriptors()
    if new_partitions > free:
        raise KafkaError(ErrorCode.POLICY_VIOLATION,
                         f"Creating {new_partitions} partitions needs as many file "
                         f"descriptors, but only {max(free, 0)} are free under the open-file "
                         f"limit of {open_file_limit()} (ulimit -n)")


def _controller_holder(data: bytes) -> str:
    try:
        return f" (broker {paths.decode_controller(data).broker_id} is the controller)"
    except ValueError:
        return ""


def _scala_map(assignments: dict[int, list[int]]) -> str:
    """An assignment as Scala prints a ``HashMap[Int, ArrayBuffer[Int]]`` (Kafka's messages)."""
    return "HashMap(" + ", ".join(f"{i} -> ArrayBuffer({', '.join(map(str, r))})"
                                  for i, r in sorted(assignments.items())) + ")"


def _new_partition(index: int, replicas: list[int], live: set[int], epoch: int) -> PartitionState:
    """A new partition as Kafka's controller starts it: the first live replica leads and
    the live replicas are the ISR; with none live the first replica is named (or -1)."""
    alive = [r for r in replicas if r in live]
    leader = alive[0] if alive else (replicas[0] if replicas else -1)
    return PartitionState(index, list(replicas), leader, 0, alive or list(replicas), epoch)
