"""Share groups' offsets in the group coordinator: DescribeShareGroupOffsets,
AlterShareGroupOffsets and DeleteShareGroupOffsets (Kafka 4.2's GroupCoordinatorService
and GroupMetadataManager paths of the same names), a mixin of ``GroupCoordinator``.

A share group keeps no offsets itself: a share partition's start offset is the share
coordinator's state, reached through the persister (``ShareOps.persister``), and the
group's ShareGroupStatePartitionMetadata record (``StatePartitions``) says which share
partitions have state (initializing, initialized, deleting).

- ``describe_share_group_offsets(group, topics, end_offsets)``: with topics named, each
  partition's state summary (``Persister.read_summary``), as Kafka does without looking
  at the group (a topic the metadata does not know: start offset -1, topic id zero); with
  ``topics`` None, the group's initialized partitions (NOT_COORDINATOR and
  COORDINATOR_LOAD_IN_PROGRESS as for any group operation).  A summary that failed is the
  absence of data (start offset -1, leader epoch 0, no error), as in Kafka.  Lag, where
  the start offset and the count of delivered records are known: the partition's end
  offset (``end_offsets``) - start offset - delivered records; -1 otherwise; a partition
  whose end offset cannot be had carries that error.
- ``alter_share_group_offsets(group, topics)``: only for an empty share group, which is
  created when the id is free (Kafka 4.2: offsets may be set before the group is first
  used); GROUP_ID_NOT_FOUND for a group of another kind, NON_EMPTY_GROUP with members.
  Partitions of unknown topics or beyond a topic's count are answered
  UNKNOWN_TOPIC_OR_PARTITION; the others are recorded as initializing (one durable
  write), then initialized in the share coordinator at the given start offset with the
  group epoch as state epoch (``Persister.initialize``), then recorded as initialized;
  a partition the persister refused carries its error (and stays initializing, as in
  Kafka).
- ``delete_share_group_offsets(group, topics)``: only for an empty share group
  (GROUP_ID_NOT_FOUND when there is none, NON_EMPTY_GROUP with members).  A topic whose
  partitions are initialized moves to "deleting" (one durable write), its state is
  deleted (``Persister.delete``), and it leaves "deleting"; a topic already deleting has
  every partition's state deleted again; an unknown topic or one without share state is
  answered UNKNOWN_TOPIC_OR_PARTITION ("There is no offset information to delete." for a
  known one).  A group that never recorded share partitions answers no topics at all, as
  Kafka does.  The answer: deleted topics, then the refused ones.

Errors carry Kafka's messages (``error_message`` has its defaults for the codes these
APIs answer).
"""
from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import structlog

from kafkapy.coordinator.group.consumer_ops import Refused
from kafkapy.coordinator.group.share.group import ShareGroup, StatePartitionsSet
from kafkapy.coordinator.group.share.types import InitTopic, StatePartitions
from kafkapy.coordinator.share.persister import (UNINITIALIZED_START_OFFSET,
                                                 UNKNOWN_DELIVERY_COMPLETE_COUNT, ShareState)
from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.protocol.topic_partition import TopicPartition
from kafkapy.replication import acks

_log = structlog.get_logger("kafkapy.coordinator.group")

DEFAULT_LEADER_EPOCH = 0
UNINITIALIZED_LAG = -1
NO_OFFSET_INFORMATION = "There is no offset information to delete."

#: Kafka's Errors.X.message() for the codes these APIs answer.
_MESSAGES = {
    E.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
    E.LEADER_NOT_AVAILABLE: "There is no leader for this topic-partition as we are in the "
                            "middle of a leadership election.",
    E.NOT_LEADER_OR_FOLLOWER: "For requests intended only for the leader, this error "
                              "indicates that the broker is not the current leader. For "
                              "requests intended for any replica, this error indicates that "
                              "the broker is not a replica of the topic partition.",
    E.COORDINATOR_LOAD_IN_PROGRESS: "The coordinator is loading and hence can't process "
                                    "requests.",
    E.COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
    E.NOT_COORDINATOR: "This is not the correct coordinator.",
    E.INVALID_GROUP_ID: "The configured groupId is invalid.",
    E.TOPIC_AUTHORIZATION_FAILED: "Topic authorization failed.",
    E.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
    E.UNSUPPORTED_VERSION: "The version of API is not supported.",
    E.NON_EMPTY_GROUP: "The group is not empty.",
    E.GROUP_ID_NOT_FOUND: "The group id does not exist.",
    E.NETWORK_EXCEPTION: "The server disconnected before a response was received.",
    E.FENCED_STATE_EPOCH: "The share coordinator rejected the request because the "
                          "share-group state epoch did not match.",
    E.INVALID_REQUEST: "This most likely occurs because of a request being malformed by the "
                       "client library or the message was sent to an incompatible broker. "
                       "See the broker logs for more details.",
}


def error_message(code: int) -> str | None:
    """Kafka's default message for ``code`` (None for no error)."""
    if not code:
        return None
    return _MESSAGES.get(code, E(code).name if code in E._value2member_map_ else str(code))


@dataclass(frozen=True, slots=True)
class PartitionStartOffset:
    """One partition of a DescribeShareGroupOffsets answer."""
    partition: int
    start_offset: int = UNINITIALIZED_START_OFFSET
    leader_epoch: int = DEFAULT_LEADER_EPOCH
    lag: int = UNINITIALIZED_LAG
    error: int = 0
    message: str | None = None


@dataclass(frozen=True, slots=True)
class TopicStartOffsets:
    name: str
    topic_id: uuid.UUID | None       # None: Kafka's zero id (a topic it does not know)
    partitions: tuple[PartitionStartOffset, ...]

    @classmethod
    def failed(cls, name: str, partitions: Sequence[int], error: int) -> "TopicStartOffsets":
        """Every partition answered ``error`` (start offset -1), no topic id."""
        return cls(name, None, tuple(PartitionStartOffset(p, error=error,
                                                          message=error_message(error))
                                     for p in partitions))


@dataclass(frozen=True, slots=True)
class GroupStartOffsets:
    group_id: str
    error: int = 0
    message: str | None = None
    topics: tuple[TopicStartOffsets, ...] = ()


@dataclass(frozen=True, slots=True)
class PartitionResult:
    partition: int
    error: int = 0
    message: str | None = None


@dataclass(frozen=True, slots=True)
class AlteredTopic:
    name: str
    topic_id: uuid.UUID | None
    partitions: tuple[PartitionResult, ...]


@dataclass(frozen=True, slots=True)
class AlterResult:
    """An AlterShareGroupOffsets answer: a group-level error, else per partition."""
    error: int = 0
    message: str | None = None
    topics: tuple[AlteredTopic, ...] = ()


@dataclass(frozen=True, slots=True)
class DeletedTopic:
    name: str
    topic_id: uuid.UUID | None
    error: int = 0
    message: str | None = None


@dataclass(frozen=True, slots=True)
class DeleteResult:
    """A DeleteShareGroupOffsets answer: a group-level error, else per topic."""
    error: int = 0
    message: str | None = None
    topics: tuple[DeletedTopic, ...] = ()


class EndOffsets(Protocol):
    """Partitions' end offsets (ListOffsets LATEST, read uncommitted) from their leaders:
    (error code, offset) each."""

    async def latest_offsets(self, partitions: Sequence[TopicPartition]
                             ) -> Mapping[TopicPartition, tuple[int, int]]: ...


class _NoState:
    """The persister of a coordinator built without a share coordinator: no state kept,
    every call succeeds (as ``ShareOps`` counts new partitions initialized at once)."""

    async def read_summary(self, group_id, topic_id, partition, *, leader_epoch) -> ShareState:
        return ShareState(0)

    async def initialize(self, group_id, topic_id, partition, *, state_epoch, start_offset) -> int:
        return 0

    async def delete(self, group_id, topic_id, partition) -> int:
        return 0


_NO_STATE = _NoState()


class ShareAdminOps:
    # -- DescribeShareGroupOffsets --------------------------------------------------------------
    async def describe_share_group_offsets(
            self, group_id: str, topics: Sequence[tuple[str, Sequence[int]]] | None,
            end_offsets: EndOffsets) -> GroupStartOffsets:
        """``topics``: (name, partitions) asked, or None for every initialized partition."""
        if not self._active:
            return _group_failed(group_id, E.COORDINATOR_NOT_AVAILABLE)
        if topics is None:
            error = self._group_error(group_id, allow_empty=True)
            if error:
                return _group_failed(group_id, error)
            asked, unknown = self._initialized_partitions(group_id), ()
        else:
            asked, unknown = self._named_partitions(topics)
        described = await asyncio.gather(*(self._summaries(group_id, topic_id, name, parts)
                                           for topic_id, name, parts in asked))
        with_lag = await _with_lag(described, end_offsets)
        return GroupStartOffsets(group_id, topics=tuple(with_lag) + unknown)

    def _initialized_partitions(self, group_id: str) -> list[tuple[uuid.UUID, str, list[int]]]:
        """Kafka's initializedShareGroupPartitions, topics the metadata no longer knows left
        out: (topic id, name, partitions) in name order."""
        group = self._groups.get(group_id)
        if not isinstance(group, ShareGroup) or group.state_partitions is None:
            return []
        out = []
        for topic_id, init in group.state_partitions.initialized.items():
            topic = self.topics.topic(init.name)
            if topic is not None and topic.topic_id == topic_id:
                out.append((topic_id, init.name, sorted(init.partitions)))
        return sorted(out, key=lambda t: t[1])

    def _named_partitions(self, topics):
        asked, unknown = [], []
        for name, partitions in topics:
            topic = self.topics.topic(name)
            if topic is None:
                unknown.append(TopicStartOffsets(name, None, tuple(
                    PartitionStartOffset(p) for p in partitions)))
            else:
                asked.append((topic.topic_id, name, list(partitions)))
        return asked, tuple(unknown)

    async def _summaries(self, group_id: str, topic_id: uuid.UUID, name: str,
                         partitions: list[int]) -> tuple[TopicStartOffsets, list[ShareState]]:
        persister = self._state_persister()
        summaries = await asyncio.gather(*(
            persister.read_summary(group_id, topic_id, p, leader_epoch=DEFAULT_LEADER_EPOCH)
            for p in partitions))
        described = TopicStartOffsets(name, topic_id, tuple(
            _summary_row(p, s) for p, s in zip(partitions, summaries)))
        return described, list(summaries)

    # -- AlterShareGroupOffsets -----------------------------------------------------------------
    async def alter_share_group_offsets(
            self, group_id: str, topics: Sequence[tuple[str, Sequence[tuple[int, int]]]]
    ) -> AlterResult:
        """``topics``: (name, [(partition, start offset)])."""
        refused = self._admin_group_error(group_id)
        if refused:
            return AlterResult(refused, error_message(refused))
        try:
            group = self._empty_share_group(group_id, create=True)
        except Refused as refusal:
            return AlterResult(refusal.code, refusal.message)
        answered, wanted = self._alterable(topics)
        offsets = {(tid, p): o for tid, (_, parts) in wanted.items() for p, o in parts.items()}
        if offsets:
            code = await acks.settled(self._record_initializing(group, wanted))
            if code:
                return AlterResult(code, error_message(code))
            errors = await self._initialize_state(group, offsets)
            answered = _with_errors(answered, errors)
            if not any(errors.values()):
                self._record_initialized(group_id, _init_topics(wanted, self._clock.time_ms()), 0)
        return AlterResult(topics=tuple(answered))

    def _alterable(self, topics):
        """Each topic's answer so far, and the partitions to set: topic id -> (name,
        {partition: start offset})."""
        answered, wanted = [], {}
        for name, partitions in topics:
            topic = self.topics.topic(name)
            if topic is None:
                answered.append(AlteredTopic(name, None, tuple(
                    _unknown_partition(p) for p, _ in partitions)))
                continue
            rows = []
            for p, offset in partitions:
                if 0 <= p < topic.num_partitions:
                    rows.append(PartitionResult(p))
                    wanted.setdefault(topic.topic_id, (name, {}))[1][p] = offset
                else:
                    rows.append(_unknown_partition(p))
            answered.append(AlteredTopic(name, topic.topic_id, tuple(rows)))
        return answered, wanted

    def _record_initializing(self, group: ShareGroup, wanted: dict):
        """Kafka's addInitializingTopicsRecords: the partitions join "initializing" (and
        leave "deleting"); the durable write's error code, or a future of it."""
        now = self._clock.time_ms()
        current = group.state_partitions or StatePartitions()
        initializing = dict(current.initializing)
        for topic_id, init in _init_topics(wanted, now).items():
            old = initializing.get(topic_id)
            partitions = init.partitions | (old.partitions if old else frozenset())
            initializing[topic_id] = InitTopic(init.name, partitions, now)
        state = StatePartitions(initializing=initializing, initialized=current.initialized,
                                deleting={t: n for t, n in current.deleting.items()
                                          if t not in wanted})
        return self._write_state_partitions(group, state)

    async def _initialize_state(self, group: ShareGroup, offsets: dict) -> dict:
        """Persister.initialize of each (topic id, partition) at its start offset, state
        epoch = the group epoch: the error code of each."""
        keys = sorted(offsets)
        persister = self._state_persister()
        codes = await asyncio.gather(*(
            persister.initialize(group.group_id, topic_id, p, state_epoch=group.group_epoch,
                                 start_offset=offsets[(topic_id, p)])
            for topic_id, p in keys))
        if any(codes):
            _log.warning("share group offsets not altered everywhere", group_id=group.group_id,
                         errors=sorted({E(c).name for c in codes if c}))
        return dict(zip(keys, codes))

    # -- DeleteShareGroupOffsets ----------------------------------------------------------------
    async def delete_share_group_offsets(self, group_id: str,
                                         topics: Sequence[str]) -> DeleteResult:
        refused = self._admin_group_error(group_id)
        if refused:
            return DeleteResult(refused, error_message(refused))
        try:
            group = self._empty_share_group(group_id, create=False)
        except Refused as refusal:
            return DeleteResult(refusal.code, refusal.message)
        current = group.state_partitions
        if current is None:
            return DeleteResult()
        refusals, doomed, state = self._deletable(topics, current)
        code = await acks.settled(self._write_state_partitions(group, state))
        if code:
            return DeleteResult(code, error_message(code))
        failures, deleted = await self._delete_state(group_id, doomed)
        if deleted:
            code = await acks.settled(self._write_state_partitions(group, StatePartitions(
                initializing=group.state_partitions.initializing,
                initialized=group.state_partitions.initialized,
                deleting={t: n for t, n in group.state_partitions.deleting.items()
                          if t not in deleted})))
            if code:
                return DeleteResult(code, error_message(code))
        done = tuple(DeletedTopic(name, topic_id) for topic_id, name in deleted.items())
        return DeleteResult(topics=done + tuple(refusals) + tuple(failures))

    def _deletable(self, topics: Sequence[str], current: StatePartitions):
        """Kafka's sharePartitionsEligibleForOffsetDeletion: the refused topics, the
        partitions whose state goes (topic id -> (name, partitions)), and the record."""
        initialized = dict(current.initialized)
        deleting = dict(current.deleting)
        refusals, doomed = [], {}
        for name in topics:
            topic = self.topics.topic(name)
            if topic is None:
                refusals.append(DeletedTopic(name, None, E.UNKNOWN_TOPIC_OR_PARTITION,
                                             error_message(E.UNKNOWN_TOPIC_OR_PARTITION)))
            elif topic.topic_id in initialized:
                doomed[topic.topic_id] = (name, sorted(initialized.pop(topic.topic_id).partitions))
                deleting[topic.topic_id] = name
            elif topic.topic_id in deleting:
                doomed[topic.topic_id] = (name, list(range(topic.num_partitions)))
            else:
                refusals.append(DeletedTopic(name, None, E.UNKNOWN_TOPIC_OR_PARTITION,
                                             NO_OFFSET_INFORMATION))
        state = StatePartitions(initializing=current.initializing, initialized=initialized,
                                deleting=deleting)
        return refusals, doomed, state

    async def _delete_state(self, group_id: str, doomed: dict):
        """Persister.delete of every doomed partition: the topics that failed (their first
        error), and the deleted ones (topic id -> name)."""
        async def topic(topic_id: uuid.UUID, name: str, partitions: list[int]):
            codes = await asyncio.gather(*(self._state_persister().delete(group_id, topic_id, p)
                                           for p in partitions))
            return topic_id, name, next((c for c in codes if c), 0)
        outcomes = await asyncio.gather(*(topic(t, n, ps) for t, (n, ps) in doomed.items()))
        failures = [DeletedTopic(n, t, code, error_message(code))
                    for t, n, code in outcomes if code]
        return failures, {t: n for t, n, code in outcomes if not code}

    # -- the group ------------------------------------------------------------------------------
    def _admin_group_error(self, group_id: str) -> int:
        """Kafka's checks before the group: an inactive coordinator, an empty id, then the
        group's partition (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS)."""
        if not self._active:
            return E.COORDINATOR_NOT_AVAILABLE
        if not group_id:
            return E.INVALID_GROUP_ID
        return self._group_error(group_id)

    def _empty_share_group(self, group_id: str, create: bool) -> ShareGroup:
        """The share group (a new one when ``create`` and the id is free), or Refused:
        GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP."""
        group = self._share_group(group_id, create=create, missing="Group {} not found.")
        if group.members:
            raise Refused(E.NON_EMPTY_GROUP, error_message(E.NON_EMPTY_GROUP))
        return group

    def _state_persister(self):
        return self.persister if self.persister is not None else _NO_STATE

    def _write_state_partitions(self, group: ShareGroup, state: StatePartitions):
        changes: list = []
        self._share_emitter(group, changes)(StatePartitionsSet(state))
        return self._write_share_changes(group, changes)


def _group_failed(group_id: str, error: int) -> GroupStartOffsets:
    return GroupStartOffsets(group_id, error, error_message(error))


def _summary_row(partition: int, s: ShareState) -> PartitionStartOffset:
    """A failed summary is the absence of data, as in Kafka."""
    if s.error:
        return PartitionStartOffset(partition)
    return PartitionStartOffset(partition, s.start_offset, s.leader_epoch)


def _lag_known(s: ShareState) -> bool:
    return (not s.error and s.start_offset != UNINITIALIZED_START_OFFSET
            and s.delivery_complete_count != UNKNOWN_DELIVERY_COMPLETE_COUNT)


async def _with_lag(described: list, end_offsets: EndOffsets) -> list[TopicStartOffsets]:
    """Kafka's computeShareGroupLagAndBuildResponse: end - start - delivered, where the
    summary has both; the end offset's error where it could not be had."""
    wanted = [TopicPartition(t.name, row.partition)
              for t, summaries in described for row, s in zip(t.partitions, summaries)
              if _lag_known(s)]
    ends = await end_offsets.latest_offsets(wanted) if wanted else {}
    out = []
    for topic, summaries in described:
        rows = []
        for row, s in zip(topic.partitions, summaries):
            if not _lag_known(s):
                rows.append(row)
                continue
            error, end = ends.get(TopicPartition(topic.name, row.partition),
                                  (E.UNKNOWN_TOPIC_OR_PARTITION, -1))
            rows.append(PartitionStartOffset(row.partition, error=error,
                                             message=error_message(error)) if error else
                        PartitionStartOffset(row.partition, row.start_offset, row.leader_epoch,
                                             end - s.start_offset - s.delivery_complete_count))
        out.append(TopicStartOffsets(topic.name, topic.topic_id, tuple(rows)))
    return out


def _unknown_partition(partition: int) -> PartitionResult:
    return PartitionResult(partition, E.UNKNOWN_TOPIC_OR_PARTITION,
                           error_message(E.UNKNOWN_TOPIC_OR_PARTITION))


def _init_topics(wanted: dict, now: int) -> dict[uuid.UUID, InitTopic]:
    return {t: InitTopic(name, frozenset(parts), now) for t, (name, parts) in wanted.items()}


def _with_errors(answered: list[AlteredTopic], errors: dict) -> list[AlteredTopic]:
    """The persister's refusals put into the answer (Kafka's buildErrorResponse)."""
    out = []
    for topic in answered:
        rows = tuple(PartitionResult(r.partition, code, error_message(code))
                     if not r.error and (code := errors.get((topic.topic_id, r.partition)))
                     else r for r in topic.partitions)
        out.append(AlteredTopic(topic.name, topic.topic_id, rows))
    return out
