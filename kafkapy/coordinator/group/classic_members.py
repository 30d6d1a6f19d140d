"""Classic-protocol requests served by a consumer group (Kafka 4.x's
classicGroupJoinToConsumerGroup, classicGroupSyncToConsumerGroup,
classicGroupHeartbeatToConsumerGroup, classicGroupLeaveToConsumerGroup), a mixin of
``GroupCoordinator``: a member that speaks the classic protocol is a consumer group member
like any other (``Subscription.classic`` set), reconciled by its JoinGroups.

- JoinGroup: a first join without a member id (v4+, not static) gets MEMBER_ID_REQUIRED and
  a new id (not remembered: the next join with it creates the member).  Then the member's
  subscription (its topics and rack from the first protocol's metadata, its timeouts and
  protocols) is updated as a heartbeat would, the group epoch and the target move when
  needed, and the member reconciles one step, its owned partitions those its metadata
  reports.  The answer (once the changes are durable) carries generation = the member's
  epoch, the first protocol's name, no leader and no members; a static member of the
  classic protocol that replaces the group's last member of the consumer protocol turns
  the group into a classic group (``MigrationOps``).
- SyncGroup: the member's assigned partitions, serialized at the version of its metadata;
  REBALANCE_IN_PROGRESS when the group epoch is ahead of the member's and it is not still
  revoking.
- Heartbeat: REBALANCE_IN_PROGRESS when the member must rejoin: the group epoch moved, it
  has partitions to revoke, or partitions it waited for were released.
- LeaveGroup: the members go (no write is awaited: the handler answers at once), the group
  epoch moves.
Deadlines of a classic member: its session timeout (restarted by its JoinGroup, SyncGroup
and Heartbeat); a join deadline (its rebalance timeout) from the first answer that asks it
to rejoin until it joins; a sync deadline (the join's rebalance timeout) from its join until
it syncs.  Any of them passing fences the member.
"""
from __future__ import annotations

import structlog

from kafkapy.coordinator.group.consumer import migration
from kafkapy.coordinator.group.consumer.embedded import MalformedProtocol, decode_subscription
from kafkapy.coordinator.group.consumer.group import (PROTOCOL_TYPE, Change, ConsumerGroup,
                                                     MemberRemoved)
from kafkapy.coordinator.group.consumer.types import Member, MemberState, Subscription
from kafkapy.coordinator.group.consumer_ops import Refused, new_member_id
from kafkapy.coordinator.group.member import Protocols
from kafkapy.coordinator.group.results import JoinResult, SyncResult
from kafkapy.coordinator.group.timers import cancel
from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.replication import acks

_log = structlog.get_logger("kafkapy.coordinator.group")


class ClassicMembers:
    # -- JoinGroup ---------------------------------------------------------------------------
    def _classic_join(self, group: ConsumerGroup, member_id: str, instance_id: str | None,
                      protocol_type: str, protocols: Protocols, session_timeout_ms: int,
                      rebalance_timeout_ms: int, client_id: str, client_host: str,
                      require_known_member_id: bool, respond) -> None:
        try:
            new_id = member_id or new_member_id()
            self._check_classic_joiner(group, new_id, protocol_type, protocols)
            if require_known_member_id and not member_id and instance_id is None:
                _log.info("dynamic member with unknown member id joins the consumer group",
                          group_id=group.group_id, member_id=new_id)
                respond(JoinResult(E.MEMBER_ID_REQUIRED, new_id))
                return
            changes: list[Change] = []
            member, downgrade = self._classic_joined(
                group, new_id, not member_id, instance_id, protocols, session_timeout_ms,
                rebalance_timeout_ms, client_id, client_host, changes)
        except Refused as refused:
            respond(JoinResult(refused.code, ""))
            return
        result = JoinResult(0, member.member_id, member.member_epoch, PROTOCOL_TYPE,
                            protocols[0][0])

        def written(code: int) -> None:
            if code:
                respond(JoinResult(code, ""))
                return
            cancel(group.join_tasks.pop(member.member_id, None))
            if not downgrade and self._groups.get(group.group_id) is group:
                self._schedule_session(group, member.member_id, session_timeout_ms)
                self._schedule_sync(group, member.member_id, rebalance_timeout_ms)
            respond(result)

        acks.then(self._write_changes(group, changes), written)

    def _check_classic_joiner(self, group: ConsumerGroup, member_id: str, protocol_type: str,
                              protocols: Protocols) -> None:
        if len(group.members) >= self.consumer.max_size and member_id not in group.members:
            raise Refused(E.GROUP_MAX_SIZE_REACHED,
                          "The consumer group has reached its maximum capacity of "
                          f"{self.consumer.max_size} members.")
        if not migration.supports_classic_protocols(group, protocol_type,
                                                    [n for n, _ in protocols]):
            raise Refused(E.INCONSISTENT_GROUP_PROTOCOL,
                          f"Member {member_id}'s protocols are not supported.")

    def _classic_joined(self, group: ConsumerGroup, member_id: str, unknown: bool,
                        instance_id: str | None, protocols: Protocols, session_timeout_ms: int,
                        rebalance_timeout_ms: int, client_id: str, client_host: str,
                        changes: list) -> tuple[Member, bool]:
        """(the member after its join, whether the group became a classic group)."""
        try:
            decoded = decode_subscription(protocols[0][1])
        except MalformedProtocol:
            raise Refused(E.UNKNOWN, "Malformed embedded consumer protocol in subscription "
                                     "deserialization.") from None
        existing = group.static_member(instance_id)
        downgrade = existing is not None and self._downgrades_replacing(group, existing.member_id)
        member = self._classic_member_for(group, member_id, unknown, instance_id, existing,
                                          client_id, client_host, changes)
        emit = self._emitter(group, changes)
        subscription = migration.classic_subscription(
            member.subscription, decoded, client_id=client_id, client_host=client_host,
            instance_id=instance_id, session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms, protocols=protocols)
        self._update_member(group, member, subscription, emit)
        owned = migration.by_id(decoded.owned, self._topic_id)
        after = self._reconcile(group, group.members[member.member_id], owned, emit)
        if downgrade:
            self._convert_to_classic(group, None, changes, rebalance=False)
        return after, downgrade

    def _classic_member_for(self, group: ConsumerGroup, member_id: str, unknown: bool,
                            instance_id: str | None, existing: Member | None, client_id: str,
                            client_host: str, changes: list) -> Member:
        """Kafka's getOrMaybeSubscribe{Dynamic,Static}ConsumerGroupMember for a classic
        member: no epoch to check; a static member without a member id replaces the
        instance id's member whatever it is doing."""
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                _log.info("member joins the consumer group using the classic protocol",
                          group_id=group.group_id, member_id=member_id)
                return Member(member_id, Subscription(client_id, client_host))
            return member
        if unknown:
            if existing is None:
                _log.info("static member joins the consumer group using the classic protocol",
                          group_id=group.group_id, member_id=member_id, instance_id=instance_id)
                return Member(member_id, Subscription(client_id, client_host,
                                                      instance_id=instance_id))
            return self._replaced(group, existing, member_id, changes)
        if existing is None:
            raise Refused(E.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        if existing.member_id != member_id:
            raise Refused(E.FENCED_INSTANCE_ID,
                          f"Static member {member_id} with instance id {instance_id} was "
                          f"fenced by member {existing.member_id}.")
        return existing

    # -- SyncGroup ---------------------------------------------------------------------------
    def _classic_sync(self, group: ConsumerGroup, generation: int, member_id: str,
                      instance_id: str | None, protocol_type: str | None,
                      protocol_name: str | None, respond) -> None:
        try:
            member = self._classic_member(group, member_id, instance_id, generation)
            _check_protocol(member, protocol_type, protocol_name)
            if (group.group_epoch > member.member_epoch
                    and member.state is not MemberState.UNREVOKED_PARTITIONS):
                self._schedule_join(group, member)
                raise Refused(E.REBALANCE_IN_PROGRESS,
                              f"A new rebalance is triggered in group {group.group_id} and "
                              f"member {member.member_id} should rejoin to catch up.")
            try:
                data = migration.assignment_of(member, self._topic_names(group))
            except MalformedProtocol:
                raise Refused(E.UNKNOWN, "Malformed embedded consumer protocol in version "
                                         "deserialization.") from None
        except Refused as refused:
            respond(SyncResult(refused.code))
            return
        cancel(group.sync_tasks.pop(member_id, None))
        self._schedule_session(group, member_id, member.subscription.classic.session_timeout_ms)
        respond(SyncResult(0, data, protocol_type, protocol_name))

    # -- Heartbeat ---------------------------------------------------------------------------
    def _classic_heartbeat(self, group: ConsumerGroup, member_id: str, instance_id: str | None,
                           generation: int) -> int:
        try:
            member = self._classic_member(group, member_id, instance_id, generation)
        except Refused as refused:
            return refused.code
        self._schedule_session(group, member_id, member.subscription.classic.session_timeout_ms)
        if (member.member_epoch < group.group_epoch
                or member.state is MemberState.UNREVOKED_PARTITIONS
                or (member.state is MemberState.UNRELEASED_PARTITIONS
                    and not migration.waiting_on_unreleased(group, member))):
            self._schedule_join(group, member)
            return E.REBALANCE_IN_PROGRESS
        return 0

    def _classic_member(self, group: ConsumerGroup, member_id: str, instance_id: str | None,
                        generation: int) -> Member:
        """Kafka's validateConsumerGroupMember, then the member must speak the classic
        protocol and name its epoch as its generation."""
        member = self._member_named(group, member_id, instance_id)
        if not member.uses_classic_protocol:
            raise Refused(E.UNKNOWN_MEMBER_ID,
                          f"Member {member.member_id} does not use the classic protocol.")
        if generation != member.member_epoch:
            raise Refused(E.ILLEGAL_GENERATION,
                          f"The request generation id {generation} is not equal to the member "
                          f"epoch {member.member_epoch} of member {member_id}.")
        return member

    def _member_named(self, group: ConsumerGroup, member_id: str,
                      instance_id: str | None) -> Member:
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                raise Refused(E.UNKNOWN_MEMBER_ID,
                              f"Member {member_id} is not a member of group {group.group_id}.")
            return member
        member = group.static_member(instance_id)
        if member is None:
            raise Refused(E.UNKNOWN_MEMBER_ID,
                          f"Member with instance id {instance_id} is not a member of group "
                          f"{group.group_id}.")
        if member.member_id != member_id:
            raise Refused(E.FENCED_INSTANCE_ID,
                          f"Static member {member_id} with instance id {instance_id} was "
                          f"fenced by member {member.member_id}.")
        return member

    # -- LeaveGroup --------------------------------------------------------------------------
    def _classic_leave(self, group: ConsumerGroup,
                       members: list[tuple[str, str | None]]) -> list[int]:
        """One error per (member id, instance id); the group epoch moves once if any left."""
        changes: list[Change] = []
        emit = self._emitter(group, changes)
        errors = []
        for member_id, instance_id in members:
            try:
                member = self._leaving(group, member_id, instance_id)
            except Refused as refused:
                errors.append(refused.code)
                continue
            _log.info("member left the consumer group through LeaveGroup",
                      group_id=group.group_id, member_id=member.member_id,
                      instance_id=instance_id)
            self._cancel_timers(group, member.member_id)
            emit(MemberRemoved(member.member_id))
            errors.append(0)
        if changes:
            self._after_departure(group, emit)
            self._write_changes(group, changes)
        return errors

    def _leaving(self, group: ConsumerGroup, member_id: str, instance_id: str | None) -> Member:
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                raise Refused(E.UNKNOWN_MEMBER_ID)
        else:
            member = group.static_member(instance_id)
            if member is None:
                raise Refused(E.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
            # an admin removes a static member by instance id alone
            if member_id and member.member_id != member_id:
                raise Refused(E.FENCED_INSTANCE_ID)
        if not member.uses_classic_protocol:
            raise Refused(E.UNKNOWN_MEMBER_ID)
        return member

    # -- deadlines -----------------------------------------------------------------------------
    def _schedule_join(self, group: ConsumerGroup, member: Member) -> None:
        """The join deadline, unless one runs (Kafka's
        scheduleConsumerGroupJoinTimeoutIfAbsent)."""
        member_id = member.member_id
        if member_id in group.join_tasks:
            return

        def expired() -> None:
            group.join_tasks.pop(member_id, None)
            self._fence_later(group.group_id, member_id,
                              "the classic member failed to join within the rebalance timeout")
        group.join_tasks[member_id] = self._deadlines.schedule(
            member.subscription.rebalance_timeout_ms, expired)

    def _schedule_sync(self, group: ConsumerGroup, member_id: str, timeout_ms: int) -> None:
        cancel(group.sync_tasks.pop(member_id, None))

        def expired() -> None:
            group.sync_tasks.pop(member_id, None)
            self._fence_later(group.group_id, member_id,
                              "the member failed to sync within timeout")
        group.sync_tasks[member_id] = self._deadlines.schedule(timeout_ms, expired)


def _check_protocol(member: Member, protocol_type: str | None,
                    protocol_name: str | None) -> None:
    """Kafka's throwIfClassicProtocolUnmatched."""
    name = member.subscription.classic.protocols[0].name
    if protocol_type is not None and protocol_type != PROTOCOL_TYPE:
        raise Refused(E.INCONSISTENT_GROUP_PROTOCOL,
                      f"The protocol type {protocol_type} from member {member.member_id} "
                      f"request is not equal to the group protocol type {PROTOCOL_TYPE}.")
    if protocol_name is not None and protocol_name != name:
        raise Refused(E.INCONSISTENT_GROUP_PROTOCOL,
                      f"The protocol name {protocol_name} from member {member.member_id} "
                      f"request is not equal to the protocol name {name} returned in the "
                      "join response.")
