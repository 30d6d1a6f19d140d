"""Share groups (KIP-932) in the group coordinator (Kafka 4.2's GroupMetadataManager
share-group paths and GroupCoordinatorService's share steps), a mixin of
``GroupCoordinator``.

One ShareGroupHeartbeat, synchronously on the event loop:
1. the request's own checks (INVALID_REQUEST with Kafka's messages), then the group: a
   joining member (epoch 0) creates it; an id held by a group of another kind answers
   GROUP_ID_NOT_FOUND; GROUP_MAX_SIZE_REACHED past ``group.share.max.size``;
2. the member is found (UNKNOWN_MEMBER_ID) or created with the id the client made, its
   epoch checked (FENCED_MEMBER_EPOCH unless it is the current or the previous one);
3. a changed subscription, another metadata hash of the subscribed topics, or
   initialized share partitions missing from the target bump the group epoch;
4. a group epoch ahead of the target computes the new target (``share.target``, Kafka's
   SimpleAssignor over the initialized partitions only), and the member takes it at once;
5. subscribed partitions with no share state yet are recorded as initializing.
Each step is a ``share.group`` change (one record each), applied at once and appended to
``__consumer_offsets`` as one batch; the heartbeat is answered once that batch is durable.
Then, apart from the answer as in Kafka, the share coordinator is asked to initialize the
new partitions (``Persister.initialize``, state epoch = the group epoch, start offset
-1); once it has, they are recorded as initialized and a later heartbeat of any member
brings them into the target; if it fails they leave "initializing" and a later heartbeat
asks again.  Partitions left initializing for ``group.share.initialize.retry.interval.ms``
are asked for again too.  Without a persister (a coordinator built without a share
coordinator) new partitions count as initialized at once.

A member leaves with epoch -1, or is fenced when its session times out
(``group.share.session.timeout.ms`` or the group's ``share.session.timeout.ms``): its
three records go and the group epoch moves.  ShareGroupDescribe reads the groups
(``describe_share_groups``).  DeleteGroups of a share group first moves its share
partitions to "deleting" and deletes their state through the persister
(``delete_share_groups``), as Kafka's deleteShareGroups; the group's tombstones follow in
the ordinary deletion (``_remove_group``).

ShareOps comes first among ``GroupCoordinator``'s bases: for an id held by a share group,
the other kinds' operations answer as Kafka's do (ConsumerGroupHeartbeat: GROUP_ID_NOT_FOUND;
OffsetCommit, TxnOffsetCommit and OffsetDelete: GROUP_ID_NOT_FOUND; DescribeGroups: the
group is not a classic group), through methods that otherwise fall through to the next
base; JoinGroup, SyncGroup, Heartbeat and LeaveGroup check in ``coordinator``.
"""
from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Protocol

import structlog

from kafkapy.coordinator.group.admin_ops import GroupSummary
from kafkapy.coordinator.group.consumer._support import topic_name_order
from kafkapy.coordinator.group.consumer.types import TopicMetadata
from kafkapy.coordinator.group.consumer_ops import Refused
from kafkapy.coordinator.group.group import GroupState as ClassicState
from kafkapy.coordinator.group.share.assignor import SimpleAssignor
from kafkapy.coordinator.group.share.group import (Change, CurrentAssigned, GroupEpoch,
                                                  MemberSubscribed, MemberSubscriptionDeleted,
                                                  ShareGroup,
                                                  StatePartitionsSet, group_deleted,
                                                  member_removed)
from kafkapy.coordinator.group.share.records import entries
from kafkapy.coordinator.group.share.settings import ShareSettings
from kafkapy.coordinator.group.share.target import metadata_hash, reconcile, target_changes
from kafkapy.coordinator.group.share.types import (JOIN_EPOCH, LEAVE_EPOCH,
                                                  DescribedGroup, DescribedShareMember,
                                                  HeartbeatResult, InitTopic,
                                                  ShareHeartbeatRequest, ShareMember,
                                                  ShareSubscription, StatePartitions)
from kafkapy.coordinator.group.timers import cancel
from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.replication import acks

if TYPE_CHECKING:   # annotations only
    from kafkapy.coordinator.share.persister import Persister

_log = structlog.get_logger("kafkapy.coordinator.group")

#: The heartbeat's first (join) checks, Kafka's messages.
_SUBSCRIPTION_REQUIRED = "SubscribedTopicNames must be set in first request."

#: Share partitions by topic id, with the topic's name (``InitTopic``).
TopicPartitions = dict[uuid.UUID, InitTopic]


class ShareTimeouts(Protocol):
    """A share group's own session timeout and heartbeat interval (its group configs)."""

    def share_session_timeout_ms(self, group_id: str) -> int: ...

    def share_heartbeat_interval_ms(self, group_id: str) -> int: ...


class BrokerShareTimeouts:
    """Every share group at the broker's ``group.share.*`` session and heartbeat settings."""

    def __init__(self, share: ShareSettings) -> None:
        self._share = share

    def share_session_timeout_ms(self, group_id: str) -> int:
        return self._share.session_timeout_ms

    def share_heartbeat_interval_ms(self, group_id: str) -> int:
        return self._share.heartbeat_interval_ms


class ShareOps:
    share: ShareSettings
    share_timeouts: ShareTimeouts
    persister: Persister | None

    # -- ShareGroupHeartbeat ------------------------------------------------------------------
    async def share_heartbeat(self, request: ShareHeartbeatRequest) -> HeartbeatResult:
        if not self._active:
            return HeartbeatResult(E.COORDINATOR_NOT_AVAILABLE)
        try:
            _validate(request)     # before routing, as Kafka's GroupCoordinatorService
        except Refused as refused:
            return HeartbeatResult(refused.code, refused.message)
        error = self._group_error(request.group_id)
        if error:
            return HeartbeatResult(error)
        try:
            group, result, changes, new_partitions = self._share_heartbeat(request)
        except Refused as refused:
            return HeartbeatResult(refused.code, refused.message)
        code = await acks.settled(self._write_share_changes(group, changes))
        if code:
            return HeartbeatResult(code)
        if new_partitions:
            self._initialize_later(group.group_id, group.group_epoch, new_partitions)
        return result

    def _share_heartbeat(self, r: ShareHeartbeatRequest):
        if r.member_epoch == LEAVE_EPOCH:
            group, result, changes = self._share_leave(r)
            return group, result, changes, {}
        joining = r.member_epoch == JOIN_EPOCH
        group = self._share_group(r.group_id, create=joining)
        changes: list[Change] = []
        emit = self._share_emitter(group, changes)
        max_size = self.share.max_size
        if len(group.members) >= max_size and r.member_id not in group.members:
            raise Refused(E.GROUP_MAX_SIZE_REACHED, "The share group has reached its maximum "
                          f"capacity of {max_size} members.")
        member = self._share_member(group, r, joining)
        pending = self._initialized_assignment_pending(group)
        updated = member.with_(subscription=_merged(member.subscription, r))
        changed = False
        if updated != member or member.member_id not in group.members:
            emit(MemberSubscribed(member.member_id, updated.subscription))
            changed = updated.subscription.topic_names != member.subscription.topic_names
        topics, bump = self._maybe_bump_share(group, changed or pending, emit)
        if group.group_epoch > group.assignment_epoch:
            for change in target_changes(group, group.group_epoch, self._share_assignor(), topics):
                emit(change)
        before = group.members[member.member_id]
        after = reconcile(before, group.assignment_epoch, group.target(member.member_id),
                          topics, bump)
        if after != before:
            emit(CurrentAssigned(after))
        self._schedule_share_session(group, member.member_id)
        sent = (after.assigned if joining or r.subscribed_topic_names is not None
                or after.assigned != member.assigned else None)
        result = HeartbeatResult(
            0, None, member.member_id, after.member_epoch,
            self.share_timeouts.share_heartbeat_interval_ms(group.group_id), sent)
        new_partitions = self._initializing(group, emit)
        return group, result, changes, new_partitions

    def _share_member(self, group: ShareGroup, r: ShareHeartbeatRequest,
                      joining: bool) -> ShareMember:
        member = group.members.get(r.member_id)
        if member is None:
            if not joining:
                raise Refused(E.UNKNOWN_MEMBER_ID,
                              f"Member {r.member_id} is not a member of group {group.group_id}.")
            _log.info("member joins the share group", group_id=group.group_id,
                      member_id=r.member_id)
            return ShareMember(r.member_id)
        _check_epoch(member, r.member_epoch)
        return member

    def _maybe_bump_share(self, group: ShareGroup, bump: bool, emit
                          ) -> tuple[dict[str, TopicMetadata], bool]:
        """(the subscribed topics, whether the group epoch moved): a new epoch when
        ``bump``, or when the topics' metadata hash changed (looked at only then, or
        when the group's topics may have changed)."""
        topics = self._share_topics(group)
        if not (bump or group.metadata_stale):
            return topics, False
        group.metadata_stale = False
        new_hash = metadata_hash(topics.values())
        bump = bump or new_hash != group.metadata_hash
        if bump:
            emit(GroupEpoch(group.group_epoch + 1, new_hash))
            _log.info("bumped share group epoch", group_id=group.group_id,
                      epoch=group.group_epoch)
        return topics, bump

    def _initialized_assignment_pending(self, group: ShareGroup) -> bool:
        """Kafka's initializedAssignmentPending: a subscribed topic whose initialized
        partitions are not exactly what the group's targets hold of it."""
        if not group.members:
            return False
        initialized = group.state_partitions.initialized if group.state_partitions else {}
        names = group.subscribed_topic_names()
        if not initialized or not names:
            return False
        assigned: dict = {}
        for target in group.targets.values():
            for topic_id, partitions in target.items():
                assigned.setdefault(topic_id, set()).update(partitions)
        return any(init.name in names and assigned.get(topic_id) != set(init.partitions)
                   for topic_id, init in initialized.items())

    # -- leaving and fencing -----------------------------------------------------------------
    def _share_leave(self, r: ShareHeartbeatRequest):
        group = self._share_group(r.group_id, create=False, missing="Group {} not found.")
        member = group.members.get(r.member_id)
        if member is None:
            raise Refused(E.UNKNOWN_MEMBER_ID,
                          f"Member {r.member_id} is not a member of group {group.group_id}.")
        _log.info("member left the share group", group_id=group.group_id,
                  member_id=member.member_id)
        changes: list[Change] = []
        self._fence_share_member(group, member.member_id, changes)
        return group, HeartbeatResult(0, None, r.member_id, r.member_epoch), changes

    def _fence_share_member(self, group: ShareGroup, member_id: str, changes: list) -> None:
        """Kafka's shareGroupFenceMember: the member's records go, the epoch moves."""
        emit = self._share_emitter(group, changes)
        cancel(group.session_tasks.pop(member_id, None))
        for change in member_removed(member_id):
            emit(change)
        emit(GroupEpoch(group.group_epoch + 1,
                        metadata_hash(self._share_topics(group).values())))

    def _share_session_expired(self, group_id: str, member_id: str) -> None:
        group = self._groups.get(group_id)
        if not isinstance(group, ShareGroup) or group.dead or self._group_error(group_id):
            return
        if member_id not in group.members:
            return
        _log.info("member fenced from the share group because its session expired",
                  group_id=group_id, member_id=member_id)
        changes: list[Change] = []
        self._fence_share_member(group, member_id, changes)
        self._write_share_changes(group, changes)

    def _schedule_share_session(self, group: ShareGroup, member_id: str) -> None:
        cancel(group.session_tasks.pop(member_id, None))
        group.session_tasks[member_id] = self._deadlines.schedule(
            self.share_timeouts.share_session_timeout_ms(group.group_id),
            lambda: self._share_session_expired(group.group_id, member_id))

    def _install_share(self, group: ShareGroup) -> None:
        """A loaded group: every member gets a session deadline (Kafka's onLoaded)."""
        group.state_timestamp = self._clock.time_ms()
        group.metadata_stale = True     # the topics may have changed while it was not served
        self._groups[group.group_id] = group
        for member_id in group.members:
            self._schedule_share_session(group, member_id)

    def _drop_share_group(self, group: ShareGroup) -> None:
        for member_id in list(group.session_tasks):
            cancel(group.session_tasks.pop(member_id))

    # -- share partitions' state -------------------------------------------------------------
    def _initializing(self, group: ShareGroup, emit) -> TopicPartitions:
        """Kafka's maybeCreateInitializeShareGroupStateRequest: the subscribed partitions
        with no state yet (or initializing for too long) become initializing; returns them."""
        now = self._clock.time_ms()
        current = group.state_partitions or StatePartitions()
        retry = self.share.initialize_retry_interval_ms
        fresh = {t: v for t, v in current.initializing.items() if now - v.timestamp < retry}
        known = _combined(current.initialized, fresh)
        wanted: TopicPartitions = {}
        for name in sorted(group.subscribed_topic_names()):
            topic = self.topics.topic(name)
            if topic is None:
                continue
            have = known[topic.topic_id].partitions if topic.topic_id in known else frozenset()
            missing = frozenset(range(topic.num_partitions)) - have
            if missing:
                wanted[topic.topic_id] = InitTopic(name, missing, now)
        if wanted:
            emit(StatePartitionsSet(StatePartitions(
                initializing=_combined(current.initializing, wanted),
                initialized=current.initialized,
                deleting={t: n for t, n in current.deleting.items() if t not in wanted})))
        return wanted

    def _initialize_later(self, group_id: str, state_epoch: int,
                          partitions: TopicPartitions) -> None:
        """Ask the share coordinator to initialize ``partitions`` (not awaited by the
        heartbeat, as in Kafka)."""
        if self.persister is None:
            self._record_initialized(group_id, partitions, 0)
            return
        task = asyncio.get_running_loop().create_task(
            self._initialize(group_id, state_epoch, partitions))
        self._share_tasks.add(task)
        task.add_done_callback(self._share_tasks.discard)

    async def _initialize(self, group_id: str, state_epoch: int,
                          partitions: TopicPartitions) -> None:
        calls = [self.persister.initialize(group_id, topic_id, p, state_epoch=state_epoch,
                                           start_offset=-1)
                 for topic_id, init in partitions.items() for p in sorted(init.partitions)]
        codes = await asyncio.gather(*calls)
        error = next((c for c in codes if c), 0)
        if error:
            _log.warning("could not initialize share partitions", group_id=group_id,
                         error=error)
        self._record_initialized(group_id, partitions, error)

    def _record_initialized(self, group_id: str, partitions: TopicPartitions,
                            error: int) -> None:
        """Kafka's initializeShareGroupState (``error`` 0) or uninitializeShareGroupState:
        the partitions leave "initializing", into "initialized" when they were."""
        group = self._groups.get(group_id)
        if not isinstance(group, ShareGroup) or group.dead or self._group_error(group_id):
            return
        current = group.state_partitions or StatePartitions()
        initializing = _without(current.initializing, partitions)
        initialized = current.initialized
        if not error:
            now = self._clock.time_ms()
            done = {t: InitTopic(v.name, v.partitions, now) for t, v in partitions.items()}
            initialized = _combined(current.initialized, done)
        elif initializing == dict(current.initializing):
            return
        changes: list[Change] = []
        self._share_emitter(group, changes)(StatePartitionsSet(StatePartitions(
            initializing=initializing, initialized=initialized, deleting=current.deleting)))
        self._write_share_changes(group, changes)

    def share_topics_changed(self, names: set[str] | None) -> None:
        """Topics were created, deleted or grew (None: unknown which): the share groups
        subscribed to them look at their subscription again on their next heartbeat."""
        for group in self._groups.values():
            if isinstance(group, ShareGroup) and not group.dead and (
                    names is None or names & set(group.subscribed_topic_names())):
                group.metadata_stale = True

    def share_topic_deleted(self, name: str) -> None:
        """Kafka's maybeCleanupShareGroupState: a deleted topic leaves every share group's
        state partition record (the share coordinator drops the state itself)."""
        for group in list(self._groups.values()):
            if not isinstance(group, ShareGroup) or group.dead or group.state_partitions is None:
                continue
            if self._group_error(group.group_id):
                continue
            current = group.state_partitions
            gone = {t for t, v in [*current.initializing.items(), *current.initialized.items()]
                    if v.name == name} | {t for t, n in current.deleting.items() if n == name}
            if not gone:
                continue
            changes: list[Change] = []
            self._share_emitter(group, changes)(StatePartitionsSet(StatePartitions(
                initializing={t: v for t, v in current.initializing.items() if t not in gone},
                initialized={t: v for t, v in current.initialized.items() if t not in gone},
                deleting={t: n for t, n in current.deleting.items() if t not in gone})))
            self._write_share_changes(group, changes, wait=False)

    # -- DeleteGroups ---------------------------------------------------------------------------
    async def delete_share_groups(self, group_ids: Iterable[str]) -> dict[str, int]:
        """Kafka's deleteShareGroups, before the ordinary deletion: for each share group
        here among ``group_ids``, NON_EMPTY_GROUP while it has members, else its share
        partitions move to "deleting" and their state is deleted through the persister.
        Answers the groups that failed (the others go on to ``delete_groups``)."""
        errors: dict[str, int] = {}
        for group_id in group_ids:
            group = self._groups.get(group_id)
            if (not isinstance(group, ShareGroup) or group.dead
                    or self._group_error(group_id, allow_empty=True)):
                continue
            error = await self._delete_share_state(group)
            if error:
                errors[group_id] = error
        return errors

    async def _delete_share_state(self, group: ShareGroup) -> int:
        if group.members:
            return E.NON_EMPTY_GROUP
        current = group.state_partitions
        if current is None:
            return 0
        doomed = self._doomed_partitions(current)
        changes: list[Change] = []
        self._share_emitter(group, changes)(StatePartitionsSet(StatePartitions(
            deleting={t: v.name for t, v in doomed.items()})))
        code = await acks.settled(self._write_share_changes(group, changes))
        if code or self.persister is None:
            return code
        codes = await asyncio.gather(*(self.persister.delete(group.group_id, t, p)
                                       for t in sorted(doomed)
                                       for p in sorted(doomed[t].partitions)))
        return next((c for c in codes if c), 0)

    def _doomed_partitions(self, current: StatePartitions) -> TopicPartitions:
        """Kafka's shareGroupBuildPartitionDeleteRequest: the initialized and initializing
        partitions, and every partition of a topic still "deleting" from an earlier
        deletion that did not finish (one that no longer exists is left out)."""
        doomed = _combined(current.initialized, current.initializing)
        for topic_id, name in current.deleting.items():
            topic = self.topics.topic(name)
            if topic is not None and topic.topic_id == topic_id:
                doomed = _combined(doomed, {topic_id: InitTopic(
                    name, frozenset(range(topic.num_partitions)))})
        return doomed

    # -- ShareGroupDescribe ---------------------------------------------------------------------
    def describe_share_groups(self, group_ids: list[str]) -> list[DescribedGroup]:
        return [self._describe_share(g) for g in group_ids]

    def _describe_share(self, group_id: str) -> DescribedGroup:
        error = self._group_error(group_id)
        if error:
            return DescribedGroup(group_id, error)
        group = self._groups.get(group_id)
        if not isinstance(group, ShareGroup) or group.dead:
            gone = group is None or group.is_(ClassicState.DEAD)
            message = (f"Group {group_id} not found." if gone
                       else f"Group {group_id} is not a share group.")
            return DescribedGroup(group_id, E.GROUP_ID_NOT_FOUND, message)
        members = tuple(_described(m) for m in group.members.values())
        return DescribedGroup(group_id, 0, None, group.state.value, group.group_epoch,
                              group.assignment_epoch, self._share_assignor().name, members)

    # -- what the other kinds of request find of a share group --------------------------------
    def _consumer_group(self, group_id: str, create: bool):
        group = self._groups.get(group_id)
        if isinstance(group, ShareGroup) and not group.dead:
            raise Refused(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        return super()._consumer_group(group_id, create)

    def commit_offsets(self, group_id: str, member_id: str, instance_id: str | None,
                       generation: int, offsets: dict, api_version: int = 9):
        if self._is_share_group(group_id):
            return {tp: E.GROUP_ID_NOT_FOUND for tp in offsets}
        return super().commit_offsets(group_id, member_id, instance_id, generation, offsets,
                                      api_version)

    def commit_txn_offsets(self, group_id: str, producer_id: int, producer_epoch: int,
                           member_id: str, instance_id: str | None, generation: int,
                           offsets: dict, verify=None):
        if self._is_share_group(group_id):
            return acks.then(verify() if verify is not None else 0, lambda error: {
                tp: error or E.GROUP_ID_NOT_FOUND for tp in offsets})
        return super().commit_txn_offsets(group_id, producer_id, producer_epoch, member_id,
                                          instance_id, generation, offsets, verify)

    def delete_offsets(self, group_id: str, partitions: list):
        if self._is_share_group(group_id):
            return E.GROUP_ID_NOT_FOUND, {}
        return super().delete_offsets(group_id, partitions)

    def describe_group(self, group_id: str) -> GroupSummary:
        """A share group is not a classic group: GROUP_ID_NOT_FOUND, state Dead (the
        DescribeGroups handler answers it by version)."""
        if self._is_share_group(group_id):
            return GroupSummary(E.GROUP_ID_NOT_FOUND, group_id)
        return super().describe_group(group_id)

    def _cleanup(self, group, partitions: list, drop_pending: bool = False) -> int:
        if isinstance(group, ShareGroup):   # no offsets; it never expires (Kafka's shouldExpire)
            return 0
        return super()._cleanup(group, partitions, drop_pending)

    def _remove_group(self, group) -> int:
        if not isinstance(group, ShareGroup):
            return super()._remove_group(group)
        changes: list[Change] = []
        self._drop_share_group(group)
        emit = self._share_emitter(group, changes)
        for change in group_deleted(list(group.members)):
            emit(change)
        error = self._write_share_changes(group, changes, wait=False)
        if error:
            return error
        group.transition_to(ClassicState.DEAD, self._clock.time_ms())
        self._groups.pop(group.group_id, None)
        return 0

    def _is_share_group(self, group_id: str) -> bool:
        group = self._groups.get(group_id)
        return (isinstance(group, ShareGroup) and not group.dead
                and not self._group_error(group_id, allow_empty=True))

    # -- the group --------------------------------------------------------------------------
    def _share_group(self, group_id: str, create: bool,
                     missing: str = "Share group {} not found.") -> ShareGroup:
        group = self._groups.get(group_id)
        if isinstance(group, ShareGroup) and not group.dead:
            return group
        if group is not None and not group.is_(ClassicState.DEAD):
            raise Refused(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
        if not create:
            raise Refused(E.GROUP_ID_NOT_FOUND, missing.format(group_id))
        return ShareGroup(group_id)

    def _share_emitter(self, group: ShareGroup, changes: list) -> Callable[[Change], None]:
        def emit(change: Change) -> None:
            if self._groups.get(group.group_id) is not group:
                self._groups[group.group_id] = group
            group.apply(change)
            if isinstance(change, (MemberSubscribed, MemberSubscriptionDeleted)):
                group.state_timestamp = self._clock.time_ms()
            changes.append(change)
        return emit

    def _write_share_changes(self, group: ShareGroup, changes: list[Change], wait: bool = True):
        if not changes:
            return 0
        return self._store.write(self.partition_for(group.group_id),
                                 entries(group.group_id, changes), for_offsets=False, wait=wait)

    def _share_topics(self, group: ShareGroup) -> dict[str, TopicMetadata]:
        """The subscribed topics that exist, by name."""
        out = {}
        for name in sorted(group.subscribed_topic_names()):
            topic = self.topics.topic(name)
            if topic is not None:
                out[name] = topic
        return out

    def _share_assignor(self) -> SimpleAssignor:
        return _ASSIGNOR


_ASSIGNOR = SimpleAssignor()


def _validate(r: ShareHeartbeatRequest) -> None:
    """Kafka's throwIfShareGroupHeartbeatRequestIsInvalid."""
    _not_empty(r.member_id, "MemberId can't be empty.")
    _not_empty(r.group_id, "GroupId can't be empty.")
    _not_empty(r.rack_id, "RackId can't be empty.")
    if r.member_epoch == JOIN_EPOCH:
        if not r.subscribed_topic_names:
            raise Refused(E.INVALID_REQUEST, _SUBSCRIPTION_REQUIRED)
    elif r.member_epoch < LEAVE_EPOCH:
        raise Refused(E.INVALID_REQUEST, "MemberEpoch is invalid.")


def _not_empty(value: str | None, message: str) -> None:
    if value is not None and not value.strip():
        raise Refused(E.INVALID_REQUEST, message)


def _check_epoch(member: ShareMember, epoch: int) -> None:
    """Kafka's throwIfShareGroupMemberEpochIsInvalid (epoch 0 rejoins)."""
    if epoch == JOIN_EPOCH:
        return
    if epoch > member.member_epoch:
        raise Refused(E.FENCED_MEMBER_EPOCH,
                      f"The share group member has a greater member epoch ({epoch}) than the "
                      f"one known by the group coordinator ({member.member_epoch}). The member "
                      "must abandon all its partitions and rejoin.")
    if epoch < member.member_epoch and epoch != member.previous_member_epoch:
        raise Refused(E.FENCED_MEMBER_EPOCH,
                      f"The share group member has a smaller member epoch ({epoch}) than the "
                      f"one known by the group coordinator ({member.member_epoch}), and it "
                      "does not match the previous member epoch "
                      f"({member.previous_member_epoch}). The member must abandon all its "
                      "partitions and rejoin.")


def _merged(old: ShareSubscription, r: ShareHeartbeatRequest) -> ShareSubscription:
    """The member's subscription with what this heartbeat sent (null: unchanged)."""
    return ShareSubscription(
        client_id=r.client_id, client_host=r.client_host,
        rack_id=r.rack_id if r.rack_id is not None else old.rack_id,
        topic_names=(frozenset(r.subscribed_topic_names)
                     if r.subscribed_topic_names is not None else old.topic_names))


def _described(m: ShareMember) -> DescribedShareMember:
    s = m.subscription
    return DescribedShareMember(m.member_id, s.rack_id, m.member_epoch, s.client_id,
                                s.client_host, tuple(topic_name_order(s.topic_names)),
                                m.assigned)


def _combined(first: Mapping, second: Mapping) -> dict:
    """Kafka's combineInitMaps: every topic of both, partitions united, the name and time
    of ``second`` where it has the topic."""
    out = dict(first)
    for topic_id, init in second.items():
        old = out.get(topic_id)
        partitions = init.partitions | (old.partitions if old else frozenset())
        out[topic_id] = InitTopic(init.name, partitions, init.timestamp)
    return out


def _without(topics: Mapping, removed: Mapping) -> dict:
    """``topics`` without the partitions of ``removed`` (topics left empty dropped)."""
    out = {}
    for topic_id, init in topics.items():
        left = init.partitions - (removed[topic_id].partitions if topic_id in removed
                                  else frozenset())
        if left:
            out[topic_id] = InitTopic(init.name, left, init.timestamp)
    return out
