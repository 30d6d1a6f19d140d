"""The notification znodes brokers write for the controller (Kafka's
processIsrChangeNotification and processLogDirEventNotification): sequential children
of ``/isr_change_notification`` (partitions whose ISR a pre-2.7 leader changed itself)
and of ``/log_dir_event_notification`` (a broker whose log dir failed).

Invariants: every notification read is deleted afterwards, also when handling it
failed (an unreadable one is skipped); ISR changes re-read the partitions' state
znodes into the context before the brokers are told (UpdateMetadata) and before
reassignments waiting on an ISR are checked; a failed log dir is answered by sending
LeaderAndIsr to every replica on that broker, whose answers name the offline ones
(``broker_changes.process_leader_and_isr_response``).
"""
from __future__ import annotations

import structlog

from kafkapy.controller.context import ReplicaState
from kafkapy.controller.log_text import ids_text
from kafkapy.controller.machinery import ControllerMachinery
from kafkapy.metadata import paths
from kafkapy.metadata.store import NoNodeError
from kafkapy.protocol.topic_partition import TopicPartition

_log = structlog.get_logger("kafkapy.controller")


def process_isr_change_notification(m: ControllerMachinery) -> None:
    names = m.reads.children(paths.ISR_CHANGE_NOTIFICATION, m.reads.watches.isr_changes())
    try:
        partitions: list[TopicPartition] = []
        for name in names:
            try:
                data, _ = m.reads.store.get(f"{paths.ISR_CHANGE_NOTIFICATION}/{name}")
                partitions += [tp for tp in paths.decode_isr_change(data)
                               if tp not in partitions]
            except (NoNodeError, ValueError):
                continue
        partitions = [tp for tp in partitions if m.ctx.replicas(tp)]
        if partitions:
            m.reads.leader_and_isr_into_context(partitions)
            m.update_metadata_everywhere(partitions)
            m.reassign.on_isr_changed(partitions)
    finally:
        m.zk.delete_notifications(paths.ISR_CHANGE_NOTIFICATION, names)


def process_log_dir_event_notification(m: ControllerMachinery) -> None:
    names = m.reads.children(paths.LOG_DIR_EVENT_NOTIFICATION, m.reads.watches.log_dir_events())
    try:
        brokers: list[int] = []
        for name in names:
            try:
                data, _ = m.reads.store.get(f"{paths.LOG_DIR_EVENT_NOTIFICATION}/{name}")
                broker_id = paths.decode_log_dir_event(data)
            except (NoNodeError, ValueError):
                continue
            if broker_id not in brokers:
                brokers.append(broker_id)
        if brokers:
            # LeaderAndIsr to every replica there: the answers name the offline ones
            _log.info(f"Handling log directory failure for brokers {ids_text(brokers)}")
            m.rsm.handle_state_changes(m.ctx.replicas_on_brokers(brokers), ReplicaState.ONLINE)
    finally:
        m.zk.delete_notifications(paths.LOG_DIR_EVENT_NOTIFICATION, names)


def delete_pending(m: ControllerMachinery) -> None:
    """At failover: the notifications left from before are deleted unread (the context
    is read afresh), and the watches re-armed (Kafka's onControllerFailover)."""
    m.zk.delete_notifications(paths.ISR_CHANGE_NOTIFICATION, m.reads.children(
        paths.ISR_CHANGE_NOTIFICATION, m.reads.watches.isr_changes()))
    m.zk.delete_notifications(paths.LOG_DIR_EVENT_NOTIFICATION, m.reads.children(
        paths.LOG_DIR_EVENT_NOTIFICATION, m.reads.watches.log_dir_events()))
