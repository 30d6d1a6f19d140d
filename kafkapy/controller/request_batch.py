"""The controller's request batch (Kafka 3.9's ``AbstractControllerBrokerRequestBatch`` /
``ControllerBrokerRequestBatch``, ControllerChannelManager.scala).

Job: collect, during one state-machine call, what each broker must be told --
LeaderAndIsr partition states, UpdateMetadata partitions and recipients, StopReplica
partitions -- and then build one request of each kind per broker (LeaderAndIsr v7,
UpdateMetadata v8, StopReplica v4: Kafka 3.9's versions at IBP 3.9) and hand them to
the channel.

Invariants (Kafka's):
 - a batch is opened with ``new_batch()`` (which refuses a batch still holding
   unsent work) and emptied by ``send()``;
 - a LeaderAndIsr partition state carries the full replica set RS and, during a
   reassignment, its adding and removing replicas;
 - adding a LeaderAndIsr partition state also adds UpdateMetadata for that partition
   to every live or shutting-down broker; ``is_new`` sticks once set for a partition;
   ``delete`` on a StopReplica partition sticks once set;
 - requests go only to live (or shutting-down) brokers, each with that broker's
   epoch; per broker the order is LeaderAndIsr, UpdateMetadata, StopReplica (the
   channel keeps one FIFO per broker);
 - UpdateMetadata carries each partition's state as the context had it when it was
   added (``leader = -2`` for topics queued for deletion) with its offline replicas,
   and the live brokers (at send time) with all their endpoints and racks.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable

import structlog

from kafkapy.controller.context import ReplicaAssignment
from kafkapy.controller.log_text import tp_text
from kafkapy.metadata.leader_and_isr import LEADER_DURING_DELETE, LeaderAndIsr
from kafkapy.metadata.topics import parse_topic_id
from kafkapy.protocol.inter_broker import (
    LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest)
from kafkapy.protocol.topic_partition import TopicPartition

if TYPE_CHECKING:
    from kafkapy.controller.context import ControllerContext

_log = structlog.get_logger("kafkapy.controller.request_batch")

LEADER_AND_ISR_VERSION = 7
UPDATE_METADATA_VERSION = 8
STOP_REPLICA_VERSION = 4

#: ``LeaderAndIsr.EpochDuringDelete``: the StopReplica leader epoch of a partition whose
#: topic is being deleted.
EPOCH_DURING_DELETE = -2
#: ``LeaderAndIsr.NoEpoch``
NO_EPOCH = -1

#: ``SecurityProtocol.id``
SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}

_ZERO_UUID = uuid.UUID(int=0)

_LAI = LeaderAndIsrRequest[LEADER_AND_ISR_VERSION]
_UM = UpdateMetadataRequest[UPDATE_METADATA_VERSION]
_SR = StopReplicaRequest[STOP_REPLICA_VERSION]


@dataclass(slots=True)
class BatchCallbacks:
    """What the controller wants to hear about responses (Kafka sends these as
    controller events: LeaderAndIsrResponseReceived, UpdateMetadataResponseReceived,
    TopicDeletionStopReplicaResponseReceived).  Called on the loop by the channel;
    they should only enqueue events.

    ``on_stop_replica_deletion(broker_id, error_code, partition_errors)`` is called
    only for partitions sent with ``delete=True`` whose topic is queued for deletion,
    ``partition_errors`` mapping (topic, partition) -> error code.
    """
    on_leader_and_isr_response: Callable[[int, Any], None] | None = None
    on_update_metadata_response: Callable[[int, Any], None] | None = None
    on_stop_replica_deletion: Callable[[int, int, "dict[TopicPartition, int]"], None] | None = None


class BatchStateError(RuntimeError):
    """``new_batch()`` on a batch that still holds unsent requests (Kafka's
    IllegalStateException): a previous state change failed half way."""


class ControllerBrokerRequestBatch:
    """Collects controller-to-broker requests; see the module docstring.

    ``channel`` has ``send(node_id, request, callback)``; ``node_id`` is the controller's
    broker id; ``inter_broker_listener`` names the endpoint given for live leaders.
    """

    def __init__(self, ctx: "ControllerContext", channel: Any, node_id: int,
                 inter_broker_listener: str = "PLAINTEXT",
                 callbacks: BatchCallbacks | None = None) -> None:
        self._ctx = ctx
        self.channel = channel
        self._node_id = node_id
        self._listener = inter_broker_listener
        self.callbacks = callbacks or BatchCallbacks()
        self._leader_and_isr: dict[int, dict[TopicPartition, Any]] = {}
        self._stop_replica: dict[int, dict[TopicPartition, tuple[int, bool]]] = {}
        self._update_metadata_brokers: set[int] = set()
        self._update_metadata_partitions: dict[TopicPartition, Any] = {}
        self._errors: list[BaseException] = []

    # -- lifecycle ----------------------------------------------------------------
    def new_batch(self) -> None:
        """Start a batch; raises ``BatchStateError`` if the last one was not sent."""
        if self._leader_and_isr:
            raise BatchStateError("controller to broker state change requests batch is not "
                                  f"empty while creating a new one: LeaderAndIsr to "
                                  f"{sorted(self._leader_and_isr)} might be lost")
        if self._stop_replica:
            raise BatchStateError("controller to broker state change requests batch is not "
                                  f"empty while creating a new one: StopReplica to "
                                  f"{sorted(self._stop_replica)} might be lost")
        if self._update_metadata_brokers:
            raise BatchStateError("controller to broker state change requests batch is not "
                                  f"empty while creating a new one: UpdateMetadata to "
                                  f"{sorted(self._update_metadata_brokers)} might be lost")

    def clear(self) -> None:
        """Drop everything collected (after a failed state change, on resignation)."""
        self._leader_and_isr.clear()
        self._stop_replica.clear()
        self._update_metadata_brokers.clear()
        self._update_metadata_partitions.clear()

    @property
    def is_empty(self) -> bool:
        return not (self._leader_and_isr or self._stop_replica or self._update_metadata_brokers)

    # -- collecting ---------------------------------------------------------------
    def add_leader_and_isr(self, brokers: Iterable[int], tp: "TopicPartition",
                           leader_isr: "LeaderAndIsr", replicas: "ReplicaAssignment | Iterable[int]",
                           is_new: bool) -> None:
        """Tell ``brokers`` the partition's leader/ISR (Kafka's
        addLeaderAndIsrRequestForBrokers); adds UpdateMetadata for ``tp`` to all live
        or shutting-down brokers.  ``replicas`` is the full assignment (RS with a
        reassignment's adding/removing replicas) or a plain replica list."""
        adding: list[int] = []
        removing: list[int] = []
        if isinstance(replicas, ReplicaAssignment):
            adding = [int(r) for r in replicas.adding_replicas]
            removing = [int(r) for r in replicas.removing_replicas]
            replicas = replicas.replicas
        replicas = [int(r) for r in replicas]
        for b in brokers:
            if b < 0:
                continue
            per_broker = self._leader_and_isr.setdefault(b, {})
            prior = per_broker.get(tp)
            per_broker[tp] = _LAI.LeaderAndIsrPartitionState(
                partition_index=tp[1], controller_epoch=leader_isr.controller_epoch,
                leader=leader_isr.leader, leader_epoch=leader_isr.leader_epoch,
                isr=list(leader_isr.isr), partition_epoch=leader_isr.partition_epoch,
                replicas=replicas, adding_replicas=adding, removing_replicas=removing,
                is_new=bool(is_new or (prior is not None and prior.is_new)),
                leader_recovery_state=leader_isr.leader_recovery_state)
        self.add_update_metadata(self._ctx.live_or_shutting_down_broker_ids(), [tp])

    def add_stop_replica(self, brokers: Iterable[int], tp: "TopicPartition",
                         delete: bool) -> None:
        """Stop (and with ``delete`` remove) the replica on ``brokers`` (Kafka's
        addStopReplicaRequestForBrokers).  The leader epoch sent is -2 while the
        topic is queued for deletion, else the known one (-1 if none)."""
        if self._ctx.is_topic_queued_for_deletion(tp[0]):
            epoch = EPOCH_DURING_DELETE
        else:
            li = self._ctx.partition_leadership(tp)
            epoch = li.leader_epoch if li is not None else NO_EPOCH
        for b in brokers:
            if b < 0:
                continue
            per_broker = self._stop_replica.setdefault(b, {})
            prior = per_broker.get(tp)
            per_broker[tp] = (epoch, bool(delete or (prior is not None and prior[1])))

    def add_update_metadata(self, brokers: Iterable[int],
                            partitions: "Iterable[TopicPartition]" = ()) -> None:
        """Send UpdateMetadata to ``brokers`` including ``partitions`` (Kafka's
        addUpdateMetadataRequestForBrokers).  Partitions without a leader/ISR in the
        context are left out; brokers with no partitions still get the live brokers."""
        self._update_metadata_brokers.update(b for b in brokers if b >= 0)
        for tp in partitions:
            state = self._update_metadata_state(tp)
            if state is not None:
                self._update_metadata_partitions[tp] = state

    def _update_metadata_state(self, tp: "TopicPartition") -> Any:
        li = self._ctx.partition_leadership(tp)
        if li is None:
            _log.debug("leader not yet assigned, no UpdateMetadata for it", partition=tp_text(tp))
            return None
        replicas = self._ctx.replicas(tp)
        offline = [r for r in replicas if not self._ctx.is_replica_online(r, tp)]
        if self._ctx.is_topic_queued_for_deletion(tp[0]):
            # LeaderAndIsr.duringDelete(isr): initial leader and partition epochs.
            leader, leader_epoch, partition_epoch = LEADER_DURING_DELETE, 0, 0
        else:
            leader, leader_epoch, partition_epoch = li.leader, li.leader_epoch, li.partition_epoch
        return _UM.UpdateMetadataTopicState.UpdateMetadataPartitionState(
            partition_index=tp[1], controller_epoch=li.controller_epoch, leader=leader,
            leader_epoch=leader_epoch, isr=list(li.isr), zk_version=partition_epoch,
            replicas=list(replicas), offline_replicas=offline)

    # -- sending --------------------------------------------------------------------
    def send(self) -> None:
        """Build and send everything collected, then empty the batch (Kafka's
        sendRequestsToBrokers)."""
        cbs = self.callbacks
        self._errors = []
        try:
            self._send_leader_and_isr(cbs)
            self._send_update_metadata(cbs)
            self._send_stop_replica(cbs)
        finally:
            self.clear()
        if self._errors:
            # Every other broker was still told; the caller fails the state change.
            raise self._errors[0]

    def _send_one(self, broker: int, request: Any, callback: Callable[[Any], None]) -> None:
        """Hand one request to the channel; a failure (e.g. the in-process delivery to
        this broker raising) is kept so the remaining brokers still get theirs."""
        try:
            self.channel.send(broker, request, callback)
        except Exception as e:          # noqa: BLE001 - re-raised by send()
            _log.exception("failed to send controller request", broker=broker,
                           api_key=request.API_KEY)
            self._errors.append(e)

    def _topic_id(self, topic: str) -> uuid.UUID:
        text = self._ctx.topic_ids.get(topic)
        if not text:
            return _ZERO_UUID
        try:
            return parse_topic_id(text)
        except ValueError:
            return _ZERO_UUID

    def _send_leader_and_isr(self, cbs: BatchCallbacks) -> None:
        live = self._ctx.live_or_shutting_down_broker_ids()
        for broker, states in self._leader_and_isr.items():
            if broker not in live:
                continue
            by_topic: dict[str, list] = {}
            leader_ids: set[int] = set()
            for (topic, _), state in states.items():
                by_topic.setdefault(topic, []).append(state)
                leader_ids.add(state.leader)
            live_leaders = []
            for b in sorted(leader_ids & live):
                ep = self._ctx.live_brokers[b].endpoint(self._listener)
                if ep is not None:
                    live_leaders.append(_LAI.LeaderAndIsrLiveLeader(
                        broker_id=b, host_name=ep.host or "", port=ep.port))
            request = _LAI(
                controller_id=self._node_id, is_k_raft_controller=False,
                controller_epoch=self._ctx.epoch, broker_epoch=self._ctx.broker_epoch(broker),
                type=0,
                topic_states=[_LAI.LeaderAndIsrTopicState(
                    topic_name=t, topic_id=self._topic_id(t), partition_states=ps)
                    for t, ps in by_topic.items()],
                live_leaders=live_leaders)
            _log.info("sending LeaderAndIsr", broker=broker, partitions=len(states),
                      become_leader=sum(1 for s in states.values() if s.leader == broker))
            self._send_one(broker, request,
                           _response_callback(broker, cbs.on_leader_and_isr_response))

    def _live_brokers_payload(self) -> list:
        out = []
        for b in sorted(self._ctx.live_or_shutting_down_broker_ids()):
            broker = self._ctx.live_brokers[b]
            out.append(_UM.UpdateMetadataBroker(
                id=b,
                endpoints=[_UM.UpdateMetadataBroker.UpdateMetadataEndpoint(
                    port=ep.port, host=ep.host or "", listener=ep.listener_name,
                    security_protocol=SECURITY_PROTOCOL_IDS.get(ep.security_protocol, 0))
                    for ep in broker.endpoints],
                rack=broker.rack))
        return out

    def _send_update_metadata(self, cbs: BatchCallbacks) -> None:
        live = self._ctx.live_or_shutting_down_broker_ids()
        targets = sorted(self._update_metadata_brokers & live)
        if not targets:
            return
        by_topic: dict[str, list] = {}
        for (topic, _), state in self._update_metadata_partitions.items():
            by_topic.setdefault(topic, []).append(state)
        live_brokers = self._live_brokers_payload()
        topic_states = [_UM.UpdateMetadataTopicState(topic_name=t, topic_id=self._topic_id(t),
                                                     partition_states=ps)
                        for t, ps in by_topic.items()]
        _log.info("sending UpdateMetadata", brokers=targets,
                  partitions=len(self._update_metadata_partitions))
        for broker in targets:
            request = _UM(controller_id=self._node_id, is_k_raft_controller=False, type=0,
                          controller_epoch=self._ctx.epoch,
                          broker_epoch=self._ctx.broker_epoch(broker),
                          topic_states=topic_states, live_brokers=live_brokers)
            self._send_one(broker, request,
                           _response_callback(broker, cbs.on_update_metadata_response))

    def _send_stop_replica(self, cbs: BatchCallbacks) -> None:
        live = self._ctx.live_or_shutting_down_broker_ids()
        for broker, states in self._stop_replica.items():
            if broker not in live:
                continue
            by_topic: dict[str, list] = {}
            for (topic, partition), (epoch, delete) in states.items():
                by_topic.setdefault(topic, []).append(
                    _SR.StopReplicaTopicState.StopReplicaPartitionState(
                        partition_index=partition, leader_epoch=epoch, delete_partition=delete))
            request = _SR(controller_id=self._node_id, is_k_raft_controller=False,
                          controller_epoch=self._ctx.epoch,
                          broker_epoch=self._ctx.broker_epoch(broker),
                          topic_states=[_SR.StopReplicaTopicState(topic_name=t, partition_states=ps)
                                        for t, ps in by_topic.items()])
            _log.info("sending StopReplica", broker=broker, partitions=len(states))
            deleted = {tp for tp, (_, delete) in states.items() if delete}
            self._send_one(broker, request, self._stop_replica_callback(broker, deleted, cbs))

    def _stop_replica_callback(self, broker: int, deleted: "set[TopicPartition]",
                               cbs: BatchCallbacks) -> Callable[[Any], None]:
        """Kafka's responseCallback: report the deleted partitions of topics still
        being deleted to the topic deletion manager (through the controller)."""
        def on_response(response: Any) -> None:
            if response is None or cbs.on_stop_replica_deletion is None:
                return
            errors: dict = {}
            for pe in response.partition_errors or ():
                tp = (pe.topic_name, pe.partition_index)
                if tp in deleted and self._ctx.is_topic_deletion_in_progress(tp[0]):
                    errors[tp] = pe.error_code
            if errors:
                cbs.on_stop_replica_deletion(broker, response.error_code, errors)
        return on_response


def _response_callback(broker: int, cb: Callable[[int, Any], None] | None
                       ) -> Callable[[Any], None]:
    def on_response(response: Any) -> None:
        if cb is not None and response is not None:
            cb(broker, response)
    return on_response
