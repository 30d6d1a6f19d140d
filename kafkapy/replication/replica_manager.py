"""The replica manager: this broker's partitions, appends and reads.

It hosts the partitions the controller assigns through LeaderAndIsr
(``become_leader_or_follower``: create the log with its topic id, become leader or
follower) and StopReplica (``stop_replicas``: stop following, delete the log), as
Kafka 3.9's ReplicaManager; routes Produce appends to partition leaders and serves
Fetch reads.  Appends (and leadership changes) wake the operations parked on a
partition through ``on_append`` listeners (the purgatories).

``leader_quota`` is the leader-side replication throttle (``replication.quota``), which
the Fetch handler applies to follower fetches.

Becoming leader of many partitions: the logs are created and the partitions made
leaders in one pass; the new epochs' leader-epoch-checkpoint files are written by one
background task after the pass (``leader_epoch.write_behind``), not one file per
partition on the event loop.

Invariants: a partition's leader epoch only grows (an older LeaderAndIsr is refused
per partition); a follower has a fetcher (``fetchers``, the ReplicaFetcherManager)
exactly while it follows a live leader; a partition whose log dir is offline is
answered KAFKA_STORAGE_ERROR and never changed.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Callable

import structlog

from kafkapy.log.leader_epoch import write_behind
from kafkapy.metadata.cache import PartitionState
from kafkapy.metadata.topics import invalid_topic_reason, parse_topic_id, topic_id_text
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.protocol.topic_partition import TopicPartition
from kafkapy.replication.partition import Partition
from kafkapy.replication.quota import LEADER, ReplicationQuota

_log = structlog.get_logger("kafkapy.replication")

#: StopReplica leader epochs that skip the epoch check (LeaderAndIsr.EpochDuringDelete, NoEpoch).
EPOCH_DURING_DELETE = -2
NO_EPOCH = -1


@dataclass
class PartitionChange:
    """One partition of a LeaderAndIsr request."""
    topic: str
    topic_id: uuid.UUID | None     # None: the request carries no (or a zero) id
    state: PartitionState
    is_new: bool = False


class ReplicaManager:
    def __init__(self, log_manager, node_id: int, topic_config_of: Callable[[str], dict],
                 cache=None, fetchers=None, alter_partition=None, alter_log_dirs=None) -> None:
        self._logs = log_manager
        self._node_id = node_id
        self._topic_config_of = topic_config_of
        self.cache = cache          # MetadataCache: leader liveness, known partitions
        self.fetchers = fetchers    # ReplicaFetcherManager (REPL); None: nothing followed
        self.partitions: dict[TopicPartition, Partition] = {}
        self._append_listeners: list[Callable[[TopicPartition], None]] = []
        # The AlterPartitionManager (ISR changes to the controller); None: ISRs stay.
        self.alter_partition = alter_partition
        # Leader-side replication throttle (Kafka's quotas.leader), applied by Fetch.
        self.leader_quota = ReplicationQuota(LEADER, node_id)
        # Moves between this broker's log dirs (replication.alter_log_dirs); None: none.
        self.alter_log_dirs = alter_log_dirs
        # Topic configs looked up during one LeaderAndIsr (None outside one).
        self._configs: dict[str, dict] | None = None

    def add_append_listener(self, listener: Callable[[TopicPartition], None]) -> None:
        self._append_listeners.append(listener)

    # -- LeaderAndIsr ----------------------------------------------------------------
    def become_leader_or_follower(self, controller_id: int, controller_epoch: int,
                                  changes: list[PartitionChange]) -> dict[TopicPartition, int]:
        """Kafka's becomeLeaderOrFollower after the request-level fencing (done by the
        handler): per partition an error code, in request order."""
        errors: dict[TopicPartition, int] = {}
        leaders: list[tuple[PartitionChange, Partition | None]] = []
        followers: list[tuple[PartitionChange, Partition | None]] = []
        for change in changes:
            key = (change.topic, change.state.partition)
            errors[key] = self._check(change, key, leaders, followers)
        # New epochs' leader-epoch-checkpoint files are written off the event loop, once
        # the whole request is applied (see kafkapy.log.leader_epoch).
        self._configs = {}      # one topic config per topic of the request, not per partition
        try:
            with write_behind():
                if leaders:
                    self._make_leaders(leaders, errors)
                if followers:
                    self._make_followers(followers, errors)
        finally:
            self._configs = None
        if self.alter_log_dirs is not None:   # Kafka's maybeAddLogDirFetchers
            self.alter_log_dirs.maybe_add_partitions(
                [k for k, code in errors.items() if code == ErrorCode.NO_ERROR])
        _log.info("handled LeaderAndIsr", controller_id=controller_id,
                  controller_epoch=controller_epoch, partitions=len(changes),
                  leaders=len(leaders), followers=len(followers))
        return errors

    def _check(self, change: PartitionChange, key: TopicPartition, leaders: list,
               followers: list) -> int:
        """Kafka's per-partition checks: offline log, topic id, leader epoch, assignment."""
        partition = self.partitions.get(key)
        if partition is None and (invalid_topic_reason(change.topic) or key[1] < 0):
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION    # no controller sends these
        if partition is not None and partition.log.offline:
            return ErrorCode.KAFKA_STORAGE_ERROR
        log = partition.log if partition is not None else self._logs.get_log(*key)
        log_id = _parse_id(log.topic_id) if log is not None else None
        if change.topic_id is not None and log_id is not None and log_id != change.topic_id:
            _log.error("inconsistent topic id", partition=key, log_topic_id=str(log_id),
                       request_topic_id=str(change.topic_id))
            return ErrorCode.INCONSISTENT_TOPIC_ID
        current = partition.leader_epoch if partition is not None else -1
        state = change.state
        if state.leader_epoch > current:
            if self._node_id not in state.replicas:
                return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            (leaders if state.leader == self._node_id else followers).append((change, partition))
            return ErrorCode.NO_ERROR
        if state.leader_epoch < current:
            return ErrorCode.STALE_CONTROLLER_EPOCH
        if change.topic_id is not None and log is not None and log_id is None:
            # The controller assigns an id to an old topic without bumping the epoch.
            log.record_topic_id(topic_id_text(change.topic_id))
            return ErrorCode.NO_ERROR
        if change.topic_id is None and log_id is not None and state.leader != self._node_id:
            return ErrorCode.NO_ERROR
        return ErrorCode.STALE_CONTROLLER_EPOCH

    def _make_leaders(self, leaders: list, errors: dict[TopicPartition, int]) -> None:
        self._remove_fetchers([(c.topic, c.state.partition) for c, _ in leaders])
        for change, partition in self._online(leaders, errors):
            partition.make_leader(change.state)
            self._wake((change.topic, change.state.partition))

    def _make_followers(self, followers: list, errors: dict[TopicPartition, int]) -> None:
        moved: list[Partition] = []
        for change, partition in self._online(followers, errors):
            if self.cache is not None and not self.cache.is_alive(change.state.leader):
                # Kafka keeps the log (its high watermark checkpointed) but changes nothing
                # until a LeaderAndIsr names a live leader.
                _log.warning("cannot become follower: leader unavailable",
                             partition=(change.topic, change.state.partition),
                             leader=change.state.leader)
                continue
            # False: same leader and epoch, the running fetcher carries on (Kafka).
            if partition.make_follower(change.state):
                moved.append(partition)
        self._remove_fetchers([(p.topic, p.index) for p in moved])
        for partition in moved:
            self._wake((partition.topic, partition.index))
        if moved and self.fetchers is not None:
            self.fetchers.add_partitions({
                (p.topic, p.index): (p.state.leader, p.log.log_end_offset) for p in moved})

    def _online(self, changes: list, errors: dict[TopicPartition, int]):
        """(change, partition) for each change whose partition exists or can be created
        and whose log is online; the others get their error code."""
        for change, partition in changes:
            partition = partition or self._create(change, errors)
            if partition is None:
                continue
            if partition.log.offline:
                errors[(change.topic, change.state.partition)] = ErrorCode.KAFKA_STORAGE_ERROR
                continue
            yield change, partition

    def _topic_config(self, name: str) -> dict:
        configs = self._configs
        if configs is None:
            return self._topic_config_of(name)
        config = configs.get(name)
        if config is None:
            config = configs[name] = self._topic_config_of(name)
        return config

    def _create(self, change: PartitionChange, errors: dict) -> Partition | None:
        """The partition's object and log; an existing partition's log found in no live
        dir while a dir is offline is that dir's (offline) log, unless the controller says
        the replica is new (Kafka's getOrCreateLog with isNew).  None (its error noted)
        when the log cannot be had."""
        name, index = change.topic, change.state.partition
        key = (name, index)
        topic_id = topic_id_text(change.topic_id) if change.topic_id is not None else None
        try:
            config = self._topic_config(name)
            if change.is_new or self._logs.get_log(name, index) is not None:
                log = self._logs.get_or_create_log(name, index, config, topic_id)
            else:
                with self._logs.placing_existing_partitions():
                    log = self._logs.get_or_create_log(name, index, config, topic_id)
        except KafkaError as err:      # a log on disk of another topic id
            errors[key] = err.code
            return None
        except (OSError, ValueError) as err:
            _log.error("cannot create log", partition=key, error=str(err))
            errors[key] = ErrorCode.KAFKA_STORAGE_ERROR
            return None
        # Not yet leader nor follower: epoch -1, so the request's state is applied next.
        placeholder = PartitionState(index, list(change.state.replicas), -1, -1, [],
                                     change.state.controller_epoch)
        partition = Partition(name, index, log, placeholder, self._node_id,
                              lambda err, key=key: self._logs.fail_dir_of(*key, err))
        partition.isr_manager = self.alter_partition
        if log.offline:
            partition.state = change.state   # kept for Metadata, which shows it offline
        self.partitions[key] = partition
        return partition

    # -- StopReplica ---------------------------------------------------------------------
    def stop_replicas(self, controller_id: int, controller_epoch: int,
                      partitions: dict[TopicPartition, tuple[int, bool]]) -> dict[TopicPartition, int]:
        """Kafka's stopReplicas after the request-level fencing: ``partitions`` maps each
        partition to (leader epoch, delete); answers an error code per partition."""
        errors: dict[TopicPartition, int] = {}
        stopped: list[tuple[TopicPartition, bool]] = []
        for key, (leader_epoch, delete) in partitions.items():
            partition = self.partitions.get(key)
            if partition is not None and partition.log.offline:
                errors[key] = ErrorCode.KAFKA_STORAGE_ERROR
            elif (partition is None or leader_epoch in (EPOCH_DURING_DELETE, NO_EPOCH)
                  or leader_epoch >= partition.leader_epoch):
                stopped.append((key, delete))
                errors[key] = ErrorCode.NO_ERROR
            else:
                errors[key] = ErrorCode.FENCED_LEADER_EPOCH
        self._remove_fetchers([key for key, _ in stopped])
        if self.alter_log_dirs is not None:   # a future log stays unless deleted with it
            self.alter_log_dirs.remove_partitions([key for key, _ in stopped])
        for key, delete in stopped:
            if delete:
                self.partitions.pop(key, None)
                self._drop_pending_writes(key)
                try:
                    self._logs.delete_log(*key)
                except OSError as err:
                    _log.error("deleting a stopped replica failed", partition=key, error=str(err))
                    errors[key] = ErrorCode.KAFKA_STORAGE_ERROR
            self._wake(key)
        _log.info("handled StopReplica", controller_id=controller_id,
                  controller_epoch=controller_epoch, partitions=len(partitions),
                  stopped=len(stopped))
        return errors

    def _drop_pending_writes(self, key: TopicPartition) -> None:
        log = self._logs.get_log(*key)
        cache = getattr(log, "leader_epoch_cache", None)
        if cache is not None:
            cache.drop_pending()

    def _remove_fetchers(self, keys: list[TopicPartition]) -> None:
        if keys and self.fetchers is not None:
            self.fetchers.remove_partitions(keys)

    # -- requests -------------------------------------------------------------------
    def leader_partition(self, topic: str, index: int, current_leader_epoch: int = -1) -> Partition:
        partition = self.partitions.get((topic, index))
        if partition is None:
            if self.cache is not None and self.cache.partition(topic, index) is not None:
                raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        partition.check_leader(current_leader_epoch)
        return partition

    def readable_partition(self, topic: str, index: int, current_leader_epoch: int = -1,
                           leader_only: bool = True) -> Partition:
        """The partition a fetch reads: the leader's, or (a consumer's Fetch v11+, Kafka's
        KIP-392 fetch from follower) any replica here, at the epoch the client knows."""
        if leader_only:
            return self.leader_partition(topic, index, current_leader_epoch)
        partition = self.partitions.get((topic, index))
        if partition is None:
            return self.leader_partition(topic, index, current_leader_epoch)  # raises
        if partition.is_leader:
            partition.check_leader(current_leader_epoch)
            return partition
        if partition.log.offline:
            raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR)
        if current_leader_epoch >= 0 and current_leader_epoch != partition.leader_epoch:
            raise KafkaError(ErrorCode.FENCED_LEADER_EPOCH
                             if current_leader_epoch < partition.leader_epoch
                             else ErrorCode.UNKNOWN_LEADER_EPOCH)
        return partition

    def is_leader(self, topic: str, index: int) -> bool:
        """Whether this broker hosts the partition as its leader (coordinators load then)."""
        partition = self.partitions.get((topic, index))
        return partition is not None and partition.is_leader and not partition.log.offline

    def appended(self, key: TopicPartition) -> None:
        self._wake(key)

    # -- ISR (Kafka's isr-expiration task and UnderReplicatedPartitions) -----------------
    def maybe_shrink_isr(self, now_ms: int | None = None) -> int:
        """Every replica.lag.time.max.ms / 2: each led partition proposes its ISR
        without the followers out of sync; returns how many proposed a change."""
        changed = 0
        for partition in list(self.partitions.values()):
            if partition.is_leader and partition.maybe_shrink_isr(now_ms):
                changed += 1
        return changed

    def under_replicated_count(self) -> int:
        return sum(1 for p in self.partitions.values() if p.is_under_replicated)

    def _wake(self, key: TopicPartition) -> None:
        for listener in self._append_listeners:
            listener(key)


def _parse_id(text: str | None) -> uuid.UUID | None:
    """A log's stored topic id (text), None when it has none or it cannot be read."""
    if text is None:
        return None
    try:
        return parse_topic_id(text)
    except (ValueError, TypeError):
        return None
