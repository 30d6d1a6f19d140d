"""AlterPartition on the controller (Kafka's processAlterPartition /
tryProcessAlterPartition): a partition leader proposes a new ISR (and leader recovery
state) at the leader and partition epochs it knows.

Checks, in Kafka's order: the broker is registered, with the epoch of its
registration (else STALE_BROKER_EPOCH for the whole request); a topic id the context
lacks -> UNKNOWN_TOPIC_ID for its partitions (v2+); then per partition: unknown ->
UNKNOWN_TOPIC_OR_PARTITION; a newer partition or leader epoch than the controller's ->
NOT_CONTROLLER (this controller is likely stale); an older leader epoch ->
FENCED_LEADER_EPOCH; the same state as the current one -> answered with it (an
idempotent retry); an older partition epoch -> INVALID_UPDATE_VERSION; a recovering
leader with more than itself in the ISR, or RECOVERED -> RECOVERING -> INVALID_REQUEST;
a replica in the proposed ISR that is not live -> INELIGIBLE_REPLICA (v2+;
OPERATION_NOT_ATTEMPTED before).

Invariants: accepted states are written to the state znodes conditionally on their
partition epoch (a conflict -> INVALID_UPDATE_VERSION) and then to the context; every
broker then gets UpdateMetadata for the partitions asked about; the caller answers
first and checks the reassignments the new ISRs may complete afterwards (the
partitions returned with the response).
"""
from __future__ import annotations

import uuid

import structlog

from kafkapy.controller.machinery import ControllerMachinery
from kafkapy.metadata.leader_and_isr import LEADER_RECOVERED, LEADER_RECOVERING, LeaderAndIsr
from kafkapy.metadata.store import NoNodeError
from kafkapy.metadata.topics import parse_topic_id, topic_id_key
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.inter_broker import AlterPartitionResponse
from kafkapy.protocol.topic_partition import TopicPartition

_log = structlog.get_logger("kafkapy.controller")


def process_alter_partition(m: ControllerMachinery, request, version: int
                            ) -> tuple[object, list[TopicPartition]]:
    """The ``AlterPartitionResponse`` of ``version``, and the partitions whose new
    leader/ISR was written (to check for completed reassignments once answered)."""
    ctx, broker_id = m.ctx, request.broker_id
    if broker_id not in ctx.live_brokers:
        _log.info(f"Ignoring AlterPartition due to unknown broker {broker_id}")
        return error_response(version, ErrorCode.STALE_BROKER_EPOCH), []
    if request.broker_epoch != ctx.broker_epoch(broker_id):
        _log.info(f"Ignoring AlterPartition due to stale broker epoch "
                  f"{request.broker_epoch} and local broker epoch "
                  f"{ctx.broker_epoch(broker_id)} for broker {broker_id}")
        return error_response(version, ErrorCode.STALE_BROKER_EPOCH), []
    wanted, unknown_ids = _wanted(m, request, version)
    results: dict[TopicPartition, object] = {}      # error code or LeaderAndIsr
    to_write: dict[TopicPartition, LeaderAndIsr] = {}
    for tp, proposed in wanted.items():
        outcome = _check(m, broker_id, tp, proposed, version)
        if isinstance(outcome, LeaderAndIsr) and outcome is proposed:
            to_write[tp] = proposed
        else:
            results[tp] = outcome
    written = m.zk.update_leader_and_isr(to_write)
    for tp, outcome in written.finished.items():
        if isinstance(outcome, Exception):
            _log.error(f"Failed to update ISR for partition {tp.topic}-{tp.partition}",
                       error=repr(outcome))
            results[tp] = _store_error_code(outcome)
        else:
            _log.debug(f"ISR for partition {tp.topic}-{tp.partition} updated to "
                       f"{list(outcome.isr)}")
            ctx.put_leadership(tp, outcome)
            results[tp] = outcome
    for tp in written.to_retry:
        _log.info(f"Failed to update ISR to {list(to_write[tp].isr)} for partition "
                  f"{tp.topic}-{tp.partition}, bad ZK version.")
        results[tp] = ErrorCode.INVALID_UPDATE_VERSION
    if wanted:
        m.update_metadata_everywhere([tp for tp in wanted if ctx.replicas(tp)])
    response = _response(m, version, wanted, results, unknown_ids)
    return response, [tp for tp, r in results.items() if isinstance(r, LeaderAndIsr)]


def error_response(version: int, code: int):
    """AlterPartition answered with a top-level error and no topics (Kafka's
    AlterPartitionRequest.getErrorResponse)."""
    return AlterPartitionResponse[version](throttle_time_ms=0, error_code=int(code), topics=[])


def _wanted(m: ControllerMachinery, request, version: int):
    """(tp -> proposed LeaderAndIsr in request order, topics whose id the context lacks)."""
    names = m.ctx.topic_names_by_id()
    wanted: dict[TopicPartition, LeaderAndIsr] = {}
    unknown_ids: list = []
    for topic in request.topics or ():
        if version >= 2:
            name = names.get(topic_id_key(topic.topic_id))
            if name is None:
                unknown_ids.append(topic)
                continue
        else:
            name = topic.topic_name
        for p in topic.partitions or ():
            isr = ([b.broker_id for b in p.new_isr_with_epochs or ()] if version >= 3
                   else list(p.new_isr or ()))
            recovery = p.leader_recovery_state if version >= 1 else LEADER_RECOVERED
            wanted[TopicPartition(name, p.partition_index)] = LeaderAndIsr(
                request.broker_id, p.leader_epoch, tuple(isr), m.ctx.epoch,
                p.partition_epoch, recovery)
    return wanted, unknown_ids


def _check(m: ControllerMachinery, broker_id: int, tp: TopicPartition,
           proposed: LeaderAndIsr, version: int):
    """The proposed LeaderAndIsr when it may be written, the current one when already
    there, else the error code (Kafka's checks, in Kafka's order)."""
    current = m.ctx.leadership.get(tp)
    if current is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if (proposed.partition_epoch > current.partition_epoch
            or proposed.leader_epoch > current.leader_epoch):
        # the leader knows a newer state: this controller is likely stale
        return ErrorCode.NOT_CONTROLLER
    if proposed.leader_epoch < current.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if (proposed.leader, proposed.leader_epoch, tuple(proposed.isr),
            proposed.leader_recovery_state) == (
            current.leader, current.leader_epoch, tuple(current.isr),
            current.leader_recovery_state):
        return current      # already so (idempotent retry)
    if proposed.partition_epoch < current.partition_epoch:
        return ErrorCode.INVALID_UPDATE_VERSION
    if proposed.leader_recovery_state == LEADER_RECOVERING and len(proposed.isr) > 1:
        _log.info(f"Rejecting AlterPartition from node {broker_id} for "
                  f"{tp.topic}-{tp.partition} because leader is recovering and ISR is "
                  f"greater than 1")
        return ErrorCode.INVALID_REQUEST
    if (current.leader_recovery_state == LEADER_RECOVERED
            and proposed.leader_recovery_state == LEADER_RECOVERING):
        _log.info(f"Rejecting AlterPartition from node {broker_id} for "
                  f"{tp.topic}-{tp.partition} because the leader recovery state cannot "
                  f"change from RECOVERED to RECOVERING")
        return ErrorCode.INVALID_REQUEST
    ineligible = sorted(set(proposed.isr) - m.ctx.live_broker_ids())
    if ineligible:
        _log.info(f"Rejecting AlterPartition request from node {broker_id} for "
                  f"{tp.topic}-{tp.partition} because it specified ineligible replicas "
                  f"{ineligible} in the new ISR {list(proposed.isr)}.")
        return (ErrorCode.INELIGIBLE_REPLICA if version > 1
                else ErrorCode.OPERATION_NOT_ATTEMPTED)
    return proposed


def _response(m: ControllerMachinery, version: int, wanted, results, unknown_ids: list):
    topic_cls = AlterPartitionResponse.TopicData
    part_cls = topic_cls.PartitionData
    topics: dict[str, list] = {}
    for tp in wanted:
        outcome = results[tp]
        if isinstance(outcome, LeaderAndIsr):
            entry = part_cls(partition_index=tp.partition, error_code=0,
                             leader_id=outcome.leader, leader_epoch=outcome.leader_epoch,
                             isr=list(outcome.isr),
                             leader_recovery_state=outcome.leader_recovery_state,
                             partition_epoch=outcome.partition_epoch)
        else:
            entry = part_cls(partition_index=tp.partition, error_code=int(outcome),
                             leader_id=0, leader_epoch=0, isr=[], leader_recovery_state=0,
                             partition_epoch=0)
        topics.setdefault(tp.topic, []).append(entry)
    out = []
    for topic in unknown_ids:
        out.append(topic_cls(topic_id=topic.topic_id, topic_name="", partitions=[
            part_cls(partition_index=p.partition_index,
                     error_code=ErrorCode.UNKNOWN_TOPIC_ID, leader_id=0, leader_epoch=0,
                     isr=[], leader_recovery_state=0, partition_epoch=0)
            for p in topic.partitions or ()]))
    for name, parts in topics.items():
        out.append(topic_cls(topic_name=name, topic_id=_response_topic_id(
            m.ctx.topic_ids.get(name)), partitions=parts))
    return AlterPartitionResponse[version](throttle_time_ms=0, error_code=0, topics=out)


def _response_topic_id(text: str | None) -> uuid.UUID:
    if not text:
        return uuid.UUID(int=0)
    try:
        return parse_topic_id(text)
    except (ValueError, TypeError):
        return uuid.UUID(int=0)


def _store_error_code(exc: Exception) -> int:
    """Kafka's Errors.forException for a failed znode write."""
    if isinstance(exc, NoNodeError):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return ErrorCode.UNKNOWN
