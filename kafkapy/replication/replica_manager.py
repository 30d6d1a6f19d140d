"""The replica manager: this broker's partitions, appends and reads.

It follows the controller's topic changes (creating or deleting logs), routes
Produce appends to partition leaders and serves Fetch reads.  Appends wake the
fetches parked on a partition through ``on_append`` listeners (the purgatory).
"""
from __future__ import annotations

from typing import Callable

import structlog

from kafkapy.metadata.cache import TopicMetadata
from kafkapy.metadata.topics import topic_id_text
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.replication.partition import Partition

_log = structlog.get_logger("kafkapy.replication")

PartitionKey = tuple[str, int]


class ReplicaManager:
    def __init__(self, log_manager, node_id: int, topic_config_of: Callable[[str], dict]) -> None:
        self._logs = log_manager
        self._node_id = node_id
        self._topic_config_of = topic_config_of
        self.partitions: dict[PartitionKey, Partition] = {}
        self._append_listeners: list[Callable[[PartitionKey], None]] = []

    def add_append_listener(self, listener: Callable[[PartitionKey], None]) -> None:
        self._append_listeners.append(listener)

    # -- following the controller -------------------------------------------------
    def on_topic_change(self, name: str, topic: TopicMetadata | None) -> None:
        if topic is None:
            self._drop_topic(name)
            return
        config = self._topic_config_of(name)
        for index, state in topic.partitions.items():
            key = (name, index)
            partition = self.partitions.get(key)
            if self._node_id not in state.replicas:
                continue
            if partition is None:
                log = self._logs.get_or_create_log(name, index, config,
                                                   topic_id_text(topic.topic_id))
                self.partitions[key] = Partition(
                    name, index, log, state, self._node_id,
                    lambda err, key=key: self._logs.fail_dir_of(*key, err))
                if state.leader == self._node_id and len(state.isr) <= 1:
                    # A sole in-sync leader's high watermark is its log end (Kafka's
                    # maybeIncrementLeaderHW); the checkpoint may lag after a crash.
                    log.high_watermark = log.log_end_offset
            else:
                partition.state = state
                partition.log.update_config(config)
            log = self.partitions[key].log
            cache = log.leader_epoch_cache
            if (state.leader == self._node_id and not log.offline
                    and (cache.latest_epoch is None or state.leader_epoch > cache.latest_epoch)):
                # Kafka's makeLeader: a new leader epoch starts at the log end, so
                # OffsetForLeaderEpoch can place the current epoch before any append.
                cache.assign(state.leader_epoch, log.log_end_offset)

    def _drop_topic(self, name: str) -> None:
        for key in [k for k in self.partitions if k[0] == name]:
            self.partitions.pop(key)
            self._logs.delete_log(*key)
            self._wake(key)

    # -- requests -------------------------------------------------------------------
    def leader_partition(self, topic: str, index: int, current_leader_epoch: int = -1) -> Partition:
        partition = self.partitions.get((topic, index))
        if partition is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        partition.check_leader(current_leader_epoch)
        return partition

    def appended(self, key: PartitionKey) -> None:
        self._wake(key)

    def _wake(self, key: PartitionKey) -> None:
        for listener in self._append_listeners:
            listener(key)
