"""Automatic preferred-leader rebalance (Kafka's checkAndTriggerAutoLeaderRebalance,
``auto.leader.rebalance.enable``): every ``leader.imbalance.check.interval.seconds`` the
active controller looks, per preferred broker (the first replica of an assignment), at
the partitions that broker should lead; when more than
``leader.imbalance.per.broker.percentage`` of them are led elsewhere, those whose
preferred replica can lead (live and in the ISR) get a preferred election.

Invariants: topics queued for deletion are left alone; brokers are looked at in id
order; a partition being reassigned is not skipped (Kafka 3.9 has no such check: its
preferred replica is the first target replica).  The timer is the controller's.
"""
from __future__ import annotations

import structlog

from kafkapy.controller.context import PartitionStateName
from kafkapy.controller.leader_election import PREFERRED
from kafkapy.controller.log_text import tps_text
from kafkapy.controller.machinery import ControllerMachinery
from kafkapy.protocol.topic_partition import TopicPartition

_log = structlog.get_logger("kafkapy.controller")


def check_and_trigger_auto_leader_rebalance(m: ControllerMachinery,
                                            imbalance_percentage: float) -> None:
    ctx = m.ctx
    by_preferred: dict[int, list[TopicPartition]] = {}
    for tp in ctx.all_partitions():
        replicas = ctx.replicas(tp)
        if replicas and not ctx.is_topic_queued_for_deletion(tp.topic):
            by_preferred.setdefault(replicas[0], []).append(tp)
    threshold = imbalance_percentage / 100
    for preferred, partitions in sorted(by_preferred.items()):
        elsewhere = [tp for tp in partitions if tp in ctx.leadership
                     and ctx.leadership[tp].leader != preferred]
        if len(elsewhere) / len(partitions) <= threshold:
            continue
        candidates = [tp for tp in elsewhere if preferred in ctx.leadership[tp].isr
                      and ctx.is_replica_online(preferred, tp)]
        if candidates:
            _log.info(f"Leader imbalance on broker {preferred}: preferred replica "
                      f"election for {tps_text(candidates)}")
            m.psm.handle_state_changes(candidates, PartitionStateName.ONLINE, PREFERRED)
