"""The controller's leader/ISR znode reads and writes (the leader-and-isr parts of
Kafka 3.9's ``KafkaZkClient``: createTopicPartitionStatesRaw, getTopicPartitionStatesRaw,
updateLeaderAndIsr, deleteTopicZNode, deleteTopicConfigs, deleteTopicDeletions; for
reassignments setTopicAssignmentRaw and the ``/admin/reassign_partitions`` reads/writes).

Job: turn the state machines' decisions into znode writes on
``/brokers/topics/<t>/partitions/<p>/state`` and report, per partition, what happened.

Invariants:
 - every write is fenced: each ``multi`` starts with ``CheckOp(/controller_epoch,
   ctx.epoch_zk_version)``; when that check fails another controller was elected and
   ``ControllerMovedError`` is raised (the caller resigns); nothing of that multi
   was applied;
 - a state znode is updated only at the zk version the controller last saw
   (``LeaderAndIsr.partition_epoch``); a ``BadVersionError`` means someone else (a newer
   controller, a leader's AlterPartition) changed it: the partition is reported
   "to retry" so the caller re-reads and re-decides, as Kafka does;
 - writes are batched in multis of at most ``OPS_PER_MULTI`` operations (ZooKeeper's
   request size limit; on a store without one, ``bounded_multi = False`` as the
   embedded store, a batch of up to ``UNBOUNDED_OPS_PER_MULTI`` is first tried as one
   multi: the 10,000 partition states of a new topic are one write of its file); one
   failing operation does not fail the others: it is reported for its partition and
   the rest of the multi is retried without it (Kafka issues one multi per partition;
   the outcome per partition is the same).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Hashable, Iterable, Sequence

import structlog

from kafkapy.controller.context import ControllerContext, ReplicaAssignment
from kafkapy.metadata import paths
from kafkapy.metadata.leader_and_isr import LeaderAndIsr
from kafkapy.metadata.store import (
    BadVersionError, CheckOp, CreateOp, DeleteOp, MetadataStore, NoNodeError,
    NotEmptyError, Op, SetDataOp, join_path)
from kafkapy.protocol.topic_partition import TopicPartition

_log = structlog.get_logger("kafkapy.controller.zk_writes")

#: Operations per multi, the epoch check included (Kafka's controller batches stay
#: well below ZooKeeper's 1 MB jute.maxbuffer at this size).
OPS_PER_MULTI = 1000
#: Operations per multi on a store with no request size limit (the embedded store).
UNBOUNDED_OPS_PER_MULTI = 100_000


class ControllerMovedError(Exception):
    """The ``/controller_epoch`` check failed: another broker is the controller now
    (Kafka's ``ControllerMovedException``).  The controller must resign."""


class StateChangeFailedError(Exception):
    """A partition or replica state change could not be made (Kafka's
    ``StateChangeFailedException``); reported per partition, never raised through."""


@dataclass(slots=True)
class UpdateLeaderAndIsrResult:
    """Kafka's ``UpdateLeaderAndIsrResult``: ``finished`` maps each partition to its
    written ``LeaderAndIsr`` (new zk version) or the exception that failed it;
    ``to_retry`` lists partitions whose znode version had moved (BadVersion)."""
    finished: "dict[TopicPartition, LeaderAndIsr | Exception]" = field(default_factory=dict)
    to_retry: "list[TopicPartition]" = field(default_factory=list)


class ZkWrites:
    """Leader/ISR znode access for the active controller; ``ctx`` gives the controller
    epoch (written into the state payloads) and ``epoch_zk_version`` (the fence)."""

    def __init__(self, store: "MetadataStore", ctx: "ControllerContext") -> None:
        self.store = store
        self._ctx = ctx

    # -- partition state znodes -------------------------------------------------
    def create_partition_states(self, states: "dict[TopicPartition, LeaderAndIsr]"
                                ) -> "dict[TopicPartition, LeaderAndIsr | Exception]":
        """Create ``.../partitions``, ``.../partitions/<p>`` (if missing) and the state
        znode of each partition (Kafka's createTopicPartitionStatesRaw).

        Returns, per partition, the written ``LeaderAndIsr`` (zk version 0, controller
        epoch = ours) or the exception (``NodeExistsError`` if the state znode already
        exists, ``NoNodeError`` if the topic znode is gone).  Raises
        ``ControllerMovedError``.
        """
        if not states:
            return {}
        parents: dict[Hashable, Op] = {}
        for topic in sorted({tp[0] for tp in states}):
            parents[topic] = CreateOp(paths.topic_partitions_path(topic))
        for tp in states:
            parents[tp] = CreateOp(paths.topic_partition_path(*tp))
        # Parent nodes: NodeExists is fine, anything else shows on the state create.
        self._multi_each(list(parents.items()))
        ops = [(tp, CreateOp(paths.partition_state_path(*tp), self._encode(li)))
               for tp, li in states.items()]
        out: dict = {}
        for tp, result in self._multi_each(ops).items():
            out[tp] = (result if isinstance(result, Exception)
                       else states[tp].with_partition_epoch(0, self._ctx.epoch))
        return out

    def get_partition_states(self, partitions: "Iterable[TopicPartition]"
                             ) -> "dict[TopicPartition, LeaderAndIsr | None | Exception]":
        """Read each state znode (Kafka's getTopicPartitionStatesRaw + decode): the
        ``LeaderAndIsr`` with its zk version, None if the znode does not exist, or the
        exception that failed the read (unparsable payload included)."""
        partitions = list(partitions)
        read = self.store.get_many([paths.partition_state_path(*tp) for tp in partitions])
        out: dict = {}
        for tp, got in zip(partitions, read):
            if isinstance(got, NoNodeError):
                out[tp] = None
                continue
            try:
                if isinstance(got, Exception):
                    raise got
                data, stat = got
                out[tp] = paths.decode_partition_state(data, stat)
            except Exception as e:      # noqa: BLE001 - reported per partition
                out[tp] = e
        return out

    def update_leader_and_isr(self, leader_isrs: "dict[TopicPartition, LeaderAndIsr]"
                              ) -> UpdateLeaderAndIsrResult:
        """Write each partition's new leader/ISR conditionally on its ``partition_epoch``
        (Kafka's updateLeaderAndIsr).  Written partitions come back with the new zk
        version and our controller epoch; BadVersion -> ``to_retry``; other failures
        (e.g. NoNode) -> the exception in ``finished``.  Raises ``ControllerMovedError``.
        """
        result = UpdateLeaderAndIsrResult()
        if not leader_isrs:
            return result
        ops = [(tp, SetDataOp(paths.partition_state_path(*tp), self._encode(li),
                              li.partition_epoch))
               for tp, li in leader_isrs.items()]
        try:
            outcomes = self._multi_each(ops)
        except ControllerMovedError:
            raise
        except Exception as e:          # noqa: BLE001 - Kafka fails every partition
            result.finished = {tp: e for tp in leader_isrs}
            return result
        for tp, outcome in outcomes.items():
            if isinstance(outcome, BadVersionError):
                result.to_retry.append(tp)
            elif isinstance(outcome, Exception):
                result.finished[tp] = outcome
            else:
                result.finished[tp] = leader_isrs[tp].with_partition_epoch(outcome.version,
                                                                      self._ctx.epoch)
        return result

    # -- topic deletion -----------------------------------------------------------
    def delete_topic(self, topic: str) -> None:
        """Remove a deleted topic's znodes (Kafka's ControllerDeletionClient.deleteTopic):
        ``/brokers/topics/<t>`` with everything below, ``/config/topics/<t>``, then
        ``/admin/delete_topics/<t>``.  Missing nodes are fine.  Raises
        ``ControllerMovedError``."""
        self._delete_recursive(paths.topic_path(topic))
        self._delete_if_exists([paths.topic_config_path(topic)])
        self.delete_topic_deletions([topic])

    def delete_topic_deletions(self, topics: Iterable[str]) -> None:
        """Remove ``/admin/delete_topics/<t>`` markers (missing ones are fine)."""
        self._delete_if_exists([paths.delete_topic_path(t) for t in topics])

    # -- notifications -----------------------------------------------------------------
    def delete_notifications(self, parent: str, names: Iterable[str]) -> None:
        """Delete processed notification znodes ``<parent>/<name>`` (ISR changes, log dir
        events), one fenced write each; missing ones are fine."""
        for name in names:
            try:
                self.write_fenced(DeleteOp(f"{parent}/{name}"))
            except NoNodeError:
                pass

    # -- reassignment ---------------------------------------------------------------
    def set_topic_assignment(self, topic: str, topic_id: str | None,
                             assignment: "dict[int, ReplicaAssignment]", *,
                             version: int = -1) -> None:
        """Write ``/brokers/topics/<t>`` with RS, AR and RR per partition, at ``version``
        (-1: any; Kafka's setTopicAssignmentRaw).  Raises ``NoNodeError`` if the topic
        znode is gone, ``BadVersionError``, ``ControllerMovedError``."""
        payload = paths.encode_topic_assignment(
            {p: a.replicas for p, a in assignment.items()}, topic_id,
            {p: a.adding_replicas for p, a in assignment.items()},
            {p: a.removing_replicas for p, a in assignment.items()})
        self.write_fenced(SetDataOp(paths.topic_path(topic), payload, version))

    def get_partition_reassignment(self) -> "dict[TopicPartition, list[int]]":
        """``/admin/reassign_partitions`` (Kafka's getPartitionReassignment): empty when
        missing or unreadable (logged, as Kafka ignores invalid json)."""
        try:
            data, _ = self.store.get(paths.ADMIN_REASSIGN_PARTITIONS)
        except NoNodeError:
            return {}
        try:
            return paths.decode_reassign_partitions(data)
        except (ValueError, KeyError, TypeError) as e:
            _log.warning(f"Ignoring partition reassignment due to invalid json: {e}")
            return {}

    def reassign_partitions_in_progress(self) -> bool:
        return self.store.exists(paths.ADMIN_REASSIGN_PARTITIONS) is not None

    def set_or_create_partition_reassignment(
            self, reassignment: "dict[TopicPartition, list[int]]") -> None:
        """Kafka's setOrCreatePartitionReassignment (fenced)."""
        payload = paths.encode_reassign_partitions(reassignment)
        try:
            self.write_fenced(SetDataOp(paths.ADMIN_REASSIGN_PARTITIONS, payload, -1))
        except NoNodeError:
            self.write_fenced(CreateOp(paths.ADMIN_REASSIGN_PARTITIONS, payload))

    def delete_partition_reassignment(self) -> None:
        """Kafka's deletePartitionReassignment (fenced; missing is fine)."""
        self._delete_if_exists([paths.ADMIN_REASSIGN_PARTITIONS])

    # -- helpers ----------------------------------------------------------------
    def write_fenced(self, op: Op) -> Any:
        """One op behind the controller-epoch fence: its result, or its error raised
        (``ControllerMovedError`` when the fence fails)."""
        outcome = self._multi_each([(None, op)])[None]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def _encode(self, li: "LeaderAndIsr") -> bytes:
        return paths.encode_partition_state(li.leader, li.leader_epoch, li.isr,
                                            self._ctx.epoch, li.leader_recovery_state)

    def _delete_if_exists(self, node_paths: Sequence[str]) -> None:
        for key, outcome in self._multi_each([(p, DeleteOp(p)) for p in node_paths]).items():
            if isinstance(outcome, Exception) and not isinstance(outcome, NoNodeError):
                raise outcome

    def _delete_recursive(self, root: str, attempts: int = 5) -> None:
        """Delete ``root`` and its subtree, deepest first, fenced.  A child created
        meanwhile (NotEmpty) re-reads the tree; bounded by ``attempts``."""
        for _ in range(attempts):
            tree = self._subtree(root)
            if not tree:
                return
            outcomes = self._multi_each([(p, DeleteOp(p)) for p in tree])
            errors = [o for o in outcomes.values()
                      if isinstance(o, Exception) and not isinstance(o, NoNodeError)]
            if not errors:
                return
            if not all(isinstance(e, NotEmptyError) for e in errors):
                raise errors[0]
        raise NotEmptyError(f"{root} kept gaining children while being deleted")

    def _subtree(self, root: str) -> list[str]:
        """``root`` and its descendants, children before parents; empty if missing."""
        out: list[str] = []

        def walk(path: str) -> None:
            try:
                children = self.store.get_children(path)
            except NoNodeError:
                return
            for c in children:
                walk(join_path(path, c))
            out.append(path)

        walk(root)
        return out

    def _multi_each(self, keyed_ops: "list[tuple[Any, Op]]") -> dict:
        """Apply ops in fenced multis of at most ``OPS_PER_MULTI``; returns, per key,
        the op's result or the exception that failed that op alone.  A failing op is
        dropped and the rest of its multi retried (bounded by the multi's size).

        On a store without a request size limit the whole batch is first tried as one
        multi (one file write); only if an op of it fails do the bounded multis take
        over, so that each failing op costs a retry of at most ``OPS_PER_MULTI`` ops."""
        if (not getattr(self.store, "bounded_multi", True)
                and OPS_PER_MULTI - 1 < len(keyed_ops) <= UNBOUNDED_OPS_PER_MULTI - 1):
            try:
                results = self._fenced_multi([op for _, op in keyed_ops])
            except _OpFailed:
                pass
            else:
                return {key: r for (key, _), r in zip(keyed_ops, results)}
        out: dict = {}
        step = OPS_PER_MULTI - 1
        for start in range(0, len(keyed_ops), step):
            pending = list(keyed_ops[start:start + step])
            for _ in range(len(pending) + 1):
                if not pending:
                    break
                try:
                    results = self._fenced_multi([op for _, op in pending])
                except _OpFailed as failed:
                    key, op = pending.pop(failed.index)
                    out[key] = failed.error
                    continue
                for (key, _), r in zip(pending, results):
                    out[key] = r
                break
        return out

    def _fenced_multi(self, ops: "list[Op]") -> list:
        """One multi behind the controller-epoch check: the ops' results.  Raises
        ``ControllerMovedError`` when the check fails, ``_OpFailed`` naming the op that
        failed the multi (nothing applied), or a store error that names no op."""
        fence = CheckOp(paths.CONTROLLER_EPOCH, self._ctx.epoch_zk_version)
        try:
            return self.store.multi([fence] + ops)[1:]
        except Exception as e:      # noqa: BLE001 - op_index tells store errors
            index = getattr(e, "op_index", None)
            if index is None:
                raise
            if index == 0:
                raise ControllerMovedError(
                    f"controller epoch zk version {self._ctx.epoch_zk_version} "
                    f"is no longer current ({type(e).__name__})") from e
            raise _OpFailed(index - 1, e) from e


class _OpFailed(Exception):
    """Op ``index`` of a fenced multi failed with ``error``; the multi applied nothing."""

    def __init__(self, index: int, error: Exception) -> None:
        super().__init__(index, error)
        self.index = index
        self.error = error
