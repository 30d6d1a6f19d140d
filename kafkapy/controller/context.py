"""The active controller's view of the cluster (Kafka's ``ControllerContext``).

Job: hold what the controller knows -- its epoch, the live brokers (with their
endpoints, rack and broker epoch = czxid of ``/brokers/ids/N``), the topics with
their ids and replica assignments, each partition's leader/ISR as last written to
its state znode (with that znode's zk version), the partition and replica state
machines' states, and the topic-deletion bookkeeping -- and answer the queries the
state machines and the controller need.

Invariants:
 - changed only from the controller's event-queue task (no locks);
 - ``assignments[t][p]`` lists replicas in assignment order (first = preferred): the
   full replica set RS, which during a reassignment is TRS followed by the rest of ORS;
   ``reassignment_changes[(t, p)]`` holds that partition's adding (AR) and removing
   (RR) replicas while it is being reassigned (Kafka's ``ReplicaAssignment``; no entry
   = none);
 - ``leadership[(t, p)]`` is the ``LeaderAndIsr`` the state znode holds (its
   ``partition_epoch`` = the znode's zk version); a partition without a state znode
   has no entry;
 - ``partition_states`` / ``replica_states`` hold only partitions/replicas the state
   machines have seen; a missing entry means NonExistent;
 - ``clear()`` empties everything: a resigned controller keeps no view.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Iterable

from kafkapy.metadata.leader_and_isr import LeaderAndIsr
from kafkapy.metadata.paths import EndPoint
from kafkapy.protocol.topic_partition import TopicPartition

#: A replica of a partition: ((topic, partition), broker id).
PartitionAndReplica = tuple[TopicPartition, int]


class PartitionStateName(enum.Enum):
    """The partition state machine's states (Kafka's ``PartitionStateName`` trait of
    PartitionStateMachine.scala; named apart from the metadata cache's per-partition
    record, ``kafkapy.metadata.cache.PartitionStateName``)."""
    NEW = "NewPartition"
    ONLINE = "OnlinePartition"
    OFFLINE = "OfflinePartition"
    NON_EXISTENT = "NonExistentPartition"


class ReplicaState(enum.Enum):
    """Kafka's ReplicaState (ReplicaStateMachine.scala)."""
    NEW = "NewReplica"
    ONLINE = "OnlineReplica"
    OFFLINE = "OfflineReplica"
    DELETION_STARTED = "ReplicaDeletionStarted"
    DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
    DELETION_INELIGIBLE = "ReplicaDeletionIneligible"
    NON_EXISTENT = "NonExistentReplica"


@dataclass(frozen=True, slots=True)
class ReplicaAssignment:
    """Kafka's ``ReplicaAssignment``: the full replica set RS and, while a reassignment
    runs, the replicas being added (AR = TRS - ORS) and removed (RR = ORS - TRS)."""
    replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()

    @staticmethod
    def of(replicas: Iterable[int], adding: Iterable[int] = (),
           removing: Iterable[int] = ()) -> "ReplicaAssignment":
        return ReplicaAssignment(tuple(replicas), tuple(adding), tuple(removing))

    @property
    def origin_replicas(self) -> list[int]:
        """ORS: RS without the replicas being added."""
        return [r for r in self.replicas if r not in self.adding_replicas]

    @property
    def target_replicas(self) -> list[int]:
        """TRS: RS without the replicas being removed."""
        return [r for r in self.replicas if r not in self.removing_replicas]

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding_replicas or self.removing_replicas)

    def reassign_to(self, target: Iterable[int]) -> "ReplicaAssignment":
        """RS = TRS then the rest of ORS (first occurrences), AR = RS - ORS, RR = RS - TRS."""
        target = list(target)
        origin = self.origin_replicas
        full = list(dict.fromkeys(target + origin))
        return ReplicaAssignment.of(full, [r for r in full if r not in origin],
                                    [r for r in full if r not in target])

    def remove_replica(self, replica: int) -> "ReplicaAssignment":
        return ReplicaAssignment.of([r for r in self.replicas if r != replica],
                                    [r for r in self.adding_replicas if r != replica],
                                    [r for r in self.removing_replicas if r != replica])

    def __str__(self) -> str:
        return (f"ReplicaAssignment(replicas={_csv(self.replicas)}, "
                f"addingReplicas={_csv(self.adding_replicas)}, "
                f"removingReplicas={_csv(self.removing_replicas)})")


def _csv(ids: Iterable[int]) -> str:
    return ",".join(str(i) for i in ids)


@dataclass(slots=True)
class LiveBroker:
    """A registered broker as the controller saw ``/brokers/ids/N``."""
    broker_id: int
    endpoints: tuple[EndPoint, ...]
    rack: str | None
    epoch: int              # czxid of the registration znode
    features: dict[str, tuple[int, int]] = field(default_factory=dict)

    def endpoint(self, listener_name: str) -> EndPoint | None:
        for ep in self.endpoints:
            if ep.listener_name == listener_name:
                return ep
        return None


@dataclass(slots=True)
class ControllerContext:
    epoch: int = 0
    epoch_zk_version: int = -1
    live_brokers: dict[int, LiveBroker] = field(default_factory=dict)
    shutting_down_broker_ids: set[int] = field(default_factory=set)
    topic_ids: dict[str, str] = field(default_factory=dict)       # name -> base64 text id
    assignments: dict[str, dict[int, list[int]]] = field(default_factory=dict)
    leadership: dict[TopicPartition, LeaderAndIsr] = field(default_factory=dict)
    partition_states: dict[TopicPartition, PartitionStateName] = field(default_factory=dict)
    replica_states: dict[PartitionAndReplica, ReplicaState] = field(default_factory=dict)
    topics_to_be_deleted: set[str] = field(default_factory=set)
    topics_with_deletion_started: set[str] = field(default_factory=set)
    topics_ineligible_for_deletion: set[str] = field(default_factory=set)
    #: Partitions being reassigned (Kafka's partitionsBeingReassigned).
    partitions_being_reassigned: set[TopicPartition] = field(default_factory=set)
    #: (t, p) -> (adding, removing) replicas of a partition being reassigned.
    reassignment_changes: dict[TopicPartition, tuple[tuple[int, ...], tuple[int, ...]]] = \
        field(default_factory=dict)
    #: broker id -> its partitions whose log dir failed (KAFKA_STORAGE_ERROR in a
    #: LeaderAndIsr response); such replicas count as offline.
    replicas_on_offline_dirs: dict[int, set[TopicPartition]] = field(default_factory=dict)

    # -- lifecycle --------------------------------------------------------------
    def clear(self) -> None:
        """Forget everything (resignation / session expiry)."""
        self.epoch = 0
        self.epoch_zk_version = -1
        for d in (self.live_brokers, self.topic_ids, self.assignments, self.leadership,
                  self.partition_states, self.replica_states, self.replicas_on_offline_dirs,
                  self.reassignment_changes):
            d.clear()
        for s in (self.shutting_down_broker_ids, self.topics_to_be_deleted,
                  self.topics_with_deletion_started, self.topics_ineligible_for_deletion,
                  self.partitions_being_reassigned):
            s.clear()

    # -- brokers ----------------------------------------------------------------
    def live_broker_ids(self) -> set[int]:
        """Live brokers not shutting down (Kafka's ``liveBrokerIds``)."""
        return set(self.live_brokers) - self.shutting_down_broker_ids

    def live_or_shutting_down_broker_ids(self) -> set[int]:
        return set(self.live_brokers)

    def broker_epoch(self, broker_id: int) -> int:
        b = self.live_brokers.get(broker_id)
        return b.epoch if b is not None else -1

    def add_live_broker(self, broker: LiveBroker) -> None:
        self.live_brokers[broker.broker_id] = broker

    def remove_live_brokers(self, ids: Iterable[int]) -> None:
        for b in ids:
            self.live_brokers.pop(b, None)
            self.shutting_down_broker_ids.discard(b)

    # -- topics and assignments -------------------------------------------------
    def all_topics(self) -> set[str]:
        return set(self.assignments)

    def topic_names_by_id(self) -> dict[str, str]:
        """Topic id (base64 text) -> topic name."""
        return {text: name for name, text in self.topic_ids.items()}

    def add_topic(self, topic: str, topic_id: str | None,
                  partitions: dict[int, list[int]],
                  adding: dict[int, list[int]] | None = None,
                  removing: dict[int, list[int]] | None = None) -> None:
        """The topic's assignment as its znode holds it (with a reassignment's AR/RR)."""
        if topic_id is not None:
            self.topic_ids[topic] = topic_id
        for p, r in partitions.items():
            self.update_full_assignment(TopicPartition(topic, p), ReplicaAssignment.of(
                r, (adding or {}).get(p, ()), (removing or {}).get(p, ())))

    def remove_topic(self, topic: str) -> None:
        """Forget a deleted topic and every state of its partitions and replicas."""
        parts = self.assignments.pop(topic, {})
        self.topic_ids.pop(topic, None)
        for p, replicas in parts.items():
            tp = (topic, p)
            self.leadership.pop(tp, None)
            self.partition_states.pop(tp, None)
            for r in replicas:
                self.replica_states.pop((tp, r), None)
        # replicas whose assignment changed under us
        for key in [k for k in self.replica_states if k[0][0] == topic]:
            del self.replica_states[key]
        for tp in [tp for tp in self.reassignment_changes if tp[0] == topic]:
            del self.reassignment_changes[tp]
        self.partitions_being_reassigned.difference_update(
            [tp for tp in self.partitions_being_reassigned if tp[0] == topic])
        self.topics_to_be_deleted.discard(topic)
        self.topics_with_deletion_started.discard(topic)
        self.topics_ineligible_for_deletion.discard(topic)

    def replicas(self, tp: TopicPartition) -> list[int]:
        """The partition's assigned replicas (empty if unknown)."""
        return list(self.assignments.get(tp[0], {}).get(tp[1], ()))

    def update_assignment(self, tp: TopicPartition, replicas: list[int]) -> None:
        """RS = ``replicas``, no reassignment (Kafka's ``ReplicaAssignment(replicas)``)."""
        self.update_full_assignment(tp, ReplicaAssignment.of(replicas))

    def full_assignment(self, tp: TopicPartition) -> ReplicaAssignment:
        """Kafka's ``partitionFullReplicaAssignment`` (empty if unknown)."""
        replicas = self.assignments.get(tp[0], {}).get(tp[1], ())
        adding, removing = self.reassignment_changes.get(tp, ((), ()))
        return ReplicaAssignment(tuple(replicas), adding, removing)

    def update_full_assignment(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        """Kafka's ``updatePartitionFullReplicaAssignment``."""
        self.assignments.setdefault(tp[0], {})[tp[1]] = list(assignment.replicas)
        if assignment.is_being_reassigned:
            self.reassignment_changes[tp] = (tuple(assignment.adding_replicas),
                                             tuple(assignment.removing_replicas))
        else:
            self.reassignment_changes.pop(tp, None)

    def full_assignments_for_topic(self, topic: str) -> dict[int, ReplicaAssignment]:
        return {p: self.full_assignment(TopicPartition(topic, p))
                for p in sorted(self.assignments.get(topic, {}))}

    def partitions_for_topic(self, topic: str) -> list[TopicPartition]:
        return [TopicPartition(topic, p) for p in sorted(self.assignments.get(topic, {}))]

    def all_partitions(self) -> list[TopicPartition]:
        return [TopicPartition(t, p) for t, parts in self.assignments.items()
                for p in sorted(parts)]

    def partition_count(self) -> int:
        return sum(len(parts) for parts in self.assignments.values())

    def replicas_for_topic(self, topic: str) -> list[PartitionAndReplica]:
        return [(TopicPartition(topic, p), r)
                for p, reps in sorted(self.assignments.get(topic, {}).items())
                for r in reps]

    def all_replicas(self) -> list[PartitionAndReplica]:
        return [(TopicPartition(t, p), r) for t, parts in self.assignments.items()
                for p, reps in sorted(parts.items()) for r in reps]

    def partitions_on_broker(self, broker_id: int) -> list[TopicPartition]:
        return [TopicPartition(t, p) for t, parts in self.assignments.items()
                for p, reps in sorted(parts.items()) if broker_id in reps]

    def replicas_on_brokers(self, broker_ids: Iterable[int]) -> list[PartitionAndReplica]:
        ids = set(broker_ids)
        return [(TopicPartition(t, p), r) for t, parts in self.assignments.items()
                for p, reps in sorted(parts.items()) for r in reps if r in ids]

    def partitions_led_by(self, broker_id: int) -> list[TopicPartition]:
        return [tp for tp, li in self.leadership.items() if li.leader == broker_id]

    def partition_leadership(self, tp: TopicPartition) -> LeaderAndIsr | None:
        return self.leadership.get(tp)

    def put_leadership(self, tp: TopicPartition, leader_isr: LeaderAndIsr) -> None:
        self.leadership[tp] = leader_isr

    # -- replica liveness -------------------------------------------------------
    def is_replica_online(self, broker_id: int, tp: TopicPartition,
                          include_shutting_down: bool = False) -> bool:
        """Kafka's ``isReplicaOnline``: the broker is live (and, unless asked, not
        shutting down) and the replica's log dir has not failed."""
        if broker_id not in self.live_brokers:
            return False
        if not include_shutting_down and broker_id in self.shutting_down_broker_ids:
            return False
        return tp not in self.replicas_on_offline_dirs.get(broker_id, ())

    def online_and_offline_replicas(self) -> tuple[set[PartitionAndReplica],
                                                   set[PartitionAndReplica]]:
        online: set[PartitionAndReplica] = set()
        offline: set[PartitionAndReplica] = set()
        for replica in self.all_replicas():
            tp, b = replica
            (online if self.is_replica_online(b, tp, include_shutting_down=True)
             else offline).add(replica)
        return online, offline

    # -- state machine states ---------------------------------------------------
    def partition_state(self, tp: TopicPartition) -> PartitionStateName:
        return self.partition_states.get(tp, PartitionStateName.NON_EXISTENT)

    def put_partition_state(self, tp: TopicPartition, state: PartitionStateName) -> None:
        self.partition_states[tp] = state

    def replica_state(self, replica: PartitionAndReplica) -> ReplicaState:
        return self.replica_states.get(replica, ReplicaState.NON_EXISTENT)

    def put_replica_state(self, replica: PartitionAndReplica, state: ReplicaState) -> None:
        self.replica_states[replica] = state

    def replicas_in_state(self, topic: str, state: ReplicaState) -> set[PartitionAndReplica]:
        return {r for r in self.replicas_for_topic(topic) if self.replica_state(r) is state}

    def are_all_replicas_in_state(self, topic: str, state: ReplicaState) -> bool:
        return all(self.replica_state(r) is state for r in self.replicas_for_topic(topic))

    def is_any_replica_in_state(self, topic: str, state: ReplicaState) -> bool:
        return any(self.replica_state(r) is state for r in self.replicas_for_topic(topic))

    # -- topic deletion ---------------------------------------------------------
    def queue_topic_deletion(self, topics: Iterable[str]) -> None:
        self.topics_to_be_deleted.update(topics)

    def is_topic_queued_for_deletion(self, topic: str) -> bool:
        return topic in self.topics_to_be_deleted

    def is_topic_deletion_in_progress(self, topic: str) -> bool:
        return topic in self.topics_with_deletion_started

    def is_partition_being_deleted(self, tp: TopicPartition) -> bool:
        return tp[0] in self.topics_to_be_deleted

    # -- gauges (Kafka's KafkaController metrics, read at scrape time) ------------------
    def offline_partition_count(self) -> int:
        """OFFLINE partitions of topics not queued for deletion (Kafka's offlinePartitionCount)."""
        deleting = self.topics_to_be_deleted
        return sum(1 for (topic, _), state in self.partition_states.items()
                   if state is PartitionStateName.OFFLINE and topic not in deleting)

    def preferred_replica_imbalance_count(self) -> int:
        """Partitions of topics not queued for deletion whose leader is not their preferred
        (first) replica (Kafka's preferredReplicaImbalanceCount)."""
        deleting = self.topics_to_be_deleted
        imbalance = 0
        for topic, assignment in self.assignments.items():
            if topic in deleting:
                continue
            for index, replicas in assignment.items():
                led = self.leadership.get((topic, index))
                if replicas and led is not None and led.leader != replicas[0]:
                    imbalance += 1
        return imbalance
