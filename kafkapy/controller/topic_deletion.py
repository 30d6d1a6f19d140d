"""Topic deletion (Kafka 3.9's ``TopicDeletionManager`` and ``ControllerDeletionClient``).

Job: drive a topic queued by ``/admin/delete_topics/<t>`` to gone: its partitions go
Offline then NonExistent, brokers get UpdateMetadata (leader -2), every replica gets
StopReplica(delete=true); when every replica reported success the topic's znodes
(``/brokers/topics/<t>`` with its partitions, ``/config/topics/<t>``,
``/admin/delete_topics/<t>``) are deleted and the controller forgets it.

Invariants (Kafka's):
 - a topic is *ineligible* (halted) while any of its replicas is on a dead broker or a
   replica failed to delete; ``resume_deletion_for_topics`` (a broker came back, a
   reassignment finished) makes it eligible again and the failed replicas are retried;
 - a topic is never deleted twice: ``topics_with_deletion_started`` records the ones
   whose partitions were already taken offline;
 - with ``delete.topic.enable=false`` nothing is deleted: the markers under
   ``/admin/delete_topics`` are removed and the topics stay.
All methods run on the controller's event task.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable, Protocol

import structlog

from kafkapy.controller.context import PartitionStateName, ReplicaState
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.topic_partition import TopicPartition

if TYPE_CHECKING:
    from kafkapy.controller.context import ControllerContext, PartitionAndReplica
    from kafkapy.controller.partition_state_machine import PartitionStateMachine
    from kafkapy.controller.replica_state_machine import ReplicaStateMachine
    from kafkapy.controller.request_batch import ControllerBrokerRequestBatch
    from kafkapy.controller.zk_writes import ZkWrites

_log = structlog.get_logger("kafkapy.controller.topic_deletion")


class DeletionClient(Protocol):
    """What the deletion manager needs from the controller (Kafka's DeletionClient)."""

    def delete_topic(self, topic: str) -> None:
        """Delete the topic's znodes (fenced by the controller epoch)."""

    def delete_topic_deletions(self, topics: Iterable[str]) -> None:
        """Delete ``/admin/delete_topics/<t>`` markers."""

    def mute_partition_modifications(self, topic: str) -> None:
        """Stop watching ``/brokers/topics/<t>`` (a re-created topic must show up as new)."""

    def send_metadata_update(self, partitions: "Iterable[TopicPartition]") -> None:
        """UpdateMetadata for ``partitions`` to every live or shutting-down broker."""


class ControllerDeletionClient:
    """The usual ``DeletionClient``: znodes through ``ZkWrites``, UpdateMetadata through
    the request batch; ``mute_partition_modifications`` is the controller's callback
    that drops its ``/brokers/topics/<t>`` watch (no-op if None)."""

    def __init__(self, ctx: "ControllerContext", zk_writes: "ZkWrites",
                 batch: "ControllerBrokerRequestBatch",
                 mute_partition_modifications: Callable[[str], None] | None = None) -> None:
        self._ctx = ctx
        self._zk = zk_writes
        self._batch = batch
        self._mute = mute_partition_modifications

    def delete_topic(self, topic: str) -> None:
        self._zk.delete_topic(topic)

    def delete_topic_deletions(self, topics: Iterable[str]) -> None:
        self._zk.delete_topic_deletions(topics)

    def mute_partition_modifications(self, topic: str) -> None:
        if self._mute is not None:
            self._mute(topic)

    def send_metadata_update(self, partitions: "Iterable[TopicPartition]") -> None:
        """Kafka's KafkaController.sendUpdateMetadataRequest (its own batch)."""
        self._batch.new_batch()
        self._batch.add_update_metadata(self._ctx.live_or_shutting_down_broker_ids(),
                                        list(partitions))
        self._batch.send()


class TopicDeletionManager:
    """See the module docstring."""

    def __init__(self, ctx: "ControllerContext", replica_sm: "ReplicaStateMachine",
                 partition_sm: "PartitionStateMachine", client: DeletionClient,
                 delete_topic_enable: bool = True) -> None:
        self._ctx = ctx
        self._replica_sm = replica_sm
        self._partition_sm = partition_sm
        self._client = client
        self.is_delete_topic_enabled = bool(delete_topic_enable)

    # -- entry points -------------------------------------------------------------------
    def init(self, topics_to_be_deleted: Iterable[str],
             topics_ineligible: Iterable[str] = ()) -> None:
        """At failover: queue the topics found under ``/admin/delete_topics`` (those with
        a replica on a dead broker or being reassigned start ineligible).  With deletion
        disabled, remove the markers instead."""
        topics = set(topics_to_be_deleted)
        _log.info("initializing topic deletion", to_delete=sorted(topics),
                  ineligible=sorted(set(topics_ineligible)))
        if self.is_delete_topic_enabled:
            self._ctx.queue_topic_deletion(topics)
            self._ctx.topics_ineligible_for_deletion.update(
                set(topics_ineligible) & self._ctx.topics_to_be_deleted)
        else:
            _log.info("removing delete_topics markers since delete topic is disabled",
                      topics=sorted(topics))
            self._client.delete_topic_deletions(sorted(topics))

    def reset(self) -> None:
        """On resignation: forget the deletion bookkeeping (Kafka's reset)."""
        if self.is_delete_topic_enabled:
            self._ctx.topics_to_be_deleted.clear()
            self._ctx.topics_with_deletion_started.clear()
            self._ctx.topics_ineligible_for_deletion.clear()

    def try_topic_deletion(self) -> None:
        """Resume whatever deletion can go on (after failover)."""
        if self.is_delete_topic_enabled:
            self._resume_deletions()

    def enqueue_topics_for_deletion(self, topics: Iterable[str]) -> None:
        """Queue topics (the controller already checked they exist) and start."""
        if self.is_delete_topic_enabled:
            self._ctx.queue_topic_deletion(topics)
            self._resume_deletions()

    def resume_deletion_for_topics(self, topics: Iterable[str] = ()) -> None:
        """Make halted topics eligible again (e.g. a broker with their replicas came back)."""
        if self.is_delete_topic_enabled:
            resume = set(topics) & self._ctx.topics_to_be_deleted
            self._ctx.topics_ineligible_for_deletion.difference_update(resume)
            if resume:
                self._resume_deletions()

    def fail_replica_deletion(self, replicas: "Iterable[PartitionAndReplica]") -> None:
        """StopReplica(delete) failed (or the broker died): those replicas become
        ReplicaDeletionIneligible and their topics halt."""
        if not self.is_delete_topic_enabled:
            return
        failed = [r for r in replicas if self.is_topic_queued_up_for_deletion(r[0][0])]
        if failed:
            topics = {r[0][0] for r in failed}
            _log.debug("replica deletion failed, halting topics", replicas=failed,
                       topics=sorted(topics))
            self._replica_sm.handle_state_changes(failed, ReplicaState.DELETION_INELIGIBLE)
            self.mark_topic_ineligible_for_deletion(topics, "replica deletion failure")
            self._resume_deletions()

    def complete_replica_deletion(self, replicas: "Iterable[PartitionAndReplica]") -> None:
        """StopReplica(delete) succeeded for these replicas."""
        done = [r for r in replicas if self.is_topic_queued_up_for_deletion(r[0][0])]
        self._replica_sm.handle_state_changes(done, ReplicaState.DELETION_SUCCESSFUL)
        self._resume_deletions()

    def handle_stop_replica_response(self, broker_id: int, error_code: int,
                                     partition_errors: "dict[TopicPartition, int]") -> None:
        """Kafka's processTopicDeletionStopReplicaResponseReceived: a request-level error
        fails every partition, else the partitions with an error fail and the others
        completed."""
        if error_code != ErrorCode.NO_ERROR:
            in_error = set(partition_errors)
        else:
            in_error = {tp for tp, code in partition_errors.items()
                        if code != ErrorCode.NO_ERROR}
        if in_error:
            self.fail_replica_deletion([(tp, broker_id) for tp in sorted(in_error)])
        if len(in_error) != len(partition_errors):
            self.complete_replica_deletion(
                [(tp, broker_id) for tp in sorted(set(partition_errors) - in_error)])

    def mark_topic_ineligible_for_deletion(self, topics: Iterable[str], reason: str) -> None:
        if self.is_delete_topic_enabled:
            halted = self._ctx.topics_to_be_deleted & set(topics)
            self._ctx.topics_ineligible_for_deletion.update(halted)
            if halted:
                _log.info("halted deletion of topics", topics=sorted(halted), reason=reason)

    def is_topic_queued_up_for_deletion(self, topic: str) -> bool:
        return self.is_delete_topic_enabled and self._ctx.is_topic_queued_for_deletion(topic)

    # -- the work ---------------------------------------------------------------------
    def _is_topic_ineligible(self, topic: str) -> bool:
        return (not self.is_delete_topic_enabled
                or topic in self._ctx.topics_ineligible_for_deletion)

    def _is_deletion_in_progress(self, topic: str) -> bool:
        return (self.is_delete_topic_enabled
                and self._ctx.is_any_replica_in_state(topic, ReplicaState.DELETION_STARTED))

    def _is_topic_eligible(self, topic: str) -> bool:
        return (self._ctx.is_topic_queued_for_deletion(topic)
                and not self._is_deletion_in_progress(topic)
                and not self._is_topic_ineligible(topic))

    def _resume_deletions(self) -> None:
        ctx = self._ctx
        queued = sorted(ctx.topics_to_be_deleted)
        retry: list[str] = []
        eligible: list[str] = []
        if queued:
            _log.info("handling deletion for topics", topics=queued)
        for topic in queued:
            if ctx.are_all_replicas_in_state(topic, ReplicaState.DELETION_SUCCESSFUL):
                self._complete_delete_topic(topic)
                _log.info("deletion of topic successfully completed", topic=topic)
                continue
            if (not ctx.is_any_replica_in_state(topic, ReplicaState.DELETION_STARTED)
                    and ctx.is_any_replica_in_state(topic, ReplicaState.DELETION_INELIGIBLE)):
                retry.append(topic)
            if self._is_topic_eligible(topic):
                _log.info("deletion of topic (re)started", topic=topic)
                eligible.append(topic)
        if retry:
            self._retry_deletion_for_ineligible_replicas(retry)
        if eligible:
            self._on_topic_deletion(eligible)

    def _retry_deletion_for_ineligible_replicas(self, topics: list[str]) -> None:
        failed = [r for t in topics
                  for r in sorted(self._ctx.replicas_in_state(t, ReplicaState.DELETION_INELIGIBLE))]
        _log.debug("retrying deletion", topics=topics, replicas=failed)
        self._replica_sm.handle_state_changes(failed, ReplicaState.OFFLINE)

    def _complete_delete_topic(self, topic: str) -> None:
        self._client.mute_partition_modifications(topic)
        done = sorted(self._ctx.replicas_in_state(topic, ReplicaState.DELETION_SUCCESSFUL))
        self._replica_sm.handle_state_changes(done, ReplicaState.NON_EXISTENT)
        self._client.delete_topic(topic)
        self._ctx.remove_topic(topic)

    def _on_topic_deletion(self, topics: list[str]) -> None:
        ctx = self._ctx
        unseen = [t for t in topics if t not in ctx.topics_with_deletion_started]
        if unseen:
            partitions = [tp for t in unseen for tp in ctx.partitions_for_topic(t)]
            self._partition_sm.handle_state_changes(partitions, PartitionStateName.OFFLINE)
            self._partition_sm.handle_state_changes(partitions, PartitionStateName.NON_EXISTENT)
            ctx.topics_with_deletion_started.update(unseen)
        # Brokers stop serving the topics (leader -2) before their replicas go.
        self._client.send_metadata_update([tp for t in topics
                                           for tp in ctx.partitions_for_topic(t)])
        self._on_partition_deletion(topics)

    def _on_partition_deletion(self, topics: list[str]) -> None:
        ctx = self._ctx
        dead: list = []
        retry: list = []
        ineligible: set[str] = set()
        for topic in topics:
            replicas = ctx.replicas_for_topic(topic)
            alive = [r for r in replicas if ctx.is_replica_online(r[1], r[0])]
            gone = [r for r in replicas if not ctx.is_replica_online(r[1], r[0])]
            succeeded = ctx.replicas_in_state(topic, ReplicaState.DELETION_SUCCESSFUL)
            retry.extend(r for r in alive if r not in succeeded)
            dead.extend(gone)
            if gone:
                _log.debug("dead replicas found for topic", topic=topic, replicas=gone)
                ineligible.add(topic)
        # Dead replicas fail at once; live ones stop fetching, then delete.
        self._replica_sm.handle_state_changes(dead, ReplicaState.DELETION_INELIGIBLE)
        self._replica_sm.handle_state_changes(retry, ReplicaState.OFFLINE)
        self._replica_sm.handle_state_changes(retry, ReplicaState.DELETION_STARTED)
        if ineligible:
            self.mark_topic_ineligible_for_deletion(ineligible, "offline replicas")
