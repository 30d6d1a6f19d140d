"""Leader elections asked for (Kafka's processReplicaLeaderElection): ElectLeaders from
the admin API (preferred or unclean, ``AdminClientTriggered``) and the operator's
``/admin/preferred_replica_election`` znode (preferred, ``ZkTriggered``).

Per partition: unknown -> UNKNOWN_TOPIC_OR_PARTITION ("The partition does not exist.");
its topic queued for deletion -> INVALID_TOPIC_EXCEPTION; an election not needed (the
preferred replica already leads; a live leader for unclean) -> ELECTION_NOT_NEEDED;
otherwise the partition state machine elects (Online with the preferred or the unclean
offline strategy) and a failure is PREFERRED_LEADER_NOT_AVAILABLE /
ELIGIBLE_LEADERS_NOT_AVAILABLE with Kafka's message.

Invariants: answers come in the order the partitions were asked; a success carries the
new leader as a third item (the handler waits until this broker's cache shows it); the
znode is deleted (fenced) once handled, whatever the outcome, and its exists watch
re-armed; a ``ControllerMovedError`` from the election propagates (the controller
resigns).
"""
from __future__ import annotations

import structlog

from kafkapy.controller.context import PartitionStateName
from kafkapy.controller.leader_election import OFFLINE_UNCLEAN
from kafkapy.controller.leader_election import PREFERRED as PREFERRED_STRATEGY
from kafkapy.controller.log_text import tps_text
from kafkapy.controller.machinery import ControllerMachinery
from kafkapy.controller.partition_state_machine import elected, succeeded
from kafkapy.controller.zk_writes import ControllerMovedError
from kafkapy.metadata import paths
from kafkapy.metadata.leader_and_isr import NO_LEADER
from kafkapy.metadata.store import DeleteOp, NoNodeError
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.topic_partition import TopicPartition

_log = structlog.get_logger("kafkapy.controller")

#: ElectLeaders' election types (Kafka's ElectionType)
PREFERRED = 0
UNCLEAN = 1

_NOT_NEEDED = "Leader election not needed for topic partition."
_STRATEGY_NAMES = {PREFERRED: "PreferredReplicaPartitionLeaderElectionStrategy",
                   UNCLEAN: "OfflinePartitionLeaderElectionStrategy(true)"}


def process_replica_leader_election(m: ControllerMachinery, election_type: int,
                                    partitions: list[TopicPartition] | None
                                    ) -> tuple[dict, list[TopicPartition] | None]:
    """ElectLeaders: per partition ``(error_code, message)`` or ``(NO_ERROR, None,
    new_leader)``, in the order asked (``None``: every partition); and the partitions
    whose ISR an election wrote, to check for completed reassignments once answered
    (None when nothing was elected)."""
    ctx, kind = m.ctx, election_type
    wanted = partitions if partitions is not None else ctx.all_partitions()
    results: dict[TopicPartition, tuple] = {}
    electable = []
    for tp in wanted:
        topic, partition = tp
        if not ctx.replicas(tp):
            _log.info(f"Skipping replica leader election ({_kind(kind)}) for partition "
                      f"{topic}-{partition} by AdminClientTriggered since it doesn't exist.")
            results[tp] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                           "The partition does not exist.")
        elif ctx.is_topic_queued_for_deletion(topic):
            results[tp] = (ErrorCode.INVALID_TOPIC_EXCEPTION, "The topic is being deleted")
        elif election_needed(m, tp, kind):
            electable.append(tp)
        else:
            results[tp] = (ErrorCode.ELECTION_NOT_NEEDED, _NOT_NEEDED)
    if not electable:
        return {tp: results[tp] for tp in wanted}, None
    strategy = PREFERRED_STRATEGY if kind == PREFERRED else OFFLINE_UNCLEAN
    outcome = m.psm.handle_state_changes(electable, PartitionStateName.ONLINE, strategy)
    failed = (ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE if kind == PREFERRED
              else ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE)
    for tp in electable:
        topic, partition = tp
        res = (outcome or {}).get(tp)
        if succeeded(res):
            # the new leader as a third item: the handler waits to see it
            results[tp] = (ErrorCode.NO_ERROR, None, res.leader)
        else:
            if isinstance(res, ControllerMovedError):
                raise ControllerMovedError(str(res))
            message = str(res) if isinstance(res, BaseException) and str(res) else (
                f"Failed to elect leader for partition {topic}-{partition} under "
                f"strategy {_STRATEGY_NAMES.get(kind)}")
            _log.info(f"Error completing replica leader election ({_kind(kind)}) for "
                      f"partition {topic}-{partition}", error=message)
            results[tp] = (failed, message)
    # an unclean election may leave the ISR at a reassignment's targets
    return {tp: results[tp] for tp in wanted}, elected(outcome)


def preferred_replica_election_from_znode(m: ControllerMachinery) -> None:
    """Run the preferred election ``/admin/preferred_replica_election`` asks for, then
    delete it (watched by an exists watch, so its creation is seen)."""
    ctx, store = m.ctx, m.reads.store
    path = paths.ADMIN_PREFERRED_REPLICA_ELECTION
    watch = m.reads.watches.preferred_replica_election()
    if store.exists(path, watch=watch) is None:
        return
    try:
        data, _ = store.get(path)
        wanted = paths.decode_preferred_replica_election(data)
    except NoNodeError:
        return
    except ValueError as e:
        _log.warning("unreadable preferred replica election request", error=str(e))
        wanted = []
    try:
        electable = [tp for tp in dict.fromkeys(wanted) if ctx.replicas(tp)
                     and not ctx.is_topic_queued_for_deletion(tp[0])
                     and election_needed(m, tp, PREFERRED)]
        if electable:
            _log.info(f"Starting replica leader election (PREFERRED) for partitions "
                      f"{tps_text(electable)} triggered by ZkTriggered")
            m.psm.handle_state_changes(electable, PartitionStateName.ONLINE,
                                       PREFERRED_STRATEGY)
    finally:
        try:
            m.zk.write_fenced(DeleteOp(path))
        except NoNodeError:
            pass
        store.exists(path, watch=watch)


def election_needed(m: ControllerMachinery, tp: TopicPartition, kind: int) -> bool:
    """Preferred: the first assigned replica does not lead; unclean: no live leader."""
    li = m.ctx.leadership.get(tp)
    leader = li.leader if li is not None else NO_LEADER
    if kind == PREFERRED:
        return leader != m.ctx.replicas(tp)[0]
    return leader == NO_LEADER or leader not in m.ctx.live_broker_ids()


def _kind(kind: int) -> str:
    return "PREFERRED" if kind == PREFERRED else "UNCLEAN"
