"""Partition reassignment (Kafka 3.9's ZooKeeper-mode KafkaController: onPartitionReassignment
and the steps and bookkeeping around it).

Job: move a partition from its original replicas ORS to target replicas TRS, as asked by
AlterPartitionReassignments (API), by ``/admin/reassign_partitions`` (the legacy znode), or
resumed at failover / when a target broker starts.  The full replica set RS, the adding
replicas AR = TRS - ORS and the removing replicas RR = ORS - TRS live in the topic znode
and in the context (``ReplicaAssignment``).

Phases (Kafka's, for one partition):
 U. RS = TRS + ORS, AR, RR written to ``/brokers/topics/<t>`` first, then to memory (the
    znode is the only lasting record of ORS); replicas a replaced reassignment was adding
    and the new one does not want are stopped and deleted;
 A. TRS not yet in the ISR: bump the leader epoch (state znode) and send LeaderAndIsr
    with RS/AR/RR to ORS and (is_new) AR; AR replicas -> NewReplica;
 B. TRS in the ISR: AR -> OnlineReplica; RS = TRS in memory; a new leader from TRS if the
    leader is not in TRS or is dead, else a leader-epoch bump with RS = TRS; RR ->
    Offline (out of the ISR, StopReplica) -> ReplicaDeletionStarted (StopReplica with
    delete) -> Successful -> NonExistent; RS = TRS written to the znode; the partition
    leaves the in-flight set and the legacy znode; UpdateMetadata to every broker; a
    topic deletion waiting on it resumes.
Cancellation is a reassignment back to ORS (AR stopped and deleted in phase U).

Invariants:
 - runs on the controller's event task only, on the active controller;
 - ``ctx.partitions_being_reassigned`` holds exactly the partitions started and not yet
   completed; a partition in it has its topic marked ineligible for deletion;
 - completion is decided from the state znode (TRS subset of the ISR), never from a
   cached ISR; it is checked wherever that ISR may have changed;
 - ``ControllerMovedError`` (and a lost store connection) propagate: the controller
   resigns; other failures of one partition are its UNKNOWN_SERVER_ERROR (a request) or
   logged (a resume, an ISR change), never the failure of the others.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable, Mapping

import structlog

from kafkapy.controller.context import PartitionStateName, ReplicaAssignment, ReplicaState
from kafkapy.controller.leader_election import REASSIGN
from kafkapy.controller.log_text import tp_text, tps_text
from kafkapy.controller.zk_writes import ControllerMovedError, StateChangeFailedError
from kafkapy.jvm import scala_set
from kafkapy.metadata import paths
from kafkapy.metadata.leader_and_isr import LeaderAndIsr
from kafkapy.metadata.store import STORE_UNAVAILABLE, NoNodeError
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.topic_partition import TopicPartition

if TYPE_CHECKING:
    from kafkapy.controller.context import ControllerContext
    from kafkapy.controller.partition_state_machine import PartitionStateMachine
    from kafkapy.controller.replica_state_machine import ReplicaStateMachine
    from kafkapy.controller.request_batch import ControllerBrokerRequestBatch
    from kafkapy.controller.topic_deletion import TopicDeletionManager
    from kafkapy.controller.zk_writes import ZkWrites

_log = structlog.get_logger("kafkapy.controller.reassignment")
_state_log = structlog.get_logger("kafkapy.state.change")

#: (error code, message) per partition, as Kafka's ApiError
ApiError = tuple[int, "str | None"]

NONE: ApiError = (ErrorCode.NO_ERROR, None)
# Kafka's default messages (``new ApiError(error)`` carries ``error.message()``)
NO_REASSIGNMENT_MESSAGE = "No partition reassignment is in progress."
UNKNOWN_SERVER_ERROR_MESSAGE = ("The server experienced an unexpected error when processing "
                                "the request.")
PARTITION_DOES_NOT_EXIST = "The partition does not exist."

#: Rounds of re-reading the state znode after version conflicts (Kafka loops unbounded).
_MAX_EPOCH_BUMP_ROUNDS = 10
_REASON = "topic reassignment in progress"
#: errors that mean the store is gone for now: the controller resigns and runs again
_PROPAGATE = (ControllerMovedError, *STORE_UNAVAILABLE)


class PartitionReassignments:
    """Kafka's reassignment steps over the controller's context, state machines, znode
    writes and request batch.  ``znode_watch`` is the exists watch of
    ``/admin/reassign_partitions``; ``enqueue`` puts a controller event on the queue."""

    def __init__(self, ctx: "ControllerContext", zk: "ZkWrites",
                 batch: "ControllerBrokerRequestBatch", rsm: "ReplicaStateMachine",
                 psm: "PartitionStateMachine", deletion: "TopicDeletionManager", *,
                 znode_watch: Callable, rearm_znode_watch: Callable[[], None]) -> None:
        self._ctx = ctx
        self._zk = zk
        self._batch = batch
        self._rsm = rsm
        self._psm = psm
        self._deletion = deletion
        self._znode_watch = znode_watch
        self._rearm = rearm_znode_watch

    # -- entry points -------------------------------------------------------------------
    def initialize(self) -> None:
        """At failover (Kafka's initializePartitionReassignments): the legacy znode first
        (it supplants API reassignments of the same partitions), then resume the others
        found in the topic znodes."""
        resumed = self.process_zk()
        self.maybe_resume(lambda tp, _: tp not in resumed)

    def maybe_resume(self, should_resume: Callable[["TopicPartition", ReplicaAssignment], bool]
                     ) -> None:
        """Kafka's maybeResumeReassignments, one partition's failure logged: in Kafka it
        fails the whole failover (or broker start-up), so a partition that cannot resume
        (no state znode, no live replica) would leave the cluster without a controller,
        each new one resigning at once.  It stays in flight and resumes later."""
        for tp in sorted(self._ctx.partitions_being_reassigned):
            assignment = self._ctx.full_assignment(tp)
            if should_resume(tp, assignment):
                try:
                    self.on_partition_reassignment(tp, assignment)
                except _PROPAGATE:
                    raise
                except Exception:   # noqa: BLE001 - one partition must not stop the others
                    _log.exception(f"Error resuming reassignment of partition {tp_text(tp)}")

    def on_broker_startup(self, new_brokers: Iterable[int]) -> None:
        """Resume reassignments with a target replica on a broker that just started."""
        new = set(new_brokers)
        self.maybe_resume(lambda _, a: any(r in new for r in a.target_replicas))

    def process_api(self, reassignments: "Mapping[TopicPartition, list[int] | None]"
                    ) -> "dict[TopicPartition, ApiError]":
        """Kafka's processApiPartitionReassignment: validate, build, drop the same
        partitions from the legacy znode (the latest request wins), start."""
        results: dict = {}
        to_reassign: dict = {}
        for tp, target in reassignments.items():
            error = self._validate_replicas(tp, target) if target is not None else None
            if error is not None:
                results[tp] = error
                continue
            built = self._maybe_build_reassignment(tp, target)
            if built is None:
                results[tp] = (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, NO_REASSIGNMENT_MESSAGE)
            else:
                to_reassign[tp] = built
        self._maybe_remove_from_zk_reassignment(lambda tp, _: tp in to_reassign)
        results.update(self._maybe_trigger(to_reassign))
        return results

    def process_zk(self) -> "set[TopicPartition]":
        """Kafka's processZkPartitionReassignment: watch ``/admin/reassign_partitions``
        (exists) and start what it asks; partitions that failed leave the znode.
        Returns the partitions started."""
        if self._zk.store.exists(paths.ADMIN_REASSIGN_PARTITIONS, watch=self._znode_watch) is None:
            return set()
        to_reassign = {tp: self._maybe_build_reassignment(tp, target)
                       for tp, target in self._zk.get_partition_reassignment().items()}
        results = self._maybe_trigger(to_reassign)
        failed = {tp: r for tp, r in results.items() if r[0] != ErrorCode.NO_ERROR}
        if failed:
            _log.warning(f"Failed reassignment through zk with the following errors: "
                         f"{_errors_text(failed)}")
            self._maybe_remove_from_zk_reassignment(lambda tp, _: tp in failed)
        return {tp for tp, r in results.items() if r[0] == ErrorCode.NO_ERROR}

    def list(self, partitions: "Iterable[TopicPartition] | None"
             ) -> "dict[TopicPartition, ReplicaAssignment]":
        """Kafka's processListPartitionReassignments: the named partitions (None: every
        one in flight) that are being reassigned, with RS, AR and RR."""
        wanted = (sorted(self._ctx.partitions_being_reassigned) if partitions is None
                  else list(dict.fromkeys(partitions)))
        out = {}
        for tp in wanted:
            assignment = self._ctx.full_assignment(tp)
            if assignment.is_being_reassigned:
                out[tp] = assignment
        return out

    def on_isr_changed(self, partitions: "Iterable[TopicPartition]") -> None:
        """The ISR of these partitions may have changed: complete the reassignments
        whose targets are now all in sync (Kafka's maybeCompleteReassignment)."""
        for tp in list(dict.fromkeys(partitions)):
            if (tp in self._ctx.partitions_being_reassigned
                    and not self._ctx.is_topic_deletion_in_progress(tp[0])):
                try:
                    self._maybe_complete(tp)
                except _PROPAGATE:
                    raise
                except Exception:   # noqa: BLE001 - one partition must not stop the others
                    _log.exception(f"Error completing reassignment of partition {tp_text(tp)}")

    # -- onPartitionReassignment ----------------------------------------------------------
    def on_partition_reassignment(self, tp: "TopicPartition",
                                  reassignment: ReplicaAssignment) -> None:
        """Kafka's onPartitionReassignment (see the module docstring)."""
        ctx = self._ctx
        self._deletion.mark_topic_ineligible_for_deletion({tp[0]}, _REASON)
        self._update_current_reassignment(tp, reassignment)
        adding, removing = reassignment.adding_replicas, reassignment.removing_replicas
        if not self._is_complete(tp, reassignment):
            # A1: the new RS (with AR/RR) to ORS + TRS under a bumped leader epoch
            self._update_leader_epoch_and_send(tp, reassignment)
            # A2: the adding replicas start
            for r in adding:
                self._rsm.handle_state_changes([(tp, r)], ReplicaState.NEW)
            return
        self._rsm.handle_state_changes([(tp, r) for r in adding], ReplicaState.ONLINE)   # B1
        completed = ReplicaAssignment.of(reassignment.target_replicas)
        ctx.update_full_assignment(tp, completed)                                         # B2
        self._move_leader_if_required(tp, completed)                                      # B3
        self._stop_removed_replicas(tp, removing)                                         # B4-5
        self._update_replica_assignment(tp, completed)                                    # B6
        self._remove_from_reassigning(tp, completed)                                      # B7
        self._batch.new_batch()                                                           # B8
        self._batch.add_update_metadata(sorted(ctx.live_or_shutting_down_broker_ids()), [tp])
        self._batch.send()
        _log.info(f"Completed reassignment of partition {tp_text(tp)} to "
                  f"{_csv(completed.replicas)}")
        self._deletion.resume_deletion_for_topics({tp[0]})

    def _update_current_reassignment(self, tp: "TopicPartition",
                                     reassignment: ReplicaAssignment) -> None:
        """Phase U (Kafka's updateCurrentReassignment): znode, then memory; replicas of a
        replaced (or cancelled) reassignment that the new one drops are removed."""
        current = self._ctx.full_assignment(tp)
        if current != reassignment:
            _log.debug(f"Updating assignment of partition {tp_text(tp)} from {current} to "
                       f"{reassignment}")
            self._update_replica_assignment(tp, reassignment)
            self._ctx.update_full_assignment(tp, reassignment)
            unneeded = [r for r in current.replicas if r not in reassignment.replicas]
            if unneeded:
                self._stop_removed_replicas(tp, unneeded)
        self._ctx.partitions_being_reassigned.add(tp)

    def _maybe_trigger(self, reassignments: "Mapping[TopicPartition, ReplicaAssignment]"
                       ) -> "dict[TopicPartition, ApiError]":
        """Kafka's maybeTriggerPartitionReassignment: start each one unless its topic is
        being deleted or the partition does not exist."""
        results: dict = {}
        for tp, reassignment in reassignments.items():
            if self._deletion.is_topic_queued_up_for_deletion(tp[0]):
                _log.info(f"Skipping reassignment of {tp_text(tp)} since the topic is currently "
                          f"being deleted")
                results[tp] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, PARTITION_DOES_NOT_EXIST)
            elif not self._ctx.replicas(tp):
                results[tp] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, PARTITION_DOES_NOT_EXIST)
            else:
                try:
                    self.on_partition_reassignment(tp, reassignment)
                    results[tp] = NONE
                except _PROPAGATE:
                    _log.info(f"Failed completing reassignment of partition {tp_text(tp)} because "
                              f"controller has moved to another broker")
                    raise
                except Exception:       # noqa: BLE001 - Kafka answers UNKNOWN_SERVER_ERROR
                    _log.exception(f"Error completing reassignment of partition {tp_text(tp)}")
                    results[tp] = (ErrorCode.UNKNOWN, UNKNOWN_SERVER_ERROR_MESSAGE)
        return results

    # -- validation (Kafka's validateReplicas / maybeBuildReassignment) -------------------
    def _validate_replicas(self, tp: "TopicPartition", replicas: list[int]) -> ApiError | None:
        if not replicas:
            return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    "Empty replica list specified in partition reassignment.")
        if len(set(replicas)) != len(replicas):
            return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"Duplicate replica ids in partition reassignment replica list: "
                    f"{_scala_buffer(replicas)}")
        if any(r < 0 for r in replicas):
            return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"Invalid broker id in replica list: {_scala_buffer(replicas)}")
        new = self._ctx.full_assignment(tp).reassign_to(replicas)
        live = self._ctx.live_broker_ids()
        if not set(new.adding_replicas) <= live:
            return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"Replica assignment has brokers that are not alive. Replica list: "
                    f"{_scala_buffer(new.adding_replicas)}, live broker list: "
                    f"{scala_set(sorted(live))}")
        return None

    def _maybe_build_reassignment(self, tp: "TopicPartition", target: list[int] | None
                                  ) -> ReplicaAssignment | None:
        """The reassignment to run: to ``target``, or for a cancellation (None) back to
        ORS; None when cancelling and nothing is in flight."""
        current = self._ctx.full_assignment(tp)
        if current.is_being_reassigned:
            return current.reassign_to(target if target is not None else current.origin_replicas)
        return current.reassign_to(target) if target is not None else None

    # -- steps ------------------------------------------------------------------------------
    def _is_complete(self, tp: "TopicPartition", assignment: ReplicaAssignment) -> bool:
        """Kafka's isReassignmentComplete: TRS within the ISR of the state znode."""
        if not assignment.is_being_reassigned:
            return True
        current = self._zk.get_partition_states([tp]).get(tp)
        if isinstance(current, _PROPAGATE):
            raise current
        if not isinstance(current, LeaderAndIsr):
            return False
        return set(assignment.target_replicas) <= set(current.isr)

    def _maybe_complete(self, tp: "TopicPartition") -> None:
        reassignment = self._ctx.full_assignment(tp)
        if self._is_complete(tp, reassignment):
            _log.info(f"Target replicas {_csv(reassignment.target_replicas)} have all caught up "
                      f"with the leader for reassigning partition {tp_text(tp)}")
            self.on_partition_reassignment(tp, reassignment)

    def _move_leader_if_required(self, tp: "TopicPartition", assignment: ReplicaAssignment
                                 ) -> None:
        """B3 (Kafka's moveReassignedPartitionLeaderIfRequired)."""
        ctx = self._ctx
        current = ctx.partition_leadership(tp)
        if current is None:
            raise StateChangeFailedError(f"no leader and ISR known for partition {tp_text(tp)}")
        leader, replicas = current.leader, _csv(assignment.replicas)
        if leader not in assignment.replicas:
            _log.info(f"Leader {leader} for partition {tp_text(tp)} being reassigned, is not "
                      f"in the new list of replicas {replicas}. Re-electing leader")
            self._psm.handle_state_changes([tp], PartitionStateName.ONLINE, REASSIGN)
        elif ctx.is_replica_online(leader, tp):
            _log.info(f"Leader {leader} for partition {tp_text(tp)} being reassigned, is "
                      f"already in the new list of replicas {replicas} and is alive")
            self._update_leader_epoch_and_send(tp, assignment)
        else:
            _log.info(f"Leader {leader} for partition {tp_text(tp)} being reassigned, is "
                      f"already in the new list of replicas {replicas} but is dead")
            self._psm.handle_state_changes([tp], PartitionStateName.ONLINE, REASSIGN)

    def _stop_removed_replicas(self, tp: "TopicPartition", removed: Iterable[int]) -> None:
        """B4/B5 (Kafka's stopRemovedReplicasOfReassignedPartition): out of the ISR and
        stopped, then deleted and forgotten."""
        replicas = [(tp, r) for r in removed]
        if not replicas:
            return
        for target in (ReplicaState.OFFLINE, ReplicaState.DELETION_STARTED,
                       ReplicaState.DELETION_SUCCESSFUL, ReplicaState.NON_EXISTENT):
            self._rsm.handle_state_changes(replicas, target)

    def _update_replica_assignment(self, tp: "TopicPartition", assignment: ReplicaAssignment
                                   ) -> None:
        """Kafka's updateReplicaAssignmentForPartition: the topic znode with this
        partition's new full assignment (the others as the context has them)."""
        topic = tp[0]
        assignments = self._ctx.full_assignments_for_topic(topic)
        assignments[tp[1]] = assignment
        try:
            self._zk.set_topic_assignment(topic, self._ctx.topic_ids.get(topic), assignments)
        except NoNodeError:
            raise StateChangeFailedError(f"Failed to update assignment for {tp_text(tp)} since the "
                                         f"topic has no current assignment") from None
        _log.info(f"Successfully updated assignment of partition {tp_text(tp)} to {assignment}")

    def _update_leader_epoch_and_send(self, tp: "TopicPartition",
                                      assignment: ReplicaAssignment) -> None:
        """Kafka's updateLeaderEpochAndSendRequest: ORS get LeaderAndIsr, AR get it as
        new replicas (free to pick a healthy log dir)."""
        updated = self._update_leader_epoch(tp)
        if updated is None:
            _state_log.error(f"Failed to send LeaderAndIsr request with new replica assignment "
                             f"{assignment} to leader for partition being reassigned {tp_text(tp)}")
            return
        # A BatchStateError here makes the controller resign (its event's recovery)
        self._batch.new_batch()
        self._batch.add_leader_and_isr(assignment.origin_replicas, tp, updated, assignment,
                                       is_new=False)
        self._batch.add_leader_and_isr(assignment.adding_replicas, tp, updated, assignment,
                                       is_new=True)
        self._batch.send()
        _state_log.info(f"Sent LeaderAndIsr request {updated} with new replica assignment "
                        f"{assignment} to leader {updated.leader} for partition being "
                        f"reassigned {tp_text(tp)}")

    def _update_leader_epoch(self, tp: "TopicPartition") -> LeaderAndIsr | None:
        """Kafka's updateLeaderEpoch: the state znode re-read and written back with the
        leader epoch + 1 (leader and ISR unchanged), so the leader takes the new RS."""
        ctx = self._ctx
        for _ in range(_MAX_EPOCH_BUMP_ROUNDS):
            current = self._zk.get_partition_states([tp]).get(tp)
            if isinstance(current, Exception):
                raise current
            if current is None:
                raise StateChangeFailedError(
                    f"Cannot update leader epoch for partition {tp_text(tp)} as leaderAndIsr path "
                    f"is empty. This could mean we somehow tried to reassign a partition that "
                    f"doesn't exist")
            if current.controller_epoch > ctx.epoch:
                raise StateChangeFailedError(
                    f"Leader and isr path written by another controller. This probably means the "
                    f"current controller with epoch {ctx.epoch} went through a soft failure and "
                    f"another controller was elected with epoch {current.controller_epoch}. "
                    f"Aborting state change by this controller")
            result = self._zk.update_leader_and_isr({tp: current.new_epoch()})
            outcome = result.finished.get(tp)
            if isinstance(outcome, Exception):
                raise outcome
            if outcome is not None:
                ctx.put_leadership(tp, outcome)
                _log.info(f"Updated leader epoch for partition {tp_text(tp)} to "
                          f"{outcome.leader_epoch}, zkVersion={outcome.partition_epoch}")
                return outcome
        return None

    def _remove_from_reassigning(self, tp: "TopicPartition", assignment: ReplicaAssignment
                                 ) -> None:
        """B7 (Kafka's removePartitionFromReassigningPartitions)."""
        if tp not in self._ctx.partitions_being_reassigned:
            raise StateChangeFailedError("Cannot remove a reassigning partition because it is "
                                         "not present in memory")
        replicas = list(assignment.replicas)
        self._maybe_remove_from_zk_reassignment(
            lambda t, r: t == tp and list(r) == replicas)
        self._ctx.partitions_being_reassigned.discard(tp)

    def _maybe_remove_from_zk_reassignment(
            self, should_remove: Callable[["TopicPartition", list[int]], bool]) -> None:
        """Kafka's maybeRemoveFromZkReassignment: rewrite the legacy znode without the
        partitions matched; delete it when none is left (and watch for the next one)."""
        if not self._zk.reassign_partitions_in_progress():
            return
        current = self._zk.get_partition_reassignment()
        keep = {tp: r for tp, r in current.items() if not should_remove(tp, r)}
        removing = [tp for tp in current if tp not in keep]
        _log.info(f"Removing partitions {tps_text(removing)} from the list of reassigned "
                  f"partitions in zookeeper")
        if not keep:
            _log.info(f"No more partitions need to be reassigned. Deleting zk path "
                      f"{paths.ADMIN_REASSIGN_PARTITIONS}")
            self._zk.delete_partition_reassignment()
            self._rearm()
        else:
            self._zk.set_or_create_partition_reassignment(keep)


# -- text as Kafka prints it ---------------------------------------------------------
def _csv(ids: Iterable[int]) -> str:
    return ",".join(str(i) for i in ids)


def _scala_buffer(ids: Iterable[int]) -> str:
    """A Scala ``ArrayBuffer`` as Kafka's messages print the request's replica list."""
    return f"ArrayBuffer({', '.join(str(i) for i in ids)})"


def _errors_text(errors: "Mapping[TopicPartition, ApiError]") -> str:
    return ", ".join(f"{tp_text(tp)} -> ApiError(error={code}, message={msg})"
                     for tp, (code, msg) in errors.items())
