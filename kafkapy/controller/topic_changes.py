"""Topics created, grown and marked for deletion (Kafka's processTopicChange,
processPartitionModifications, onNewPartitionCreation and processTopicDeletion).

Invariants:
 - a new partition goes NonExistent -> New -> Online (the first live replica of its
   assignment leads) and its replicas New -> Online, in that order;
 - partitions added to a topic queued for deletion are refused: the known assignment is
   written back (Kafka's restorePartitionReplicaAssignment);
 - a deletion marker for an unknown topic, or any marker while ``delete.topic.enable``
   is false, is removed; a topic with a reassignment in flight that is already queued
   is halted (ineligible), as Kafka 3.9 marks ineligibility before queueing.
"""
from __future__ import annotations

import structlog

from kafkapy.controller.context import PartitionStateName, ReplicaState
from kafkapy.controller.leader_election import OFFLINE
from kafkapy.controller.log_text import names_text, tps_text
from kafkapy.controller.machinery import ControllerMachinery
from kafkapy.metadata import paths
from kafkapy.metadata.store import BadVersionError, NoNodeError
from kafkapy.protocol.topic_partition import TopicPartition

_log = structlog.get_logger("kafkapy.controller")


def process_topic_change(m: ControllerMachinery) -> None:
    """``/brokers/topics`` changed: forget deleted topics, bring new ones online."""
    ctx = m.ctx
    topics = set(m.reads.topic_names())
    new_topics = topics - ctx.all_topics()
    deleted = ctx.all_topics() - topics
    for topic in deleted:
        ctx.remove_topic(topic)
    added = m.reads.topics_into_context(sorted(new_topics))
    _log.info(f"New topics: [{names_text(new_topics)}], deleted topics: "
              f"[{names_text(deleted)}], new partition replica assignment "
              f"[{_assignment_text(added)}]")
    new_partitions = [TopicPartition(t, p) for t, parts in added.items() for p in sorted(parts)]
    if new_partitions:
        on_new_partition_creation(m, new_partitions)


def process_partition_modifications(m: ControllerMachinery, topic: str) -> None:
    """``/brokers/topics/<topic>`` changed: partitions may have been added."""
    ctx = m.ctx
    if topic not in ctx.assignments:
        return
    got = m.reads.topic(topic)
    if got is None:
        return
    _, parts, _ = got
    to_add = {p: r for p, r in parts.items() if p not in ctx.assignments[topic]}
    if ctx.is_topic_queued_for_deletion(topic):
        if to_add:
            _log.warning(f"Skipping adding partitions {sorted(to_add)} for topic {topic} "
                         "since it is currently being deleted")
            _restore_assignment(m, topic)
        else:
            _log.info("Ignoring partition change during topic deletion as no new "
                      "partitions are added")
        return
    if to_add:
        _log.info(f"New partitions to be added {_assignment_text({topic: to_add})}")
        for p, replicas in to_add.items():
            ctx.update_assignment(TopicPartition(topic, p), replicas)
        on_new_partition_creation(m, [TopicPartition(topic, p) for p in sorted(to_add)])


def on_new_partition_creation(m: ControllerMachinery, partitions: list[TopicPartition]) -> None:
    _log.info(f"New partition creation callback for {tps_text(partitions)}")
    replicas = [(tp, r) for tp in partitions for r in m.ctx.replicas(tp)]
    m.psm.handle_state_changes(partitions, PartitionStateName.NEW)
    m.rsm.handle_state_changes(replicas, ReplicaState.NEW)
    m.psm.handle_state_changes(partitions, PartitionStateName.ONLINE, OFFLINE)
    m.rsm.handle_state_changes(replicas, ReplicaState.ONLINE)


def process_topic_deletion(m: ControllerMachinery, delete_topic_enable: bool) -> None:
    """``/admin/delete_topics`` changed: queue the marked topics for deletion."""
    ctx = m.ctx
    to_delete = set(m.reads.children(paths.ADMIN_DELETE_TOPICS, m.reads.watches.delete_topics()))
    unknown = to_delete - ctx.all_topics()
    if unknown:
        _log.warning(f"Ignoring request to delete non-existing topics {names_text(unknown)}")
        m.zk.delete_topic_deletions(sorted(unknown))
    to_delete -= unknown
    if not delete_topic_enable:
        if to_delete:
            _log.info(f"Removing {names_text(to_delete)} since delete topic is disabled")
            m.zk.delete_topic_deletions(sorted(to_delete))
        return
    # Kafka 3.9 marks topics with a reassignment in flight ineligible *before*
    # queueing them, which only halts topics already queued: a newly deleted topic
    # goes at once (its reassignment with it); after a failover it waits.
    m.deletion.mark_topic_ineligible_for_deletion(
        {tp[0] for tp in ctx.partitions_being_reassigned} & to_delete,
        "topic reassignment in progress")
    to_delete -= ctx.topics_to_be_deleted
    if to_delete:
        _log.info(f"Starting topic deletion for topics {names_text(to_delete)}")
        m.deletion.enqueue_topics_for_deletion(to_delete)


def _restore_assignment(m: ControllerMachinery, topic: str) -> None:
    """Kafka's restorePartitionReplicaAssignment: write back the known assignment."""
    try:
        _, stat = m.reads.store.get(paths.topic_path(topic))
        m.zk.set_topic_assignment(topic, m.ctx.topic_ids.get(topic),
                                  m.ctx.full_assignments_for_topic(topic),
                                  version=stat.version)
    except (NoNodeError, BadVersionError) as e:
        _log.warning("could not restore the assignment", topic=topic, error=str(e))


def _assignment_text(assignment: dict[str, dict[int, list[int]]]) -> str:
    return ", ".join(f"{t}-{p} -> ReplicaAssignment(replicas={','.join(map(str, r))}, "
                     f"addingReplicas=, removingReplicas=)"
                     for t, parts in assignment.items() for p, r in sorted(parts.items()))
