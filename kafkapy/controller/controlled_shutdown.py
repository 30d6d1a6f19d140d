"""Controlled shutdown on the controller (Kafka's doControlledShutdown): move
leadership off a broker that asked to stop (the broker's side is
``kafkapy.replication.controlled_shutdown``).

Steps: a broker epoch older than the registration's -> STALE_BROKER_EPOCH (-1 skips the
check, as old request versions carry none); an unregistered broker ->
BROKER_NOT_AVAILABLE; the broker joins the shutting-down set (it is no longer
electable); every partition with more than one replica that it leads gets a new leader
(the controlled-shutdown election), those it follows get StopReplica (without
deletion) and its replicas there go Offline (out of the ISR).  The answer lists the
replicated partitions it still leads, sorted (Kafka's replicatedPartitionsBrokerLeads):
the broker retries until that is empty.

Invariants: partitions of topics queued for deletion and single-replica partitions
(which cannot move) are left alone and do not hold the shutdown back.
"""
from __future__ import annotations

import structlog

from kafkapy.controller.context import PartitionStateName, ReplicaState
from kafkapy.controller.leader_election import CONTROLLED_SHUTDOWN
from kafkapy.controller.machinery import ControllerMachinery
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.topic_partition import TopicPartition

_log = structlog.get_logger("kafkapy.controller")


def process_controlled_shutdown(m: ControllerMachinery, broker_id: int, broker_epoch: int
                                ) -> tuple[int, list[TopicPartition]]:
    """``(error_code, partitions the broker still leads)``."""
    ctx = m.ctx
    if broker_epoch != -1:
        cached = ctx.broker_epoch(broker_id)
        if broker_epoch < cached:
            _log.info(f"Received controlled shutdown request from an old broker epoch "
                      f"{broker_epoch} for broker {broker_id}. Current broker "
                      f"epoch is {cached}.")
            return ErrorCode.STALE_BROKER_EPOCH, []
    _log.info(f"Shutting down broker {broker_id}")
    if broker_id not in ctx.live_brokers:
        return ErrorCode.BROKER_NOT_AVAILABLE, []
    ctx.shutting_down_broker_ids.add(broker_id)
    to_act = [tp for tp in ctx.partitions_on_broker(broker_id)
              if len(ctx.replicas(tp)) > 1 and tp in ctx.leadership
              and not ctx.is_topic_queued_for_deletion(tp.topic)]
    led = [tp for tp in to_act if ctx.leadership[tp].leader == broker_id]
    followed = [tp for tp in to_act if ctx.leadership[tp].leader != broker_id]
    m.psm.handle_state_changes(led, PartitionStateName.ONLINE, CONTROLLED_SHUTDOWN)
    m.batch.new_batch()
    for tp in followed:
        m.batch.add_stop_replica([broker_id], tp, False)
    m.batch.send()
    m.rsm.handle_state_changes([(tp, broker_id) for tp in followed], ReplicaState.OFFLINE)
    # Kafka's replicatedPartitionsBrokerLeads: a partition with one replica cannot
    # move, so it does not hold the shutdown back.
    remaining = [tp for tp, li in ctx.leadership.items() if li.leader == broker_id
                 and len(ctx.replicas(tp)) > 1
                 and not ctx.is_topic_queued_for_deletion(tp[0])]
    return ErrorCode.NO_ERROR, sorted(remaining)
