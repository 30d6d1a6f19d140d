"""A partition's leader and ISR (Kafka's ``LeaderAndIsr`` with the controller epoch of
``LeaderIsrAndControllerEpoch``): what ``/brokers/topics/<t>/partitions/<p>/state``
holds, what the controller's context keeps per partition, decides in its elections and
writes back, and what AlterPartition proposes and is answered.

Fields, as Kafka names them: ``leader`` (a broker id; ``NO_LEADER`` = none),
``leader_epoch``, ``isr`` (in the order written), ``controller_epoch`` (of the
controller that wrote the znode), ``partition_epoch`` (the state znode's zk version:
Kafka's ZooKeeper-mode partitionEpoch, the version a conditional write names) and
``leader_recovery_state`` (``LEADER_RECOVERED``, or ``LEADER_RECOVERING`` after an
unclean election until the new leader has recovered).

Invariants: immutable (a change is a new value, ``dataclasses.replace`` or the methods
below); ``isr`` is a tuple.  The znode codec is ``kafkapy.metadata.paths``
(``encode_partition_state`` / ``decode_partition_state``).  The metadata cache keeps
its own per-partition record (``kafkapy.metadata.cache.PartitionState``): the partition
state of the controller's requests, which adds the replicas and offline replicas and is
what a hosted ``Partition`` works from.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable

#: ``LeaderRecoveryState.RECOVERED`` / ``RECOVERING``
LEADER_RECOVERED = 0
LEADER_RECOVERING = 1
#: ``LeaderAndIsr.NoLeader``
NO_LEADER = -1
#: ``LeaderAndIsr.LeaderDuringDelete``: the leader UpdateMetadata names for a partition
#: being deleted.
LEADER_DURING_DELETE = -2
#: ``LeaderAndIsr.InitialLeaderEpoch``
INITIAL_LEADER_EPOCH = 0


@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    partition_epoch: int = 0
    leader_recovery_state: int = LEADER_RECOVERED

    def new_leader_and_isr(self, leader: int, isr: Iterable[int]) -> "LeaderAndIsr":
        """Kafka's ``LeaderAndIsr.newLeaderAndIsr``: next leader epoch, same partition
        epoch (the caller writes it conditionally and keeps what the write returns)."""
        return replace(self, leader=leader, leader_epoch=self.leader_epoch + 1,
                       isr=tuple(isr))

    def new_epoch(self) -> "LeaderAndIsr":
        return replace(self, leader_epoch=self.leader_epoch + 1)

    def with_partition_epoch(self, partition_epoch: int,
                             controller_epoch: int) -> "LeaderAndIsr":
        """As written to the state znode: its new zk version, by ``controller_epoch``."""
        return replace(self, partition_epoch=partition_epoch,
                       controller_epoch=controller_epoch)
