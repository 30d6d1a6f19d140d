"""The replica state machine (Kafka 3.9's ``ZkReplicaStateMachine``).

Job: move replicas (a partition on one broker) between New, Online, Offline,
ReplicaDeletionStarted, ReplicaDeletionSuccessful, ReplicaDeletionIneligible and
NonExistent, telling brokers what that means:
 - New: LeaderAndIsr (is_new) to the replica if the partition has a leader/ISR;
 - Online: LeaderAndIsr to the replica (unless it was New);
 - Offline: StopReplica(delete=false) to the replica's broker; the replica leaves
   the ISR in the state znode (if it led, the leader becomes -1; a single-member
   ISR is kept, as Kafka keeps the last ISR member); LeaderAndIsr to the remaining
   replicas (unless the topic is being deleted) and UpdateMetadata to all brokers;
 - ReplicaDeletionStarted: StopReplica(delete=true);
 - NonExistent: the replica leaves the assignment in the context (RS, AR and RR).

Valid transitions (previous states of each target):
  New                       <- NonExistent
  Online                    <- New, Online, Offline, ReplicaDeletionIneligible
  Offline                   <- New, Online, Offline, ReplicaDeletionIneligible
  ReplicaDeletionStarted    <- Offline
  ReplicaDeletionSuccessful <- ReplicaDeletionStarted
  ReplicaDeletionIneligible <- Offline, ReplicaDeletionStarted
  NonExistent               <- ReplicaDeletionSuccessful
Anything else is logged as invalid and skipped.

Invariants: one ``handle_state_changes`` call = one request batch; ISR removals are
written conditionally on each state znode's version and re-read on conflicts
(bounded rounds); ``ControllerMovedError`` propagates, other errors are logged.
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Iterable

import structlog

from kafkapy.controller.context import ReplicaState
from kafkapy.controller.log_text import tp_text
from kafkapy.controller.transitions import split_valid_transitions
from kafkapy.controller.zk_writes import ControllerMovedError, StateChangeFailedError
from kafkapy.metadata.leader_and_isr import NO_LEADER, LeaderAndIsr
from kafkapy.protocol.topic_partition import TopicPartition

if TYPE_CHECKING:
    from kafkapy.controller.context import ControllerContext, PartitionAndReplica
    from kafkapy.controller.request_batch import ControllerBrokerRequestBatch
    from kafkapy.controller.zk_writes import ZkWrites

_log = structlog.get_logger("kafkapy.controller.replica_state_machine")
_state_log = structlog.get_logger("kafkapy.state.change")

_S = ReplicaState
_VALID_PREVIOUS: dict[ReplicaState, frozenset[ReplicaState]] = {
    _S.NEW: frozenset({_S.NON_EXISTENT}),
    _S.ONLINE: frozenset({_S.NEW, _S.ONLINE, _S.OFFLINE, _S.DELETION_INELIGIBLE}),
    _S.OFFLINE: frozenset({_S.NEW, _S.ONLINE, _S.OFFLINE, _S.DELETION_INELIGIBLE}),
    _S.DELETION_STARTED: frozenset({_S.OFFLINE}),
    _S.DELETION_SUCCESSFUL: frozenset({_S.DELETION_STARTED}),
    _S.DELETION_INELIGIBLE: frozenset({_S.OFFLINE, _S.DELETION_STARTED}),
    _S.NON_EXISTENT: frozenset({_S.DELETION_SUCCESSFUL}),
}

#: Rounds of re-reading state znodes after version conflicts while removing a
#: replica from ISRs.
MAX_ISR_REMOVAL_ROUNDS = 10


class ReplicaStateMachine:
    """See the module docstring.  ``handle_state_changes`` takes replicas as
    ``((topic, partition), broker_id)`` (the context's ``PartitionAndReplica``)."""

    def __init__(self, ctx: "ControllerContext", zk_writes: "ZkWrites",
                 batch: "ControllerBrokerRequestBatch", *, node_id: int = -1) -> None:
        self._ctx = ctx
        self._zk = zk_writes
        self._batch = batch
        self._node_id = node_id

    # -- lifecycle ------------------------------------------------------------------
    def startup(self) -> None:
        """Kafka's startup: initial states from liveness, then Online for replicas on
        live brokers (LeaderAndIsr to them) and Offline for the others."""
        self.initialize_replica_state()
        online, offline = self._ctx.online_and_offline_replicas()
        self.handle_state_changes(sorted(online), ReplicaState.ONLINE)
        self.handle_state_changes(sorted(offline), ReplicaState.OFFLINE)

    def shutdown(self) -> None:
        _log.info("stopped replica state machine")

    def initialize_replica_state(self) -> None:
        """Online if the replica's broker is live (not shutting down), else
        ReplicaDeletionIneligible (Kafka's initializeReplicaState)."""
        for replica in self._ctx.all_replicas():
            tp, b = replica
            self._ctx.put_replica_state(
                replica, ReplicaState.ONLINE if self._ctx.is_replica_online(b, tp)
                else ReplicaState.DELETION_INELIGIBLE)

    # -- state changes ----------------------------------------------------------------
    def handle_state_changes(self, replicas: "Iterable[PartitionAndReplica]",
                             target: ReplicaState) -> None:
        """Move ``replicas`` to ``target`` in one request batch, broker by broker.
        Raises ``ControllerMovedError``; other errors are logged."""
        replicas = list(dict.fromkeys(replicas))
        if not replicas:
            return
        try:
            self._batch.new_batch()
            by_broker: dict[int, list] = {}
            for r in replicas:
                by_broker.setdefault(r[1], []).append(r)
            for broker, rs in by_broker.items():
                self._do_handle_state_changes(broker, rs, target)
            self._batch.send()
        except ControllerMovedError:
            _log.error("controller moved to another broker while moving replicas",
                       target=target.value)
            self._batch.clear()
            raise
        except Exception:               # noqa: BLE001 - Kafka logs and goes on
            _log.exception("error while moving replicas", target=target.value)
            self._batch.clear()

    def _do_handle_state_changes(self, broker: int, replicas: list, target: ReplicaState) -> None:
        ctx = self._ctx

        def invalid(r: "PartitionAndReplica", current: ReplicaState) -> None:
            _state_log.error("invalid replica state transition", replica=broker,
                             partition=tp_text(r[0]), current=current.value,
                             target=target.value, controller_epoch=ctx.epoch)
        valid = split_valid_transitions(replicas, ctx.replica_states, _VALID_PREVIOUS, target,
                                        ReplicaState.NON_EXISTENT, invalid)
        handler = {
            ReplicaState.NEW: self._to_new,
            ReplicaState.ONLINE: self._to_online,
            ReplicaState.OFFLINE: self._to_offline,
            ReplicaState.DELETION_STARTED: self._to_deletion_started,
            ReplicaState.DELETION_INELIGIBLE: self._to_plain_state,
            ReplicaState.DELETION_SUCCESSFUL: self._to_plain_state,
            ReplicaState.NON_EXISTENT: self._to_non_existent,
        }[target]
        handler(broker, valid, target)

    def _to_new(self, broker: int, valid: list, target: ReplicaState) -> None:
        ctx = self._ctx
        for r in valid:
            tp = r[0]
            li = ctx.partition_leadership(tp)
            if li is not None:
                if li.leader == broker:
                    self._log_failed(r, ctx.replica_state(r), ReplicaState.OFFLINE,
                                     StateChangeFailedError(
                                         f"Replica {broker} for partition {tp_text(tp)} cannot be "
                                         f"moved to NewReplica state as it is being requested "
                                         f"to become leader"))
                    continue
                self._batch.add_leader_and_isr([broker], tp, li, ctx.full_assignment(tp),
                                               is_new=True)
            self._set(r, ReplicaState.NEW)

    def _to_online(self, broker: int, valid: list, target: ReplicaState) -> None:
        ctx = self._ctx
        for r in valid:
            tp = r[0]
            if ctx.replica_state(r) is ReplicaState.NEW:
                assignment = ctx.full_assignment(tp)
                if broker not in assignment.replicas:
                    _log.error("adding a replica that is not part of the assignment",
                               replica=broker, partition=tp_text(tp), assignment=str(assignment))
                    ctx.update_full_assignment(tp, replace(
                        assignment, replicas=assignment.replicas + (broker,)))
            else:
                li = ctx.partition_leadership(tp)
                if li is not None:
                    self._batch.add_leader_and_isr([broker], tp, li, ctx.full_assignment(tp),
                                                   is_new=False)
            self._set(r, ReplicaState.ONLINE)

    def _to_offline(self, broker: int, valid: list, target: ReplicaState) -> None:
        ctx = self._ctx
        for r in valid:
            self._batch.add_stop_replica([broker], r[0], delete=False)
        with_leadership = [r for r in valid if ctx.partition_leadership(r[0]) is not None]
        without = [r for r in valid if ctx.partition_leadership(r[0]) is None]
        updated = self._remove_replicas_from_isr(broker, [r[0] for r in with_leadership])
        for tp, li in updated.items():
            _state_log.info("partition state changed after removing replica from the ISR",
                            partition=tp_text(tp), replica=broker, leader=li.leader,
                            isr=list(li.isr), leader_epoch=li.leader_epoch,
                            controller_epoch=ctx.epoch)
            if not ctx.is_topic_queued_for_deletion(tp[0]):
                recipients = [b for b in ctx.replicas(tp) if b != broker]
                self._batch.add_leader_and_isr(recipients, tp, li, ctx.full_assignment(tp),
                                               is_new=False)
            self._set((tp, broker), ReplicaState.OFFLINE)
        for r in without:
            self._batch.add_update_metadata(ctx.live_or_shutting_down_broker_ids(), [r[0]])
            self._set(r, ReplicaState.OFFLINE)

    def _to_deletion_started(self, broker: int, valid: list, target: ReplicaState) -> None:
        for r in valid:
            self._set(r, ReplicaState.DELETION_STARTED)
            self._batch.add_stop_replica([broker], r[0], delete=True)

    def _to_plain_state(self, broker: int, valid: list, target: ReplicaState) -> None:
        for r in valid:
            self._set(r, target)

    def _to_non_existent(self, broker: int, valid: list, target: ReplicaState) -> None:
        ctx = self._ctx
        for r in valid:
            tp = r[0]
            ctx.update_full_assignment(tp, ctx.full_assignment(tp).remove_replica(broker))
            self._log_transition(r, ctx.replica_state(r), ReplicaState.NON_EXISTENT)
            ctx.replica_states.pop(r, None)

    # -- ISR removal ------------------------------------------------------------------
    def _remove_replicas_from_isr(self, broker: int, partitions: "list[TopicPartition]"
                                  ) -> "dict[TopicPartition, LeaderAndIsr]":
        """Kafka's removeReplicasFromIsr: rounds until no version conflict is left.
        Returns the partitions' leader/ISR after the removal (unchanged ones too)."""
        done: dict = {}
        remaining = partitions
        for _ in range(MAX_ISR_REMOVAL_ROUNDS):
            if not remaining:
                break
            finished, remaining = self._do_remove_replicas_from_isr(broker, remaining)
            for tp, outcome in finished.items():
                if isinstance(outcome, Exception):
                    self._log_failed((tp, broker), self._ctx.replica_state((tp, broker)),
                                     ReplicaState.OFFLINE, outcome)
                else:
                    done[tp] = outcome
        for tp in remaining:
            self._log_failed((tp, broker), self._ctx.replica_state((tp, broker)),
                             ReplicaState.OFFLINE,
                             StateChangeFailedError(f"gave up removing replica {broker} from "
                                                    f"the ISR of {tp_text(tp)} after conflicts"))
        return done

    def _do_remove_replicas_from_isr(self, broker: int, partitions: "list[TopicPartition]"):
        ctx = self._ctx
        read = self._zk.get_partition_states(partitions)
        results: dict = {}
        adjusted: dict = {}
        for tp in partitions:
            li = read.get(tp)
            if li is None:
                if not ctx.is_topic_queued_for_deletion(tp[0]):
                    results[tp] = StateChangeFailedError(
                        f"Failed to change state of replica {broker} for partition {tp_text(tp)} "
                        f"since the leader and isr path in zookeeper is empty")
            elif isinstance(li, Exception):
                results[tp] = li
            elif li.controller_epoch > ctx.epoch:
                results[tp] = StateChangeFailedError(
                    f"Leader and isr path written by another controller. This probably means "
                    f"the current controller with epoch {ctx.epoch} went through a soft "
                    f"failure and another controller was elected with epoch "
                    f"{li.controller_epoch}. Aborting state change by this controller")
            elif broker not in li.isr:
                # Kafka stamps what it read with its own epoch (LeaderIsrAndControllerEpoch)
                li = li.with_partition_epoch(li.partition_epoch, ctx.epoch)
                ctx.put_leadership(tp, li)
                results[tp] = li
            else:
                leader = NO_LEADER if li.leader == broker else li.leader
                isr = li.isr if len(li.isr) == 1 else [b for b in li.isr if b != broker]
                adjusted[tp] = li.new_leader_and_isr(leader, isr)
        update = self._zk.update_leader_and_isr(adjusted)
        for tp, outcome in update.finished.items():
            if not isinstance(outcome, Exception):
                ctx.put_leadership(tp, outcome)
            results[tp] = outcome
        return results, update.to_retry

    # -- helpers ----------------------------------------------------------------------
    def _set(self, replica: "PartitionAndReplica", state: ReplicaState) -> None:
        self._log_transition(replica, self._ctx.replica_state(replica), state)
        self._ctx.put_replica_state(replica, state)

    def _log_transition(self, replica, current: ReplicaState, target: ReplicaState) -> None:
        _state_log.debug("replica state changed", replica=replica[1],
                         partition=tp_text(replica[0]), current=current.value,
                         target=target.value,
                         controller_epoch=self._ctx.epoch)

    def _log_failed(self, replica, current: ReplicaState, target: ReplicaState,
                    error: BaseException) -> None:
        _state_log.error("replica state change failed", replica=replica[1],
                         partition=tp_text(replica[0]), current=current.value,
                         target=target.value, controller_id=self._node_id,
                         controller_epoch=self._ctx.epoch, error=str(error) or type(error).__name__)
