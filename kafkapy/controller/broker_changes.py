"""Brokers joining, leaving, bouncing and changing (Kafka's processBrokerChange,
onBrokerStartup, onBrokerFailure, onReplicasBecomeOffline, processBrokerModification),
and replicas a broker reports offline in its LeaderAndIsr answers (a failed log dir).

Invariants:
 - a broker whose registration is newer than the one known (a higher czxid: it
   restarted between two reads) is handled as failed, then started;
 - a started broker learns every partition that has a leader (UpdateMetadata) before
   its replicas go online; the others learn of it first;
 - a replica is offline when its broker is gone or its log dir failed
   (``ctx.replicas_on_offline_dirs``); such leaders are moved through the partition
   state machine (Offline, then an election), replicas of topics being deleted fail
   their deletion instead;
 - when nothing changed a leader or an ISR, the brokers still learn about the dead
   ones through an UpdateMetadata.
"""
from __future__ import annotations

import structlog

from kafkapy.controller.context import PartitionStateName, ReplicaState
from kafkapy.controller.log_text import ids_text, tps_text
from kafkapy.controller.machinery import ControllerMachinery
from kafkapy.controller.partition_state_machine import elected, succeeded
from kafkapy.metadata.topics import topic_id_key
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.topic_partition import TopicPartition

_log = structlog.get_logger("kafkapy.controller")


def process_broker_change(m: ControllerMachinery) -> None:
    """``/brokers/ids`` changed: compare the registrations with the known brokers."""
    ctx = m.ctx
    current = m.reads.brokers()
    known = ctx.live_or_shutting_down_broker_ids()
    new_ids = sorted(set(current) - known)
    dead_ids = sorted(known - set(current))
    bounced_ids = sorted(b for b in set(current) & known
                         if current[b].epoch > ctx.broker_epoch(b))
    live = sorted(current)
    _log.info(f"Newly added brokers: {ids_text(new_ids)}, deleted brokers: "
              f"{ids_text(dead_ids)}, bounced brokers: {ids_text(bounced_ids)}, "
              f"all live brokers: {ids_text(live)}")
    for b in new_ids:
        m.add_to_channel(current[b])
    for b in bounced_ids:
        m.channel.remove_broker(b)
        m.add_to_channel(current[b])
    for b in dead_ids:
        m.channel.remove_broker(b)
    if new_ids:
        for b in new_ids:
            ctx.add_live_broker(current[b])
        on_broker_startup(m, new_ids)
    if bounced_ids:
        ctx.remove_live_brokers(bounced_ids)
        on_broker_failure(m, bounced_ids)
        for b in bounced_ids:
            ctx.add_live_broker(current[b])
        on_broker_startup(m, bounced_ids)
    if dead_ids:
        ctx.remove_live_brokers(dead_ids)
        on_broker_failure(m, dead_ids)


def process_broker_modification(m: ControllerMachinery, broker_id: int) -> None:
    """A registration's data changed (endpoints, rack, features) under the same epoch."""
    ctx = m.ctx
    old = ctx.live_brokers.get(broker_id)
    new = m.reads.broker(broker_id)
    if old is None or new is None or new.epoch != old.epoch:
        return          # registration gone or replaced: BrokerChange handles it
    if (new.endpoints, new.rack, new.features) == (old.endpoints, old.rack, old.features):
        return
    _log.info(f"Updated broker {broker_id}", endpoints=[
        e.connection_string() for e in new.endpoints], rack=new.rack)
    ctx.add_live_broker(new)
    m.add_to_channel(new)
    m.update_metadata_everywhere()


def on_broker_startup(m: ControllerMachinery, new_brokers: list[int]) -> None:
    ctx = m.ctx
    _log.info(f"New broker startup callback for {ids_text(new_brokers)}")
    for b in new_brokers:
        ctx.replicas_on_offline_dirs.pop(b, None)
    existing = sorted(ctx.live_or_shutting_down_broker_ids() - set(new_brokers))
    # the others learn about the new brokers; the new ones get every partition
    m.send_update_metadata(existing)
    m.send_update_metadata(new_brokers, [
        tp for tp in ctx.all_partitions()
        if tp in ctx.leadership and not ctx.is_topic_queued_for_deletion(tp.topic)])
    replicas = ctx.replicas_on_brokers(new_brokers)
    m.rsm.handle_state_changes(replicas, ReplicaState.ONLINE)
    results = m.psm.trigger_online_partition_state_change()
    m.reassign.on_isr_changed(elected(results))
    m.reassign.on_broker_startup(new_brokers)
    resumed = {tp.topic for tp, _ in replicas if ctx.is_topic_queued_for_deletion(tp.topic)}
    if resumed:
        _log.info(f"Some replicas {sorted(resumed)} for topics scheduled for deletion are "
                  "on the newly restarted brokers. Signaling restart of topic deletion "
                  "for these topics")
        m.deletion.resume_deletion_for_topics(resumed)


def on_broker_failure(m: ControllerMachinery, dead_brokers: list[int]) -> None:
    _log.info(f"Broker failure callback for {ids_text(dead_brokers)}")
    for b in dead_brokers:
        m.ctx.replicas_on_offline_dirs.pop(b, None)
    on_replicas_become_offline(m, m.ctx.replicas_on_brokers(dead_brokers))


def on_replicas_become_offline(m: ControllerMachinery, replicas) -> None:
    """Kafka's onReplicasBecomeOffline."""
    ctx = m.ctx
    for_deletion = [r for r in replicas if ctx.is_topic_queued_for_deletion(r[0][0])]
    not_for_deletion = [r for r in replicas if not ctx.is_topic_queued_for_deletion(r[0][0])]
    offline_leader = [tp for tp, li in ctx.leadership.items()
                      if not ctx.is_replica_online(li.leader, tp)
                      and not ctx.is_topic_queued_for_deletion(tp[0])]
    m.psm.handle_state_changes(offline_leader, PartitionStateName.OFFLINE)
    results = m.psm.trigger_online_partition_state_change()
    m.rsm.handle_state_changes(not_for_deletion, ReplicaState.OFFLINE)
    if for_deletion:
        m.deletion.fail_replica_deletion(for_deletion)
    # an election may have left the ISR at the targets of a reassignment
    m.reassign.on_isr_changed(elected(results))
    if not not_for_deletion and not any(succeeded(r) for r in (results or {}).values()):
        # nothing changed leader or ISR: tell the brokers about the dead ones directly
        m.update_metadata_everywhere()


def process_leader_and_isr_response(m: ControllerMachinery, broker_id: int, response) -> None:
    """A broker's LeaderAndIsr answer: partitions it answered KAFKA_STORAGE_ERROR for
    (a failed log dir) go offline there, those it answered NO_ERROR are back."""
    ctx = m.ctx
    if getattr(response, "error_code", 0) != ErrorCode.NO_ERROR:
        _log.error(f"Received error {response.error_code} in LeaderAndIsr response from "
                   f"broker {broker_id}")
        return
    offline, online = set(), set()
    for tp, code in _partition_errors(response, ctx.topic_names_by_id()):
        if code == ErrorCode.KAFKA_STORAGE_ERROR:
            offline.add(tp)
        elif code == ErrorCode.NO_ERROR:
            online.add(tp)
    previous = ctx.replicas_on_offline_dirs.get(broker_id, set())
    current = (previous - online) | offline
    ctx.replicas_on_offline_dirs[broker_id] = current
    new = sorted(current - previous)
    if new:
        _log.info(f"Mark replicas {tps_text(new)} on broker {broker_id} as offline")
        on_replicas_become_offline(m, [(tp, broker_id) for tp in new])


def _partition_errors(response, names_by_id: dict[str, str]):
    """(tp, error code) of a LeaderAndIsr response: v5+ by topic id, older by name."""
    for topic in getattr(response, "topics", None) or ():
        name = names_by_id.get(topic_id_key(topic.topic_id))
        if name is None:
            continue
        for pe in topic.partition_errors or ():
            yield TopicPartition(name, pe.partition_index), pe.error_code
    for pe in getattr(response, "partition_errors", None) or ():
        yield TopicPartition(pe.topic_name, pe.partition_index), pe.error_code
