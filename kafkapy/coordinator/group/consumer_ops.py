"""The consumer group protocol in the group coordinator (Kafka's
GroupMetadataManager.consumerGroupHeartbeat and its helpers), a mixin of
``GroupCoordinator``.

One heartbeat, synchronously on the event loop:
1. the group and the member are found or created (a new member id when none is given;
   static members by instance id; epochs checked: FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID,
   FENCED_INSTANCE_ID, UNRELEASED_INSTANCE_ID);
2. a changed subscription, or a subscribed topic that changed, bumps the group epoch;
3. a group epoch ahead of the target computes the new target (``consumer.target``);
4. the member reconciles one step towards its target (``consumer.reconciliation``).
Each step is a ``Change``: applied to the group at once (so the next heartbeat, even
before this one is written, sees it) and appended to ``__consumer_offsets`` as one
batch; the heartbeat is answered once that batch is durable.  A failed write answers
the write's error (NOT_COORDINATOR when the partition moved: the group is unloaded with
it).  Members are fenced (removed, group epoch bumped) when they leave, when their
session times out (``group.consumer.session.timeout.ms`` or the group's
``consumer.session.timeout.ms``), or when they do not revoke within their rebalance
timeout.  Members that speak the classic protocol go through the same steps from their
JoinGroups (``ClassicMembers``); a joining member may convert a classic group and a
departing one turn the group back into a classic group (``MigrationOps``).
"""
from __future__ import annotations

import functools
import re
from typing import Callable, Iterable, Protocol

import structlog

from kafkapy.coordinator.group.consumer._support import topic_name_order
from kafkapy.coordinator.group.consumer.assignor import ASSIGNORS
from kafkapy.coordinator.group.consumer.changes import entries
from kafkapy.coordinator.group.consumer.group import (Change, ClassicGroupDeleted,
                                                     ConsumerGroup, CurrentAssigned,
                                                     GroupEpoch, MemberRemoved,
                                                     MemberSubscribed, SubscriptionMetadata,
                                                     TargetAssigned)
from kafkapy.coordinator.group.consumer.reconciliation import FencedMember, reconcile
from kafkapy.coordinator.group.consumer.settings import ConsumerSettings
from kafkapy.coordinator.group.consumer.target import target_changes
from kafkapy.coordinator.group.group import GroupState as ClassicState
from kafkapy.coordinator.group.consumer.types import (JOIN_EPOCH, LEAVE_EPOCH,
                                                     STATIC_LEAVE_EPOCH, Assignment,
                                                     DescribedGroup, DescribedMember,
                                                     HeartbeatRequest, HeartbeatResult,
                                                     Member, MemberState, Subscription,
                                                     TopicMetadata)
from kafkapy.coordinator.group.timers import cancel
from kafkapy.metadata.topics import new_topic_id, topic_id_text
from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.replication import acks

_log = structlog.get_logger("kafkapy.coordinator.group")

INVALID_REGULAR_EXPRESSION = 128   # Kafka 4.0's Errors.INVALID_REGULAR_EXPRESSION
CONSUMER_MEMBER, CLASSIC_MEMBER = 1, 0    # ConsumerGroupDescribe's MemberType


class TopicView(Protocol):
    """The metadata the coordinator reads: a topic as the assignors see it, and every
    topic name (regular-expression subscriptions)."""

    def topic(self, name: str) -> TopicMetadata | None: ...

    def names(self) -> Iterable[str]: ...


class GroupTimeouts(Protocol):
    """A group's own session timeout and heartbeat interval (its group configs)."""

    def session_timeout_ms(self, group_id: str) -> int: ...

    def heartbeat_interval_ms(self, group_id: str) -> int: ...


def new_member_id() -> str:
    """A member id as Kafka's coordinator makes one: ``Uuid.randomUuid().toString()``, the
    same text as a new topic id."""
    return topic_id_text(new_topic_id())


class Refused(Exception):
    """A heartbeat answered with an error and nothing changed."""

    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class ConsumerOps:
    consumer: ConsumerSettings
    topics: TopicView
    timeouts: GroupTimeouts

    # -- ConsumerGroupHeartbeat ------------------------------------------------------------
    async def consumer_heartbeat(self, request: HeartbeatRequest) -> HeartbeatResult:
        try:
            self._validate(request)     # before routing, as Kafka's GroupCoordinatorService
        except Refused as refused:
            return HeartbeatResult(refused.code, refused.message)
        error = self._group_error(request.group_id)
        if error:
            return HeartbeatResult(error)
        try:
            group, result, changes = self._heartbeat(request)
        except Refused as refused:
            return HeartbeatResult(refused.code, refused.message)
        code = await acks.settled(self._write_changes(group, changes))
        return HeartbeatResult(code) if code else result

    def _validate(self, r: HeartbeatRequest) -> None:
        """Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid (4.x: from v1 the client
        names its member id, even when joining)."""
        if r.version >= 1:
            _not_empty(r.member_id, "MemberId can't be empty.", required=True)
        _not_empty(r.group_id, "GroupId can't be empty.", required=True)
        _not_empty(r.instance_id, "InstanceId can't be empty.")
        _not_empty(r.rack_id, "RackId can't be empty.")
        if r.member_epoch > 0 or r.member_epoch == LEAVE_EPOCH:
            _not_empty(r.member_id, "MemberId can't be empty.", required=True)
        elif r.member_epoch == JOIN_EPOCH:
            if r.rebalance_timeout_ms == -1:
                raise Refused(E.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
            if r.owned is None or r.owned:
                raise Refused(E.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")
            if not r.subscribed_topic_names and not r.subscribed_topic_regex:
                raise Refused(E.INVALID_REQUEST,
                              "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
        elif r.member_epoch == STATIC_LEAVE_EPOCH:
            _not_empty(r.member_id, "MemberId can't be empty.", required=True)
            if r.instance_id is None:
                raise Refused(E.INVALID_REQUEST, "InstanceId can't be null.")
        else:
            raise Refused(E.INVALID_REQUEST, "MemberEpoch is invalid.")
        if r.server_assignor is not None and r.server_assignor not in self.consumer.assignors:
            raise Refused(E.UNSUPPORTED_ASSIGNOR,
                          f"ServerAssignor {r.server_assignor} is not supported. Supported "
                          f"assignors: {', '.join(self.consumer.assignors)}.")
        if r.subscribed_topic_regex is not None:
            _compiled(r.subscribed_topic_regex)

    def _heartbeat(self, r: HeartbeatRequest):
        if r.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            return self._leave(r)
        joining = r.member_epoch == JOIN_EPOCH
        group, changes = self._consumer_group(r.group_id, create=joining)
        member_id = r.member_id or new_member_id()
        if len(group.members) >= self.consumer.max_size and member_id not in group.members:
            raise Refused(E.GROUP_MAX_SIZE_REACHED,
                          "The consumer group has reached its maximum capacity of "
                          f"{self.consumer.max_size} members.")
        member, inherited = self._member_for(group, member_id, r, joining, changes)
        emit = self._emitter(group, changes)
        self._update_member(group, member, _merged(member, r), emit, inherited)
        before = group.members[member_id]
        after = self._reconcile(group, before, r.owned, emit)
        self._schedule_session(group, member_id)
        full = joining or (r.rebalance_timeout_ms != -1 and r.subscribed_topic_names is not None
                           and r.owned is not None)
        sent = after.assigned if full or after.assigned != member.assigned else None
        return group, HeartbeatResult(
            0, None, member_id, after.member_epoch,
            self.timeouts.heartbeat_interval_ms(group.group_id), sent), changes

    def _update_member(self, group: ConsumerGroup, member: Member, subscription: Subscription,
                       emit, inherited: dict[str, str] | None = None) -> None:
        """The member's new subscription, then a new group epoch and target when something
        changed (steps 1-2 of Kafka's heartbeat, JoinGroup of a classic member too)."""
        new_member = member.member_id not in group.members
        bump = new_member or _topics_changed(member.subscription, subscription)
        if new_member or subscription != member.subscription:
            emit(MemberSubscribed(member.member_id, subscription))
        self._maybe_bump(group, bump, emit)
        if group.group_epoch > group.assignment_epoch:
            for change in target_changes(group, group.group_epoch, self._assignor(group),
                                         self._regex_topics, inherited):
                emit(change)

    def _member_for(self, group: ConsumerGroup, member_id: str, r: HeartbeatRequest,
                    joining: bool, changes: list) -> tuple[Member, dict[str, str]]:
        """(the member as it is now, {member id: departed member whose target it takes})."""
        if r.instance_id is not None:
            return self._static_member_for(group, member_id, r, joining, changes)
        member = group.members.get(member_id)
        if member is None:
            if not joining:
                raise Refused(E.UNKNOWN_MEMBER_ID,
                              f"Member {member_id} is not a member of group {group.group_id}.")
            _log.info("member joins the consumer group", group_id=group.group_id,
                      member_id=member_id)
            return Member(member_id, Subscription(r.client_id, r.client_host)), {}
        if joining:
            return self._rejoined(group, member, changes), {}
        _check_epoch(member, r.member_epoch, r.owned)
        return member, {}

    def _static_member_for(self, group: ConsumerGroup, member_id: str, r: HeartbeatRequest,
                           joining: bool, changes: list) -> tuple[Member, dict[str, str]]:
        existing = group.static_member(r.instance_id)
        if joining:
            if existing is None:
                _log.info("static member joins the consumer group", group_id=group.group_id,
                          member_id=member_id, instance_id=r.instance_id)
                return Member(member_id, Subscription(r.client_id, r.client_host,
                                                      instance_id=r.instance_id)), {}
            # a classic member's instance id is taken over at once
            if existing.member_epoch != STATIC_LEAVE_EPOCH and not existing.uses_classic_protocol:
                raise Refused(E.UNRELEASED_INSTANCE_ID,
                              f"Static member {member_id} with instance id {r.instance_id} "
                              "cannot join the group because the instance id is owned by "
                              f"{existing.member_id} member.")
            return self._replaced(group, existing, member_id, changes), {}
        if existing is None:
            raise Refused(E.UNKNOWN_MEMBER_ID, f"Instance id {r.instance_id} is unknown.")
        if existing.member_id != member_id:
            raise Refused(E.FENCED_INSTANCE_ID,
                          f"Static member {member_id} with instance id {r.instance_id} was "
                          f"fenced by member {existing.member_id}.")
        _check_epoch(existing, r.member_epoch, r.owned)
        return existing, {}

    def _replaced(self, group: ConsumerGroup, old: Member, member_id: str,
                  changes: list) -> Member:
        """Kafka's replaceMember: the returning static member takes over the departed one's
        subscription, target and partitions under its new member id, at epoch 0."""
        emit = self._emitter(group, changes)
        target = group.target(old.member_id)
        new = old.with_(member_id=member_id, member_epoch=0, previous_member_epoch=0)
        self._cancel_timers(group, old.member_id)
        emit(MemberRemoved(old.member_id))
        emit(MemberSubscribed(member_id, old.subscription))
        emit(TargetAssigned(member_id, target))
        emit(CurrentAssigned(new))
        _log.info("static member re-joins the consumer group", group_id=group.group_id,
                  instance_id=old.instance_id, member_id=member_id,
                  replaced=old.member_id)
        return group.members[member_id]

    def _rejoined(self, group: ConsumerGroup, member: Member, changes: list) -> Member:
        """A known member joining again (epoch 0, owning nothing): it starts again from
        no partitions at epoch 0 and reconciles from there."""
        if member.member_epoch == 0 and not member.assigned and not member.pending_revocation:
            return member
        self._cancel_rebalance(group, member.member_id)
        reset = member.with_(member_epoch=0, previous_member_epoch=0,
                             state=MemberState.STABLE, assigned={}, pending_revocation={})
        self._emitter(group, changes)(CurrentAssigned(reset))
        return group.members[member.member_id]

    def _maybe_bump(self, group: ConsumerGroup, bump: bool, emit) -> None:
        """A new subscription metadata, then the group epoch, when something changed."""
        if not (bump or group.metadata_stale):
            return
        group.metadata_stale = False
        topics = self._subscription_metadata(group)
        if not _same_topics(topics, group.topics):
            emit(SubscriptionMetadata(topics))
            bump = True
        if bump:
            emit(GroupEpoch(group.group_epoch + 1))
            _log.info("bumped consumer group epoch", group_id=group.group_id,
                      epoch=group.group_epoch)

    def _reconcile(self, group: ConsumerGroup, member: Member, owned: Assignment | None,
                   emit) -> Member:
        try:
            after = reconcile(member, group.assignment_epoch, group.target(member.member_id),
                              group.partition_epoch, owned)
        except FencedMember as fenced:
            raise Refused(E.FENCED_MEMBER_EPOCH, str(fenced)) from None
        if after == member:
            return member
        emit(CurrentAssigned(after))
        if after.uses_classic_protocol:    # it has join and sync deadlines instead
            return group.members[after.member_id]
        if after.state is MemberState.UNREVOKED_PARTITIONS:
            self._schedule_rebalance(group, after)
        else:
            self._cancel_rebalance(group, after.member_id)
        return group.members[after.member_id]

    # -- leaving and fencing -----------------------------------------------------------------
    def _leave(self, r: HeartbeatRequest):
        group, changes = self._consumer_group(r.group_id, create=False)
        if r.instance_id is None:
            member = group.members.get(r.member_id)
            if member is None:
                raise Refused(E.UNKNOWN_MEMBER_ID,
                              f"Member {r.member_id} is not a member of group {group.group_id}.")
        else:
            member = group.static_member(r.instance_id)
            if member is None:
                raise Refused(E.UNKNOWN_MEMBER_ID, f"Instance id {r.instance_id} is unknown.")
            if member.member_id != r.member_id:
                raise Refused(E.FENCED_INSTANCE_ID,
                              f"Static member {r.member_id} with instance id {r.instance_id} "
                              f"was fenced by member {member.member_id}.")
        if r.member_epoch == STATIC_LEAVE_EPOCH:
            # Its partitions stay its own until its session times out or it returns.
            self._emitter(group, changes)(CurrentAssigned(member.with_(
                member_epoch=STATIC_LEAVE_EPOCH, pending_revocation={})))
        else:
            _log.info("member left the consumer group", group_id=group.group_id,
                      member_id=member.member_id)
            self._fence(group, member, changes)
        return group, HeartbeatResult(0, None, member.member_id, r.member_epoch), changes

    def _fence(self, group: ConsumerGroup, member: Member, changes: list) -> None:
        """Kafka's consumerGroupFenceMember: the member goes, the group epoch moves -- or,
        when it was the last member of the consumer protocol, the group may become a
        classic group (``MigrationOps``)."""
        if self._downgrades_without(group, member.member_id):
            self._convert_to_classic(group, member.member_id, changes, rebalance=True)
            return
        emit = self._emitter(group, changes)
        self._cancel_timers(group, member.member_id)
        emit(MemberRemoved(member.member_id))
        self._after_departure(group, emit)

    def _after_departure(self, group: ConsumerGroup, emit) -> None:
        """Members went: the subscription metadata without them, a new group epoch."""
        topics = self._subscription_metadata(group)
        if not _same_topics(topics, group.topics):
            emit(SubscriptionMetadata(topics))
        emit(GroupEpoch(group.group_epoch + 1))

    def _fence_later(self, group_id: str, member_id: str, reason: str,
                     epoch: int | None = None) -> None:
        """A deadline passed: fence the member if it is still there (and, for a rebalance
        timeout, still at ``epoch``)."""
        group = self._groups.get(group_id)
        if not isinstance(group, ConsumerGroup) or self._group_error(group_id):
            return
        member = group.members.get(member_id)
        if member is None or (epoch is not None and member.member_epoch != epoch):
            return
        _log.info(f"member fenced from the consumer group because {reason}",
                  group_id=group_id, member_id=member_id)
        changes: list[Change] = []
        try:
            self._fence(group, member, changes)
        except Refused as refused:   # a downgrade that failed: nothing changed
            _log.warning("could not fence the member", group_id=group_id, member_id=member_id,
                         error=refused.message)
            return
        self._write_changes(group, changes)

    def _schedule_session(self, group: ConsumerGroup, member_id: str,
                          timeout_ms: int | None = None) -> None:
        """The member's session deadline: ``timeout_ms`` (a classic member's own), else the
        group's session timeout."""
        cancel(group.session_tasks.pop(member_id, None))
        group.session_tasks[member_id] = self._deadlines.schedule(
            self.timeouts.session_timeout_ms(group.group_id) if timeout_ms is None
            else timeout_ms,
            lambda: self._fence_later(group.group_id, member_id, "its session expired"))

    def _schedule_rebalance(self, group: ConsumerGroup, member: Member) -> None:
        cancel(group.rebalance_tasks.pop(member.member_id, None))
        timeout = member.subscription.rebalance_timeout_ms
        epoch = member.member_epoch
        group.rebalance_tasks[member.member_id] = self._deadlines.schedule(
            timeout, lambda: self._fence_later(
                group.group_id, member.member_id,
                f"it failed to transition from epoch {epoch} within {timeout}ms", epoch))

    def _cancel_rebalance(self, group: ConsumerGroup, member_id: str) -> None:
        cancel(group.rebalance_tasks.pop(member_id, None))

    def _cancel_timers(self, group: ConsumerGroup, member_id: str) -> None:
        for tasks in (group.session_tasks, group.rebalance_tasks, group.join_tasks,
                      group.sync_tasks):
            cancel(tasks.pop(member_id, None))

    def _drop_consumer_group(self, group: ConsumerGroup) -> None:
        for tasks in (group.session_tasks, group.rebalance_tasks, group.join_tasks,
                      group.sync_tasks):
            for member_id in list(tasks):
                self._cancel_timers(group, member_id)

    def _start_consumer_timers(self, group: ConsumerGroup) -> None:
        """A loaded group: every member gets a session deadline, one revoking its rebalance
        deadline (Kafka does the same when a coordinator loads the partition)."""
        for member in group.members.values():
            self._schedule_session(group, member.member_id)
            if member.state is MemberState.UNREVOKED_PARTITIONS:
                self._schedule_rebalance(group, member)

    # -- the group --------------------------------------------------------------------------
    def _consumer_group(self, group_id: str, create: bool) -> tuple[ConsumerGroup, list]:
        """(the consumer group, the changes made so far); an empty classic group gives way
        to a new consumer group (its offsets kept), as Kafka's maybeDeleteEmptyClassicGroup;
        a joining member converts a non-empty one when the migration policy allows
        (``MigrationOps``)."""
        group = self._groups.get(group_id)
        changes: list[Change] = []
        if isinstance(group, ConsumerGroup) and not group.dead:
            return group, changes
        if group is not None and not (group.is_(ClassicState.DEAD)
                                      or group.is_(ClassicState.EMPTY)):
            if create and self._upgradable(group):
                return self._converted_to_consumer(group)
            raise Refused(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group")
        if not create:
            raise Refused(E.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        new = ConsumerGroup(group_id)
        if group is not None:
            new.offsets = group.offsets
            new.pending_offset_commits = group.pending_offset_commits
            if group.generation > 0:
                changes.append(ClassicGroupDeleted())
        return new, changes

    def _emitter(self, group: ConsumerGroup, changes: list) -> Callable[[Change], None]:
        def emit(change: Change) -> None:
            if self._groups.get(group.group_id) is not group and not group.converted:
                self._install_consumer_group(group)
            group.apply(change)
            if isinstance(change, (MemberSubscribed, MemberRemoved)):
                group.state_timestamp = self._clock.time_ms()
            changes.append(change)
        return emit

    def _write_changes(self, group: ConsumerGroup, changes: list[Change]):
        if not changes:
            return 0
        if self._groups.get(group.group_id) is not group and not group.converted:
            self._install_consumer_group(group)
        return self._store.write(self.partition_for(group.group_id),
                                 entries(group.group_id, changes), for_offsets=False)

    def _assignor(self, group: ConsumerGroup):
        name = group.preferred_assignor() or self.consumer.default_assignor
        return ASSIGNORS[name]

    def _subscription_metadata(self, group: ConsumerGroup) -> dict[str, TopicMetadata]:
        out = {}
        for name in sorted(group.subscribed_names(self._regex_topics)):
            topic = self.topics.topic(name)
            if topic is not None:
                out[name] = topic
        return out

    def _regex_topics(self, pattern: str) -> list[str]:
        regex = _compiled(pattern)
        return [n for n in self.topics.names() if not n.startswith("__") and regex.fullmatch(n)]

    def consumer_topics_changed(self, names: set[str] | None) -> None:
        """Topics were created, deleted or grew (None: unknown which): the consumer groups
        subscribed to them (every group with a regular expression, for a new topic) look
        at their subscription again on their next heartbeat."""
        for group in self._groups.values():
            if not isinstance(group, ConsumerGroup) or group.dead:
                continue
            if names is None or names & set(group.topics) or any(
                    m.subscription.topic_regex or names & set(m.subscription.topic_names)
                    for m in group.members.values()):
                group.metadata_stale = True

    # -- ConsumerGroupDescribe --------------------------------------------------------------
    def describe_consumer_groups(self, group_ids: list[str]) -> list[DescribedGroup]:
        return [self._describe_consumer(g) for g in group_ids]

    def _describe_consumer(self, group_id: str) -> DescribedGroup:
        error = self._group_error(group_id)
        if error:
            return DescribedGroup(group_id, error)
        group = self._groups.get(group_id)
        if not isinstance(group, ConsumerGroup) or group.dead:
            message = (f"Group {group_id} not found." if group is None
                       else f"Group {group_id} is not a consumer group.")
            return DescribedGroup(group_id, E.GROUP_ID_NOT_FOUND, message)
        members = tuple(_described(m, group.target(m.member_id))
                        for m in group.members.values())
        return DescribedGroup(group_id, 0, None, group.state.value, group.group_epoch,
                              group.assignment_epoch,
                              group.preferred_assignor() or self.consumer.default_assignor,
                              members)


def _described(m: Member, target: Assignment) -> DescribedMember:
    """As Kafka's asConsumerGroupDescribeMember: topic names in its HashSet's order, no
    regular expression as its default ""."""
    s = m.subscription
    return DescribedMember(m.member_id, s.instance_id, s.rack_id, m.member_epoch, s.client_id,
                           s.client_host, tuple(topic_name_order(s.topic_names)),
                           s.topic_regex or "", m.assigned, target,
                           CLASSIC_MEMBER if m.uses_classic_protocol else CONSUMER_MEMBER)


def _merged(member: Member, r: HeartbeatRequest) -> Subscription:
    """The member's subscription with what this heartbeat sent (null: unchanged)."""
    old = member.subscription
    return Subscription(
        client_id=r.client_id, client_host=r.client_host,
        instance_id=r.instance_id if r.instance_id is not None else old.instance_id,
        rack_id=r.rack_id if r.rack_id is not None else old.rack_id,
        topic_names=(tuple(sorted(set(r.subscribed_topic_names)))
                     if r.subscribed_topic_names is not None else old.topic_names),
        topic_regex=(r.subscribed_topic_regex or None
                     if r.subscribed_topic_regex is not None else old.topic_regex),
        rebalance_timeout_ms=(r.rebalance_timeout_ms if r.rebalance_timeout_ms != -1
                              else old.rebalance_timeout_ms),
        server_assignor=r.server_assignor if r.server_assignor is not None
        else old.server_assignor)


def _same_topics(a: dict[str, TopicMetadata], b: dict[str, TopicMetadata]) -> bool:
    """Equal subscription metadata: the same topics, ids and partition counts (racks are
    not stored, as in Kafka 4.x, so they do not count)."""
    return ({n: (t.topic_id, t.num_partitions) for n, t in a.items()}
            == {n: (t.topic_id, t.num_partitions) for n, t in b.items()})


def _topics_changed(old: Subscription, new: Subscription) -> bool:
    return old.topic_names != new.topic_names or old.topic_regex != new.topic_regex


def _check_epoch(member: Member, epoch: int, owned: Assignment | None) -> None:
    """Kafka's throwIfConsumerGroupMemberEpochIsInvalid: a heartbeat at the previous epoch
    is accepted when it owns no more than the current assignment (the answer that moved
    the member on was lost)."""
    if epoch > member.member_epoch:
        raise Refused(E.FENCED_MEMBER_EPOCH,
                      f"The consumer group member has a greater member epoch ({epoch}) than "
                      f"the one known by the group coordinator ({member.member_epoch}). "
                      "The member must abandon all its partitions and rejoin.")
    if epoch < member.member_epoch and (epoch != member.previous_member_epoch
                                        or not _is_subset(owned, member.assigned)):
        raise Refused(E.FENCED_MEMBER_EPOCH,
                      f"The consumer group member has a smaller member epoch ({epoch}) than "
                      f"the one known by the group coordinator ({member.member_epoch}). "
                      "The member must abandon all its partitions and rejoin.")


def _is_subset(owned: Assignment | None, assigned: Assignment) -> bool:
    if owned is None:
        return False
    return all(p <= assigned.get(t, frozenset()) for t, p in owned.items())


def _not_empty(value: str | None, message: str, required: bool = False) -> None:
    if (value is None and required) or (value is not None and not value.strip()):
        raise Refused(E.INVALID_REQUEST, message)


def _compiled(pattern: str) -> re.Pattern:
    """The subscription's regular expression (Kafka uses RE2/J: the common syntax is the
    same); INVALID_REGULAR_EXPRESSION when it does not compile."""
    try:
        return _compile(pattern)
    except re.error as err:
        raise Refused(INVALID_REGULAR_EXPRESSION,
                      f"SubscribedTopicRegex `{pattern}` is not a valid regular "
                      f"expression: {err}.") from None


@functools.lru_cache(maxsize=1024)
def _compile(pattern: str) -> re.Pattern:
    return re.compile(pattern)
