"""What exists only while this broker is the active controller: the parts a failover
builds and a resignation drops, over the one ``ControllerContext``.

``ControllerMachinery`` holds the channel to every broker (``TrackedChannel``), the
request batch, the fenced znode writes and the store reads, the replica and partition
state machines, topic deletion and partition reassignment; each capability of the
controller (``broker_changes``, ``topic_changes``, ``notifications``,
``alter_partition``, ``elect_leaders``, ``leader_rebalance``, ``controlled_shutdown``,
``failover``) works through it.

Invariants: built by ``build_machinery`` at each failover, after the election and the
``/feature`` set-up; used only from the controller's event task; ``close`` shuts the
state machines and the channel, after which nothing of it is used again (the next
failover builds anew).
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Callable, Iterable

import structlog

from kafkapy.controller import events as ev
from kafkapy.controller.channel import ControllerChannelManager
from kafkapy.controller.context import ControllerContext, LiveBroker
from kafkapy.controller.partition_state_machine import PartitionStateMachine
from kafkapy.controller.reassignment import PartitionReassignments
from kafkapy.controller.replica_state_machine import ReplicaStateMachine
from kafkapy.controller.request_batch import BatchCallbacks, ControllerBrokerRequestBatch
from kafkapy.controller.topic_deletion import ControllerDeletionClient, TopicDeletionManager
from kafkapy.controller.tracked_channel import TrackedChannel
from kafkapy.controller.watches import ControllerWatches
from kafkapy.controller.zk_reads import ZkReads
from kafkapy.controller.zk_writes import ZkWrites
from kafkapy.metadata.store import MetadataStore
from kafkapy.protocol.topic_partition import TopicPartition

_log = structlog.get_logger("kafkapy.controller")


@dataclass(slots=True)
class ControllerMachinery:
    ctx: ControllerContext
    inter_broker_listener: str
    channel: TrackedChannel
    batch: ControllerBrokerRequestBatch
    zk: ZkWrites
    reads: ZkReads
    rsm: ReplicaStateMachine
    psm: PartitionStateMachine
    deletion: TopicDeletionManager
    reassign: PartitionReassignments

    def send_update_metadata(self, brokers: Iterable[int],
                             partitions: Iterable[TopicPartition] = ()) -> None:
        """UpdateMetadata for ``partitions`` (none: brokers only) to ``brokers``."""
        self.batch.new_batch()
        self.batch.add_update_metadata(list(brokers), list(partitions))
        self.batch.send()

    def update_metadata_everywhere(self, partitions: Iterable[TopicPartition] = ()) -> None:
        """UpdateMetadata to every live broker, those shutting down included."""
        self.send_update_metadata(sorted(self.ctx.live_or_shutting_down_broker_ids()),
                                  partitions)

    def add_to_channel(self, broker: LiveBroker) -> None:
        """Reach ``broker`` on the inter-broker listener (else its first endpoint)."""
        ep = broker.endpoint(self.inter_broker_listener) or (
            broker.endpoints[0] if broker.endpoints else None)
        if ep is None:
            _log.warning("broker has no endpoint", broker=broker.broker_id)
            return
        self.channel.add_broker(broker.broker_id, ep.host or "127.0.0.1", ep.port)

    def close(self) -> TrackedChannel:
        """Stop deletion, the state machines and the channel; returns the channel (its
        connections close in the background)."""
        self.deletion.reset()
        self.rsm.shutdown()
        self.psm.shutdown()
        self.channel.close()
        return self.channel


def build_machinery(ctx: ControllerContext, store: MetadataStore, watches: ControllerWatches,
                    *, node_id: int, inter_broker_listener: str, config,
                    topic_config: Callable[[str], dict], local_deliver,
                    channel_factory=None,
                    enqueue: Callable[[ev.ControllerEvent], None]) -> ControllerMachinery:
    """The parts of an active controller over ``ctx``; ``enqueue`` puts the events the
    brokers' answers cause on the controller's queue."""
    factory = channel_factory or ControllerChannelManager
    channel = TrackedChannel(factory(asyncio.get_running_loop(), node_id, local_deliver, None,
                                     config["controller.socket.timeout.ms"]))

    def stop_replica_deleted(broker_id: int, error_code: int, partition_errors) -> None:
        enqueue(ev.TopicDeletionStopReplicaResponseReceived(
            broker_id=broker_id, error_code=error_code,
            partition_errors=dict(partition_errors)))

    def leader_and_isr_answered(broker_id: int, response) -> None:
        enqueue(ev.LeaderAndIsrResponseReceived(broker_id=broker_id, response=response))

    batch = ControllerBrokerRequestBatch(
        ctx, channel, node_id, inter_broker_listener,
        BatchCallbacks(on_leader_and_isr_response=leader_and_isr_answered,
                       on_stop_replica_deletion=stop_replica_deleted))
    zk = ZkWrites(store, ctx)
    rsm = ReplicaStateMachine(ctx, zk, batch, node_id=node_id)
    psm = PartitionStateMachine(ctx, zk, batch, node_id=node_id, topic_config=topic_config,
                                unclean_default=bool(config["unclean.leader.election.enable"]))
    # Muting a deleted topic's /brokers/topics/<t> watch needs nothing: its
    # PartitionModifications events are ignored once the topic left the context.
    client = ControllerDeletionClient(ctx, zk, batch, lambda topic: None)
    deletion = TopicDeletionManager(ctx, rsm, psm, client, bool(config["delete.topic.enable"]))
    reassign = PartitionReassignments(
        ctx, zk, batch, rsm, psm, deletion, znode_watch=watches.reassign_partitions(),
        rearm_znode_watch=lambda: enqueue(ev.ZkPartitionReassignment()))
    return ControllerMachinery(ctx, inter_broker_listener, channel, batch, zk,
                               ZkReads(store, ctx, watches, zk), rsm, psm, deletion, reassign)
