"""Partition leader election (Kafka 3.9's ``PartitionLeaderElectionAlgorithms`` and
``Election`` in Election.scala / PartitionStateMachine.scala).

Job: given a partition's assignment, ISR and which replicas are live, pick the new
leader (and the new ISR) for each election strategy.  Pure functions: no store, no
requests; the partition state machine writes and sends what they return.

Invariants (Kafka's):
 - offline: the first replica in *assignment order* that is live and in the ISR;
   if none and unclean election is allowed, the first live replica (the ISR becomes
   just that replica and the partition is marked RECOVERING);
 - reassign: the first live ISR replica of the *target* replica list;
 - preferred: only the first assigned replica, if live and in the ISR;
 - controlled shutdown: the first live ISR replica not on a shutting-down broker;
   the ISR loses the shutting-down brokers;
 - a new leader always bumps the leader epoch (``LeaderAndIsr.new_leader_and_isr``);
   the zk version is kept: the caller writes conditionally on it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Collection, Iterable, Sequence

from kafkapy.metadata.leader_and_isr import LEADER_RECOVERING, LeaderAndIsr
from kafkapy.protocol.topic_partition import TopicPartition

if TYPE_CHECKING:
    from kafkapy.controller.context import ControllerContext


# --- strategies (Kafka's PartitionLeaderElectionStrategy) ------------------------

@dataclass(frozen=True, slots=True)
class OfflinePartitionLeaderElectionStrategy:
    """Elect for an offline/new partition.  ``allow_unclean`` forces unclean election
    (ElectLeaders with UNCLEAN type); otherwise the topic's
    ``unclean.leader.election.enable`` decides for partitions without a live ISR."""
    allow_unclean: bool = False


@dataclass(frozen=True, slots=True)
class ReassignPartitionLeaderElectionStrategy:
    """Elect among the target replicas (TRS) of a reassignment."""


@dataclass(frozen=True, slots=True)
class PreferredReplicaPartitionLeaderElectionStrategy:
    """Move leadership to the preferred (first assigned) replica."""


@dataclass(frozen=True, slots=True)
class ControlledShutdownPartitionLeaderElectionStrategy:
    """Move leadership off the brokers in ``ctx.shutting_down_broker_ids``."""


ElectionStrategy = (OfflinePartitionLeaderElectionStrategy
                    | ReassignPartitionLeaderElectionStrategy
                    | PreferredReplicaPartitionLeaderElectionStrategy
                    | ControlledShutdownPartitionLeaderElectionStrategy)

#: Ready-made instances (the strategies carry no state but ``allow_unclean``).
OFFLINE = OfflinePartitionLeaderElectionStrategy(False)
OFFLINE_UNCLEAN = OfflinePartitionLeaderElectionStrategy(True)
REASSIGN = ReassignPartitionLeaderElectionStrategy()
PREFERRED = PreferredReplicaPartitionLeaderElectionStrategy()
CONTROLLED_SHUTDOWN = ControlledShutdownPartitionLeaderElectionStrategy()


# --- the algorithms (PartitionLeaderElectionAlgorithms) ---------------------------

def offline_partition_leader_election(assignment: Sequence[int], isr: Collection[int],
                                      live_replicas: Collection[int],
                                      unclean_leader_election_enabled: bool) -> int | None:
    """First live ISR replica in assignment order; else, if unclean election is
    enabled, the first live replica; else None."""
    for r in assignment:
        if r in live_replicas and r in isr:
            return r
    if unclean_leader_election_enabled:
        for r in assignment:
            if r in live_replicas:
                return r
    return None


def reassign_partition_leader_election(reassignment: Sequence[int], isr: Collection[int],
                                       live_replicas: Collection[int]) -> int | None:
    """First live ISR replica of the target replicas."""
    for r in reassignment:
        if r in live_replicas and r in isr:
            return r
    return None


def preferred_replica_partition_leader_election(assignment: Sequence[int],
                                                isr: Collection[int],
                                                live_replicas: Collection[int]) -> int | None:
    """The first assigned replica if it is live and in the ISR; else None."""
    if assignment and assignment[0] in live_replicas and assignment[0] in isr:
        return assignment[0]
    return None


def controlled_shutdown_partition_leader_election(assignment: Sequence[int],
                                                  isr: Collection[int],
                                                  live_replicas: Collection[int],
                                                  shutting_down_brokers: Collection[int]
                                                  ) -> int | None:
    """First live ISR replica (in assignment order) not on a shutting-down broker."""
    for r in assignment:
        if r in live_replicas and r in isr and r not in shutting_down_brokers:
            return r
    return None


# --- elections over the controller's view (Election.scala) ----------------------

@dataclass(frozen=True, slots=True)
class ElectionResult:
    """``leader_isr`` None = no leader could be elected.  ``live_replicas`` are the
    brokers that get the LeaderAndIsr request."""
    tp: "TopicPartition"
    leader_isr: "LeaderAndIsr | None"
    live_replicas: list[int]


def leader_for_offline(ctx: "ControllerContext",
                       partitions: Iterable[tuple["TopicPartition", "LeaderAndIsr | None", bool]],
                       is_leader_recovery_supported: bool = True) -> list[ElectionResult]:
    """Kafka's ``Election.leaderForOffline``: each item is (tp, current leader/ISR,
    unclean allowed).  The ISR keeps its live members when the leader comes from it;
    an unclean leader becomes the whole ISR and the partition RECOVERING."""
    results = []
    for tp, current, unclean in partitions:
        assignment = ctx.replicas(tp)
        live = [r for r in assignment if ctx.is_replica_online(r, tp)]
        if current is None:
            results.append(ElectionResult(tp, None, live))
            continue
        isr = current.isr
        leader = offline_partition_leader_election(assignment, isr, set(live), unclean)
        new = None
        if leader is not None:
            if leader in isr:
                new_isr = [r for r in isr if ctx.is_replica_online(r, tp)]
                new = current.new_leader_and_isr(leader, new_isr)
            else:
                new = current.new_leader_and_isr(leader, [leader])
                if is_leader_recovery_supported:
                    new = replace(new, leader_recovery_state=LEADER_RECOVERING)
        results.append(ElectionResult(tp, new, live))
    return results


def leader_for_reassign(ctx: "ControllerContext",
                        partitions: Iterable[tuple["TopicPartition", "LeaderAndIsr"]],
                        target_replicas: "dict[TopicPartition, list[int]] | None" = None
                        ) -> list[ElectionResult]:
    """Kafka's ``Election.leaderForReassign``: the leader comes from the target
    replicas (``target_replicas[tp]``, default the current assignment); ISR kept."""
    targets = target_replicas or {}
    return _elect_keeping_isr(ctx, partitions, lambda tp: targets.get(tp) or ctx.replicas(tp),
                              reassign_partition_leader_election)


def leader_for_preferred_replica(ctx: "ControllerContext",
                                 partitions: Iterable[tuple["TopicPartition", "LeaderAndIsr"]]
                                 ) -> list[ElectionResult]:
    return _elect_keeping_isr(ctx, partitions, ctx.replicas,
                              preferred_replica_partition_leader_election)


def _elect_keeping_isr(ctx: "ControllerContext", partitions, replicas_of, choose
                       ) -> list[ElectionResult]:
    """A leader chosen by ``choose(replicas, isr, live)`` among ``replicas_of(tp)``, the
    ISR unchanged (reassignment and preferred elections)."""
    results = []
    for tp, current in partitions:
        replicas = replicas_of(tp)
        live = [r for r in replicas if ctx.is_replica_online(r, tp)]
        leader = choose(replicas, current.isr, set(live))
        new = current.new_leader_and_isr(leader, current.isr) if leader is not None else None
        results.append(ElectionResult(tp, new, live))
    return results


def leader_for_controlled_shutdown(ctx: "ControllerContext",
                                   partitions: Iterable[tuple["TopicPartition", "LeaderAndIsr"]]
                                   ) -> list[ElectionResult]:
    """Kafka's ``Election.leaderForControlledShutdown``: shutting-down brokers count
    as live for the recipients but cannot lead and leave the ISR."""
    shutting_down = set(ctx.shutting_down_broker_ids)
    results = []
    for tp, current in partitions:
        assignment = ctx.replicas(tp)
        live = [r for r in assignment if ctx.is_replica_online(r, tp, include_shutting_down=True)]
        leader = controlled_shutdown_partition_leader_election(assignment, current.isr,
                                                               set(live), shutting_down)
        new = None
        if leader is not None:
            new = current.new_leader_and_isr(
                leader, [r for r in current.isr if r not in shutting_down])
        results.append(ElectionResult(tp, new, live))
    return results
