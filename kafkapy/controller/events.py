"""The controller's events (Kafka's ``ControllerEvent`` subclasses of KafkaController.scala).

Job: name every piece of work the controller does.  Watch callbacks and the public
API only build one of these and put it on the controller's queue; the one task
draining the queue runs them in order, so the controller's state has one writer.

Invariants: events are plain data; an event that a caller awaits carries a
``future`` resolved (result or exception) by the queue task exactly once --
also when the event is dropped because the controller stopped.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from kafkapy.protocol.topic_partition import TopicPartition


@dataclass(slots=True)
class ControllerEvent:
    #: Resolved when the event was processed (awaitable events only).
    future: asyncio.Future | None = field(default=None, kw_only=True)

    @property
    def name(self) -> str:
        return type(self).__name__

    def complete(self, result=None) -> None:
        if self.future is not None and not self.future.done():
            self.future.set_result(result)

    def fail(self, exc: BaseException) -> None:
        if self.future is not None and not self.future.done():
            self.future.set_exception(exc)


@dataclass(slots=True)
class Startup(ControllerEvent):
    """Register the /controller watch and run for controller."""


@dataclass(slots=True)
class ControllerChange(ControllerEvent):
    """/controller was created, changed or deleted (Kafka's ControllerChange):
    resign if it is no longer us, then run for controller if it is gone."""


@dataclass(slots=True)
class Reelect(ControllerEvent):
    """Resign if active and run for controller again (Kafka's Reelect /
    RegisterBrokerAndReelect after the broker registered again)."""


@dataclass(slots=True)
class Expire(ControllerEvent):
    """The metadata store session expired: resign (Kafka's Expire)."""


@dataclass(slots=True)
class BrokerChange(ControllerEvent):
    """Children of /brokers/ids changed."""


@dataclass(slots=True)
class BrokerModification(ControllerEvent):
    """A broker's registration data changed (endpoints, rack)."""
    broker_id: int = -1


@dataclass(slots=True)
class TopicChange(ControllerEvent):
    """Children of /brokers/topics changed."""


@dataclass(slots=True)
class PartitionModifications(ControllerEvent):
    """/brokers/topics/<topic> changed (partitions added)."""
    topic: str = ""


@dataclass(slots=True)
class TopicDeletion(ControllerEvent):
    """Children of /admin/delete_topics changed."""


@dataclass(slots=True)
class IsrChangeNotification(ControllerEvent):
    """Children of /isr_change_notification changed."""


@dataclass(slots=True)
class LogDirEventNotification(ControllerEvent):
    """Children of /log_dir_event_notification changed (a broker's log dir failed)."""


@dataclass(slots=True)
class LeaderAndIsrResponseReceived(ControllerEvent):
    """A broker answered a LeaderAndIsr request (KAFKA_STORAGE_ERROR = offline dir)."""
    broker_id: int = -1
    response: object = None


@dataclass(slots=True)
class TopicUncleanLeaderElectionEnable(ControllerEvent):
    """A topic now allows unclean elections: retry its offline partitions (Kafka's
    TopicUncleanLeaderElectionEnable)."""
    topic: str = ""


@dataclass(slots=True)
class ControlledShutdown(ControllerEvent):
    """A broker asked to shut down; the future gets ``(error_code, [(t, p), ...])``."""
    broker_id: int = -1
    broker_epoch: int = -1


@dataclass(slots=True)
class ReplicaLeaderElection(ControllerEvent):
    """ElectLeaders from the admin API; the future gets
    ``{(t, p): (error_code, message | None)}``."""
    election_type: int = 0
    partitions: list[TopicPartition] | None = None


@dataclass(slots=True)
class AutoPreferredReplicaLeaderElection(ControllerEvent):
    """The periodic leader imbalance check (auto.leader.rebalance.enable)."""


@dataclass(slots=True)
class TopicDeletionStopReplicaResponseReceived(ControllerEvent):
    """A broker answered a StopReplica(delete=True) of a topic being deleted."""
    broker_id: int = -1
    error_code: int = 0
    partition_errors: dict = field(default_factory=dict)


@dataclass(slots=True)
class ZkPreferredReplicaElection(ControllerEvent):
    """/admin/preferred_replica_election was created (an operator's znode)."""


@dataclass(slots=True)
class AlterPartitionReceived(ControllerEvent):
    """A partition leader's AlterPartition (ISR change); the future gets the
    ``AlterPartitionResponse`` of ``version``."""
    request: object = None
    version: int = 0


@dataclass(slots=True)
class AllocateProducerIds(ControllerEvent):
    """A broker's AllocateProducerIds (API 67); the future gets ``(error_code,
    ProducerIdBlock | None)`` (Kafka's AllocateProducerIds event)."""
    broker_id: int = -1
    broker_epoch: int = -1


@dataclass(slots=True)
class ApiPartitionReassignment(ControllerEvent):
    """AlterPartitionReassignments: ``reassignments`` maps (t, p) to the target replicas
    or None (cancel); the future gets ``{(t, p): (error_code, message | None)}`` or,
    when this broker is not the controller, ``(NOT_CONTROLLER, message)``."""
    reassignments: dict = field(default_factory=dict)


@dataclass(slots=True)
class ListPartitionReassignments(ControllerEvent):
    """ListPartitionReassignments: ``partitions`` None = every one being reassigned; the
    future gets ``{(t, p): ReplicaAssignment}`` or ``(NOT_CONTROLLER, message)``."""
    partitions: list | None = None


@dataclass(slots=True)
class UpdateFeatures(ControllerEvent):
    """UpdateFeatures (API 57): ``updates`` (``feature_updates.FeatureUpdate``) checked and,
    unless ``validate_only``, written to /feature.  The future gets ``{feature: (error_code, message)}`` or,
    when this broker is not the controller, ``(NOT_CONTROLLER, message)``."""
    updates: list = field(default_factory=list)
    validate_only: bool = False


@dataclass(slots=True)
class ZkPartitionReassignment(ControllerEvent):
    """/admin/reassign_partitions was created (the legacy znode; Kafka's
    PartitionReassignmentHandler.handleCreation).  ``created`` is False for the other
    watch events, which only re-arm the watch."""
    created: bool = True


@dataclass(slots=True)
class ShutdownEventThread(ControllerEvent):
    """Last event: the queue task stops after it."""
