"""The partition state machine (Kafka 3.9's ``ZkPartitionStateMachine``).

Job: move partitions between NonExistent, New, Online and Offline; moving to
Online creates the partition's state znode (New -> Online: leader = first live
replica, ISR = the live replicas) or elects a leader with an election strategy
(Offline/Online -> Online) and writes it conditionally; each change is told to the
brokers through the request batch.

Valid transitions (previous states of each target):
  New         <- NonExistent
  Online      <- New, Online, Offline
  Offline     <- New, Online, Offline
  NonExistent <- Offline
Anything else is logged as invalid and skipped.

Invariants:
 - one ``handle_state_changes`` call = one request batch (opened, filled, sent);
 - the context's leadership and partition states change only after the znode write
   succeeded; a znode whose version moved is re-read and the election redone
   (bounded rounds); a newer controller epoch in a znode fails that partition;
 - ``ControllerMovedError`` propagates (the controller resigns); other errors fail
   the partitions of the call and are returned, not raised.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

import structlog

from kafkapy.controller.context import PartitionStateName
from kafkapy.controller.leader_election import (
    OFFLINE, ControlledShutdownPartitionLeaderElectionStrategy, ElectionResult, ElectionStrategy,
    OfflinePartitionLeaderElectionStrategy, PreferredReplicaPartitionLeaderElectionStrategy,
    ReassignPartitionLeaderElectionStrategy, leader_for_controlled_shutdown, leader_for_offline,
    leader_for_preferred_replica, leader_for_reassign)
from kafkapy.controller.log_text import tp_text
from kafkapy.controller.transitions import split_valid_transitions
from kafkapy.controller.zk_writes import ControllerMovedError, StateChangeFailedError
from kafkapy.metadata.leader_and_isr import INITIAL_LEADER_EPOCH, LeaderAndIsr
from kafkapy.protocol.topic_partition import TopicPartition

if TYPE_CHECKING:
    from kafkapy.controller.context import ControllerContext
    from kafkapy.controller.request_batch import ControllerBrokerRequestBatch
    from kafkapy.controller.zk_writes import ZkWrites

_log = structlog.get_logger("kafkapy.controller.partition_state_machine")
_state_log = structlog.get_logger("kafkapy.state.change")

_VALID_PREVIOUS: dict[PartitionStateName, frozenset[PartitionStateName]] = {
    PartitionStateName.NEW: frozenset({PartitionStateName.NON_EXISTENT}),
    PartitionStateName.ONLINE: frozenset({PartitionStateName.NEW, PartitionStateName.ONLINE,
                                      PartitionStateName.OFFLINE}),
    PartitionStateName.OFFLINE: frozenset({PartitionStateName.NEW, PartitionStateName.ONLINE,
                                       PartitionStateName.OFFLINE}),
    PartitionStateName.NON_EXISTENT: frozenset({PartitionStateName.OFFLINE}),
}

#: Election rounds (re-read after a zk version conflict) before giving up on a partition.
MAX_ELECTION_ROUNDS = 10

UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"

#: One result per partition: the written leader/ISR or why it failed.
StateChangeResults = dict  # dict[TopicPartition, LeaderAndIsr | Exception]


def succeeded(result) -> bool:
    """Whether one partition's state change result is a success (a ``LeaderAndIsr``,
    not an exception)."""
    return result is not None and not isinstance(result, BaseException)


def elected(results: "StateChangeResults | None") -> "list[TopicPartition]":
    """The partitions ``handle_state_changes`` wrote a new leader/ISR for."""
    return [tp for tp, r in (results or {}).items() if succeeded(r)]


class PartitionStateMachine:
    """See the module docstring.

    ``topic_config(topic)`` returns the topic's effective config (broker defaults plus
    overrides, e.g. ``broker.topic_config``); it decides ``unclean.leader.election.enable``
    for partitions without a live ISR replica.  Without it ``unclean_default`` is used.
    ``target_replicas(tp)`` gives a reassignment's target replicas for the reassign
    election; without it the context's full assignment's TRS is the target.
    """

    def __init__(self, ctx: "ControllerContext", zk_writes: "ZkWrites",
                 batch: "ControllerBrokerRequestBatch", *, node_id: int = -1,
                 topic_config: Callable[[str], Mapping[str, Any]] | None = None,
                 unclean_default: bool = False,
                 target_replicas: Callable[["TopicPartition"], list[int]] | None = None
                 ) -> None:
        self._ctx = ctx
        self._zk = zk_writes
        self._batch = batch
        self._node_id = node_id
        self._topic_config = topic_config
        self._unclean_default = unclean_default
        self._target_replicas = target_replicas

    # -- lifecycle ------------------------------------------------------------------
    def startup(self) -> StateChangeResults:
        """Kafka's startup: set every partition's initial state from the context, then
        try to bring New and Offline partitions online (offline election)."""
        self.initialize_partition_state()
        return self.trigger_online_partition_state_change()

    def shutdown(self) -> None:
        """Nothing to release; the states live in the context (cleared on resignation)."""
        _log.info("stopped partition state machine")

    def initialize_partition_state(self) -> None:
        """Online if the partition has a leader/ISR whose leader is live, Offline if it
        has one with a dead leader, New if its state znode does not exist."""
        for tp in self._ctx.all_partitions():
            li = self._ctx.partition_leadership(tp)
            if li is None:
                state = PartitionStateName.NEW
            elif self._ctx.is_replica_online(li.leader, tp):
                state = PartitionStateName.ONLINE
            else:
                state = PartitionStateName.OFFLINE
            self._ctx.put_partition_state(tp, state)

    def trigger_online_partition_state_change(self, topic: str | None = None
                                              ) -> StateChangeResults:
        """Move New and Offline partitions (of ``topic``, or all) of topics not queued
        for deletion to Online with an offline election (clean unless the topic allows
        unclean)."""
        candidates = [tp for tp, s in self._ctx.partition_states.items()
                      if s in (PartitionStateName.OFFLINE, PartitionStateName.NEW)
                      and (topic is None or tp[0] == topic)
                      and not self._ctx.is_topic_queued_for_deletion(tp[0])]
        return self.handle_state_changes(candidates, PartitionStateName.ONLINE, OFFLINE)

    # -- state changes ----------------------------------------------------------------
    def handle_state_changes(self, partitions: "Iterable[TopicPartition]",
                             target: PartitionStateName,
                             election: ElectionStrategy | None = None) -> StateChangeResults:
        """Move ``partitions`` to ``target`` in one batch; returns, for partitions that
        went through an election or failed, the written ``LeaderAndIsr`` or the exception.
        ``election`` is required for ``ONLINE``.  Raises ``ControllerMovedError``."""
        partitions = list(dict.fromkeys(partitions))
        if not partitions:
            return {}
        try:
            self._batch.new_batch()
            result = self._do_handle_state_changes(partitions, target, election)
            self._batch.send()
            return result
        except ControllerMovedError:
            _log.error("controller moved to another broker while moving partitions",
                       target=target.value)
            self._batch.clear()
            raise
        except Exception as e:          # noqa: BLE001 - Kafka fails the whole call
            _log.exception("error while moving partitions", target=target.value)
            self._batch.clear()
            return {tp: e for tp in partitions}

    def _do_handle_state_changes(self, partitions: "list[TopicPartition]",
                                 target: PartitionStateName,
                                 election: ElectionStrategy | None) -> StateChangeResults:
        ctx = self._ctx

        def invalid(tp: "TopicPartition", current: PartitionStateName) -> None:
            _state_log.error("invalid partition state transition", partition=tp_text(tp),
                             current=current.value, target=target.value,
                             controller_epoch=ctx.epoch)
        valid = split_valid_transitions(partitions, ctx.partition_states, _VALID_PREVIOUS,
                                        target, PartitionStateName.NON_EXISTENT, invalid)
        if target is PartitionStateName.ONLINE:
            return self._to_online(valid, election)
        for tp in valid:
            _state_log.info("partition state changed", partition=tp_text(tp),
                            current=ctx.partition_state(tp).value, target=target.value,
                            controller_epoch=ctx.epoch)
            ctx.put_partition_state(tp, target)
        return {}

    def _to_online(self, valid: "list[TopicPartition]",
                   election: ElectionStrategy | None) -> StateChangeResults:
        ctx = self._ctx
        uninitialized = [tp for tp in valid if ctx.partition_state(tp) is PartitionStateName.NEW]
        to_elect = [tp for tp in valid if ctx.partition_state(tp) in
                    (PartitionStateName.OFFLINE, PartitionStateName.ONLINE)]
        results: StateChangeResults = {}
        if uninitialized:
            for tp in self._initialize_leader_and_isr(uninitialized):
                self._log_transition(tp, PartitionStateName.NEW, PartitionStateName.ONLINE)
                ctx.put_partition_state(tp, PartitionStateName.ONLINE)
        if to_elect:
            if election is None:
                raise ValueError("an election strategy is required to move partitions "
                                 "to OnlinePartition")
            results = self._elect_leader_for_partitions(to_elect, election)
            for tp, outcome in results.items():
                if not isinstance(outcome, Exception):
                    self._log_transition(tp, ctx.partition_state(tp), PartitionStateName.ONLINE,
                                         leader_isr=outcome)
                    ctx.put_partition_state(tp, PartitionStateName.ONLINE)
        return results

    # -- New -> Online ----------------------------------------------------------------
    def _initialize_leader_and_isr(self, partitions: "list[TopicPartition]"
                                   ) -> "list[TopicPartition]":
        """Create the state znodes: leader = first live replica, ISR = live replicas;
        LeaderAndIsr (is_new) to the ISR.  Returns the partitions initialized."""
        ctx = self._ctx
        states: dict = {}
        for tp in partitions:
            live = [r for r in ctx.replicas(tp) if ctx.is_replica_online(r, tp)]
            if not live:
                self._log_failed(tp, PartitionStateName.NEW, PartitionStateName.ONLINE,
                                 StateChangeFailedError(
                                     f"Controller {self._node_id} epoch {ctx.epoch} encountered "
                                     f"error during state change of partition {tp_text(tp)} "
                                     f"from New to Online, assigned replicas are "
                                     f"[{','.join(map(str, ctx.replicas(tp)))}], live brokers "
                                     f"are [{','.join(map(str, sorted(ctx.live_broker_ids())))}]. "
                                     f"No assigned replica is alive."))
                continue
            states[tp] = LeaderAndIsr(leader=live[0], leader_epoch=INITIAL_LEADER_EPOCH,
                                      isr=tuple(live), controller_epoch=ctx.epoch,
                                      partition_epoch=0)
        if not states:
            return []
        try:
            created = self._zk.create_partition_states(states)
        except ControllerMovedError:
            _log.error("controller moved while creating partition state znodes")
            raise
        except Exception as e:          # noqa: BLE001 - every partition of the call fails
            for tp in states:
                self._log_failed(tp, ctx.partition_state(tp), PartitionStateName.NEW, e)
            return []
        done = []
        for tp, outcome in created.items():
            if isinstance(outcome, Exception):
                self._log_failed(tp, PartitionStateName.NEW, PartitionStateName.ONLINE, outcome)
                continue
            ctx.put_leadership(tp, outcome)
            self._batch.add_leader_and_isr(outcome.isr, tp, outcome, ctx.full_assignment(tp),
                                           is_new=True)
            done.append(tp)
        return done

    # -- elections ------------------------------------------------------------------
    def _elect_leader_for_partitions(self, partitions: "list[TopicPartition]",
                                     election: ElectionStrategy) -> StateChangeResults:
        """Kafka's electLeaderForPartitions: rounds of read-elect-write until every
        partition is finished (bounded by ``MAX_ELECTION_ROUNDS``)."""
        results: StateChangeResults = {}
        remaining = partitions
        for _ in range(MAX_ELECTION_ROUNDS):
            if not remaining:
                break
            finished, remaining = self._do_elect_leader_for_partitions(remaining, election)
            for tp, outcome in finished.items():
                if isinstance(outcome, Exception):
                    self._log_failed(tp, self._ctx.partition_state(tp),
                                     PartitionStateName.ONLINE, outcome)
            results.update(finished)
        for tp in remaining:
            e = StateChangeFailedError(f"gave up electing a leader for {tp_text(tp)} after "
                                       f"{MAX_ELECTION_ROUNDS} conflicting znode updates")
            self._log_failed(tp, self._ctx.partition_state(tp), PartitionStateName.ONLINE, e)
            results[tp] = e
        return results

    def _do_elect_leader_for_partitions(self, partitions: "list[TopicPartition]",
                                        election: ElectionStrategy
                                        ) -> tuple[StateChangeResults, "list[TopicPartition]"]:
        ctx = self._ctx
        try:
            read = self._zk.get_partition_states(partitions)
        except Exception as e:          # noqa: BLE001 - reported per partition
            return {tp: e for tp in partitions}, []
        failed: StateChangeResults = {}
        valid: list[tuple] = []
        for tp in partitions:
            current = read.get(tp)
            if isinstance(current, Exception):
                failed[tp] = current
            elif current is None:
                failed[tp] = StateChangeFailedError(
                    f"LeaderAndIsr information doesn't exist for partition {tp_text(tp)} in "
                    f"{ctx.partition_state(tp).value} state")
            elif current.controller_epoch > ctx.epoch:
                failed[tp] = StateChangeFailedError(
                    f"Aborted leader election for partition {tp_text(tp)} since the LeaderAndIsr "
                    f"path was already written by another controller. This probably means "
                    f"that the current controller {self._node_id} went through a soft failure "
                    f"and another controller was elected with epoch {current.controller_epoch}.")
            else:
                valid.append((tp, current))
        if not valid:
            return failed, []
        elections = self._elect(valid, election)
        with_leader = {}
        for r in elections:
            if r.leader_isr is None:
                failed[r.tp] = StateChangeFailedError(
                    f"Failed to elect leader for partition {tp_text(r.tp)} under strategy "
                    f"{_strategy_name(election)}")
            else:
                with_leader[r.tp] = r
        update = self._zk.update_leader_and_isr({tp: r.leader_isr for tp, r in with_leader.items()})
        for tp, outcome in update.finished.items():
            if not isinstance(outcome, Exception):
                ctx.put_leadership(tp, outcome)
                self._batch.add_leader_and_isr(with_leader[tp].live_replicas, tp, outcome,
                                               ctx.full_assignment(tp), is_new=False)
        return {**update.finished, **failed}, update.to_retry

    def _elect(self, valid: list[tuple], election: ElectionStrategy) -> list[ElectionResult]:
        ctx = self._ctx
        if isinstance(election, OfflinePartitionLeaderElectionStrategy):
            # IBP 3.9 supports leader recovery: an unclean leader is marked RECOVERING.
            return leader_for_offline(
                ctx, self._collect_unclean_state(valid, election.allow_unclean))
        if isinstance(election, ReassignPartitionLeaderElectionStrategy):
            # Kafka's leaderForReassign: the target replicas of the full assignment
            target = self._target_replicas or (lambda tp: ctx.full_assignment(tp).target_replicas)
            return leader_for_reassign(ctx, valid, {tp: target(tp) for tp, _ in valid})
        if isinstance(election, PreferredReplicaPartitionLeaderElectionStrategy):
            return leader_for_preferred_replica(ctx, valid)
        if isinstance(election, ControlledShutdownPartitionLeaderElectionStrategy):
            return leader_for_controlled_shutdown(ctx, valid)
        raise ValueError(f"unknown election strategy {election!r}")

    def _collect_unclean_state(self, valid: list[tuple], allow_unclean: bool) -> list[tuple]:
        """Kafka's collectUncleanLeaderElectionState: partitions with a live ISR replica
        elect cleanly; the others follow ``allow_unclean`` or the topic's config."""
        out = []
        for tp, li in valid:
            if any(self._ctx.is_replica_online(r, tp) for r in li.isr):
                out.append((tp, li, False))
            elif allow_unclean:
                out.append((tp, li, True))
            else:
                try:
                    unclean = self.unclean_leader_election_enabled(tp[0])
                except Exception as e:      # noqa: BLE001 - Kafka fails this partition
                    self._log_failed(tp, self._ctx.partition_state(tp),
                                     PartitionStateName.ONLINE, e)
                    out.append((tp, None, False))
                    continue
                out.append((tp, li, unclean))
        return out

    def unclean_leader_election_enabled(self, topic: str) -> bool:
        """The topic's ``unclean.leader.election.enable`` (override or broker default)."""
        if self._topic_config is None:
            return self._unclean_default
        value = self._topic_config(topic).get(UNCLEAN_LEADER_ELECTION_ENABLE)
        if value is None:
            return self._unclean_default
        if isinstance(value, str):
            return value.strip().lower() == "true"
        return bool(value)

    # -- logging ----------------------------------------------------------------------
    def _log_transition(self, tp: "TopicPartition", current: PartitionStateName,
                        target: PartitionStateName, leader_isr: LeaderAndIsr | None = None) -> None:
        li = leader_isr or self._ctx.partition_leadership(tp)
        _state_log.info("partition state changed", partition=tp_text(tp), current=current.value,
                        target=target.value, controller_epoch=self._ctx.epoch,
                        leader=li.leader if li else None, isr=list(li.isr) if li else None,
                        leader_epoch=li.leader_epoch if li else None)

    def _log_failed(self, tp: "TopicPartition", current: PartitionStateName,
                    target: PartitionStateName, error: BaseException) -> None:
        _state_log.error("partition state change failed", partition=tp_text(tp),
                         current=current.value, target=target.value,
                         controller_id=self._node_id, controller_epoch=self._ctx.epoch,
                         error=str(error) or type(error).__name__)


def _strategy_name(election: ElectionStrategy) -> str:
    if isinstance(election, OfflinePartitionLeaderElectionStrategy):
        return f"OfflinePartitionLeaderElectionStrategy({str(election.allow_unclean).lower()})"
    return type(election).__name__
