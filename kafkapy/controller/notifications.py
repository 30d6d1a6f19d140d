"""The notification znodes brokers write for the controller (Kafka's
processIsrChangeNotification and processLogDirEventNotification): sequential children
of ``/isr_change_notification`` (partitions whose ISR a pre-2.7 leader changed itself)
and of ``/log_dir_event_notification`` (a broker whose log dir failed).

Invariants: every notification read is deleted afterwards, also when handling it
failed (an unreadable one is skipped); what the notifications name is handled once,
in the order first named; ISR changes re-read the partitions' state znodes into the
context before the brokers are told (UpdateMetadata) and before reassignments waiting
on an ISR are checked; a failed log dir is answered by sending LeaderAndIsr to every
replica on that broker, whose answers name the offline ones
(``broker_changes.process_leader_and_isr_response``).
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Hashable, Iterable, Iterator, TypeVar

import structlog

from kafkapy.controller.context import ReplicaState
from kafkapy.controller.log_text import ids_text
from kafkapy.controller.machinery import ControllerMachinery
from kafkapy.controller.watches import Watch
from kafkapy.metadata import paths
from kafkapy.metadata.store import NoNodeError

_log = structlog.get_logger("kafkapy.controller")

_Item = TypeVar("_Item", bound=Hashable)


def process_isr_change_notification(m: ControllerMachinery) -> None:
    with _notifications(m, paths.ISR_CHANGE_NOTIFICATION, m.reads.watches.isr_changes(),
                        paths.decode_isr_change) as changed:
        partitions = [tp for tp in changed if m.ctx.replicas(tp)]
        if partitions:
            m.reads.leader_and_isr_into_context(partitions)
            m.update_metadata_everywhere(partitions)
            m.reassign.on_isr_changed(partitions)


def process_log_dir_event_notification(m: ControllerMachinery) -> None:
    with _notifications(m, paths.LOG_DIR_EVENT_NOTIFICATION, m.reads.watches.log_dir_events(),
                        lambda data: [paths.decode_log_dir_event(data)]) as brokers:
        if brokers:
            # LeaderAndIsr to every replica there: the answers name the offline ones
            _log.info(f"Handling log directory failure for brokers {ids_text(brokers)}")
            m.rsm.handle_state_changes(m.ctx.replicas_on_brokers(brokers), ReplicaState.ONLINE)


@contextmanager
def _notifications(m: ControllerMachinery, path: str, watch: Watch,
                   decode: Callable[[bytes], Iterable[_Item]]) -> Iterator[list[_Item]]:
    """What the notifications under ``path`` name (re-arming ``watch``): each item once,
    in the order first named; an unreadable notification is skipped.  Every
    notification read is deleted when the block ends, also when it failed."""
    names = m.reads.children(path, watch)
    try:
        items: dict[_Item, None] = {}     # an ordered set: the dedupe stays linear
        for name in names:
            try:
                data, _ = m.reads.store.get(f"{path}/{name}")
                items.update(dict.fromkeys(decode(data)))
            except (NoNodeError, ValueError):
                continue
        yield list(items)
    finally:
        m.zk.delete_notifications(path, names)


def delete_pending(m: ControllerMachinery) -> None:
    """At failover: the notifications left from before are deleted unread (the context
    is read afresh), and the watches re-armed (Kafka's onControllerFailover)."""
    m.zk.delete_notifications(paths.ISR_CHANGE_NOTIFICATION, m.reads.children(
        paths.ISR_CHANGE_NOTIFICATION, m.reads.watches.isr_changes()))
    m.zk.delete_notifications(paths.LOG_DIR_EVENT_NOTIFICATION, m.reads.children(
        paths.LOG_DIR_EVENT_NOTIFICATION, m.reads.watches.log_dir_events()))
