"""The controller's znode watches (Kafka's controller ZNodeChangeHandlers): each watched
path and the event its change puts on the controller's queue.

=====================================  =======  ==========================================
path                                   watch    event
=====================================  =======  ==========================================
``/controller``                        data     ``Reelect`` when deleted, else
                                                ``ControllerChange``
``/brokers/ids``                       child    ``BrokerChange``
``/brokers/ids/<id>``                  data     ``BrokerModification``
``/brokers/topics``                    child    ``TopicChange``
``/brokers/topics/<t>``                data     ``PartitionModifications``
``/admin/delete_topics``               child    ``TopicDeletion``
``/isr_change_notification``           child    ``IsrChangeNotification``
``/log_dir_event_notification``        child    ``LogDirEventNotification``
``/admin/reassign_partitions``         data     ``ZkPartitionReassignment`` (``created``)
``/admin/preferred_replica_election``  data     ``ZkPreferredReplicaElection``
=====================================  =======  ==========================================

Invariants: a callback only enqueues (the event task does the work); there is one
callable per (kind, path), kept across resignations, so a watch registered twice with
it is delivered once and re-reading never multiplies events; connection-state
notifications (``EventType.NONE``) enqueue nothing.
"""
from __future__ import annotations

from typing import Callable

from kafkapy.controller import events as ev
from kafkapy.metadata import paths
from kafkapy.metadata.store import EventType, MetadataStore, NoNodeError

Watch = Callable[[object], None]


class ControllerWatches:
    def __init__(self, enqueue: Callable[[ev.ControllerEvent], None]) -> None:
        self._enqueue = enqueue
        self._callbacks: dict[tuple[str, str], Watch] = {}

    def controller(self) -> Watch:
        return self._watch("data", paths.CONTROLLER, lambda e: (
            ev.Reelect() if e.type == EventType.DELETED else ev.ControllerChange()))

    def broker_ids(self) -> Watch:
        return self._watch("child", paths.BROKER_IDS, lambda e: ev.BrokerChange())

    def broker(self, broker_id: int) -> Watch:
        return self._watch("data", paths.broker_path(broker_id),
                           lambda e: ev.BrokerModification(broker_id=broker_id))

    def topics(self) -> Watch:
        return self._watch("child", paths.BROKER_TOPICS, lambda e: ev.TopicChange())

    def topic(self, topic: str) -> Watch:
        return self._watch("data", paths.topic_path(topic),
                           lambda e: ev.PartitionModifications(topic=topic))

    def delete_topics(self) -> Watch:
        return self._watch("child", paths.ADMIN_DELETE_TOPICS, lambda e: ev.TopicDeletion())

    def isr_changes(self) -> Watch:
        return self._watch("child", paths.ISR_CHANGE_NOTIFICATION,
                           lambda e: ev.IsrChangeNotification())

    def log_dir_events(self) -> Watch:
        return self._watch("child", paths.LOG_DIR_EVENT_NOTIFICATION,
                           lambda e: ev.LogDirEventNotification())

    def reassign_partitions(self) -> Watch:
        return self._watch("data", paths.ADMIN_REASSIGN_PARTITIONS,
                           lambda e: ev.ZkPartitionReassignment(
                               created=e.type == EventType.CREATED))

    def preferred_replica_election(self) -> Watch:
        return self._watch("data", paths.ADMIN_PREFERRED_REPLICA_ELECTION,
                           lambda e: ev.ZkPreferredReplicaElection())

    def _watch(self, kind: str, path: str, make_event) -> Watch:
        key = (kind, path)
        callback = self._callbacks.get(key)
        if callback is None:
            def callback(event, make_event=make_event) -> None:
                if event.type == EventType.NONE:    # connection state, not a change
                    return
                self._enqueue(make_event(event))
            self._callbacks[key] = callback
        return callback


def watched_children(store: MetadataStore, path: str, watch: Watch) -> list[str]:
    """The children of ``path``, watched; a missing ``path`` is created first."""
    try:
        return store.get_children(path, watch=watch)
    except NoNodeError:
        store.ensure_path(path)
        return store.get_children(path, watch=watch)
