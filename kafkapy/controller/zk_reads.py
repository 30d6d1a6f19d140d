"""What the active controller reads from the metadata store into its context (the
reading parts of Kafka's KafkaZkClient as the controller uses them), each read
re-arming the watch that reports the next change (``watches``).

Job: the live brokers (``/brokers/ids`` and each registration, the broker epoch being
the registration's czxid), the topics' assignments (``/brokers/topics/<t>``, with a
reassignment's adding/removing replicas), each partition's leader and ISR (its state
znode), and the children of the znodes the controller follows.

Invariants: an unreadable registration or assignment is logged and skipped (the others
are read); a topic znode without a topic id gets one written, fenced (Kafka's
processTopicIds for topics made by an old tool); a state znode that is gone removes the
partition's leadership from the context, an unreadable one leaves it; a lost store
connection propagates (the controller resigns and fails over again).
"""
from __future__ import annotations

from typing import Iterable

import structlog

from kafkapy.controller.context import ControllerContext, LiveBroker
from kafkapy.controller.watches import ControllerWatches, Watch, watched_children
from kafkapy.controller.zk_writes import ZkWrites
from kafkapy.metadata import paths
from kafkapy.metadata.store import STORE_UNAVAILABLE, MetadataStore, NoNodeError, SetDataOp
from kafkapy.metadata.topics import new_topic_id, topic_id_text
from kafkapy.protocol.topic_partition import TopicPartition

_log = structlog.get_logger("kafkapy.controller")


class ZkReads:
    def __init__(self, store: MetadataStore, ctx: ControllerContext,
                 watches: ControllerWatches, zk: ZkWrites) -> None:
        self.store = store
        self._ctx = ctx
        self.watches = watches
        self._zk = zk

    def children(self, path: str, watch: Watch) -> list[str]:
        return watched_children(self.store, path, watch)

    # -- brokers ---------------------------------------------------------------------
    def brokers(self) -> dict[int, LiveBroker]:
        """Every registered broker (with its data watch) and its epoch (czxid)."""
        out: dict[int, LiveBroker] = {}
        for child in self.children(paths.BROKER_IDS, self.watches.broker_ids()):
            broker = self.broker(int(child))
            if broker is not None:
                out[broker.broker_id] = broker
        return out

    def broker(self, broker_id: int) -> LiveBroker | None:
        path = paths.broker_path(broker_id)
        try:
            data, stat = self.store.get(path, watch=self.watches.broker(broker_id))
        except NoNodeError:
            return None
        try:
            reg = paths.decode_broker_registration(broker_id, data)
        except ValueError as e:
            _log.warning("unreadable broker registration", broker=broker_id, error=str(e))
            return None
        return LiveBroker(broker_id, tuple(reg.endpoints), reg.rack, stat.czxid,
                          dict(reg.features))

    # -- topics ----------------------------------------------------------------------
    def topic_names(self) -> list[str]:
        return self.children(paths.BROKER_TOPICS, self.watches.topics())

    def topics_into_context(self, topics: Iterable[str]) -> dict[str, dict[int, list[int]]]:
        """Assignments (with a data watch per topic) into the context; a topic without
        an id gets one written.  Returns what was read."""
        read: dict[str, dict[int, list[int]]] = {}
        for topic in topics:
            got = self.topic(topic)
            if got is None:
                continue
            topic_id, parts, assignment = got
            self._ctx.add_topic(topic, topic_id, parts, dict(assignment.adding_replicas),
                                dict(assignment.removing_replicas))
            read[topic] = parts
        return read

    def topic(self, topic: str):
        """(topic id, partition -> RS, the decoded ``TopicAssignment``) or None."""
        path = paths.topic_path(topic)
        try:
            data, stat = self.store.get(path, watch=self.watches.topic(topic))
            assignment = paths.decode_topic_assignment(data, topic)
        except NoNodeError:
            return None
        except ValueError as e:
            _log.warning("unreadable topic assignment", topic=topic, error=str(e))
            return None
        topic_id = assignment.topic_id
        if topic_id is None:
            topic_id = self._write_topic_id(topic, assignment, stat.version)
        return topic_id, {p: list(r) for p, r in assignment.partitions.items()}, assignment

    def _write_topic_id(self, topic: str, assignment, version: int) -> str:
        """Kafka's processTopicIds: a topic created without an id (an old tool) gets one."""
        topic_id = topic_id_text(new_topic_id())
        payload = paths.encode_topic_assignment(assignment.partitions, topic_id,
                                                assignment.adding_replicas,
                                                assignment.removing_replicas)
        self._zk.write_fenced(SetDataOp(paths.topic_path(topic), payload, version))
        _log.info("assigned topic id", topic=topic, topic_id=topic_id)
        return topic_id

    # -- partition states --------------------------------------------------------------
    def leader_and_isr_into_context(self, partitions: Iterable[TopicPartition]) -> None:
        """Kafka's updateLeaderAndIsrCache: the state znodes into the context."""
        partitions = list(partitions)
        got = self._zk.get_partition_states(partitions)
        for tp, li in got.items():
            if isinstance(li, STORE_UNAVAILABLE):
                raise li        # the event is retried on a new failover
            if li is None:
                self._ctx.leadership.pop(tp, None)
            elif isinstance(li, Exception):
                topic, partition = tp
                _log.warning("unreadable partition state", partition=f"{topic}-{partition}",
                             error=str(li))
            else:
                self._ctx.put_leadership(tp, li)
