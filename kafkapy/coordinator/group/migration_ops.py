"""Online migration of a group between the classic and the consumer group protocols (Kafka
4.x's GroupMetadataManager: validateOnlineUpgrade, convertToConsumerGroup,
validateOnlineDowngradeWithFencedMember / WithReplacedMemberId, convertToClassicGroup), a
mixin of ``GroupCoordinator``; the conversions themselves are ``consumer.migration``'s.

- Upgrade: a member of the consumer protocol joining (ConsumerGroupHeartbeat, epoch 0) a
  non-empty classic group converts it when ``group.consumer.migration.policy`` allows
  upgrades, the group uses the ``consumer`` protocol type and is no larger than
  ``group.consumer.max.size``.  The new consumer group is built from the conversion's
  changes (the classic tombstone, then the members' records) and becomes the group of its
  id with the heartbeat's first change; then the classic group is retired: its parked
  JoinGroup and SyncGroup requests are answered REBALANCE_IN_PROGRESS and its deadlines
  cancelled.  The converted members' sessions run at their classic session timeouts.
- Downgrade: when the last member of the consumer protocol leaves or is fenced (or, as a
  static member, is replaced by one of the classic protocol) and every other member speaks
  the classic protocol, a policy that allows downgrades turns the group into a classic
  group of at most ``group.max.size`` members; a departure then starts a rebalance, so the
  members rejoin the classic group with the assignments they kept.
The offsets of the group id go with it from one kind to the other.
"""
from __future__ import annotations

import uuid

import structlog

from kafkapy.coordinator.group.consumer import migration
from kafkapy.coordinator.group.consumer.embedded import MalformedProtocol
from kafkapy.coordinator.group.consumer.group import Change, ConsumerGroup
from kafkapy.coordinator.group.consumer_ops import Refused
from kafkapy.coordinator.group.group import CONSUMER_PROTOCOL_TYPE, GroupMetadata
from kafkapy.protocol.errors import ErrorCode as E

_log = structlog.get_logger("kafkapy.coordinator.group")


class MigrationOps:
    # -- upgrade ----------------------------------------------------------------------------
    def _upgradable(self, classic: GroupMetadata) -> bool:
        """Kafka's validateOnlineUpgrade."""
        group_id = classic.group_id
        if not migration.upgrade_enabled(self.consumer.migration_policy):
            _log.info("cannot upgrade the classic group to a consumer group: online upgrade "
                      "is disabled", group_id=group_id)
            return False
        if classic.protocol_type != CONSUMER_PROTOCOL_TYPE:
            _log.info("cannot upgrade the classic group to a consumer group: it does not use "
                      "the consumer embedded protocol", group_id=group_id)
            return False
        if classic.size > self.consumer.max_size:
            _log.info("cannot upgrade the classic group to a consumer group: it has more "
                      "members than the consumer group maximum size", group_id=group_id)
            return False
        return True

    def _converted_to_consumer(self, classic: GroupMetadata) -> tuple[ConsumerGroup, list]:
        """Kafka's convertToConsumerGroup: (the consumer group, its changes so far), the group
        not yet installed (``_install_consumer_group`` does it with the heartbeat's first
        change, so a heartbeat refused before that leaves the classic group as it was)."""
        group_id = classic.group_id
        if classic.protocol_name is None:
            raise Refused(E.UNKNOWN,
                          f"The classic group {group_id} has no protocol yet.")
        try:
            changes = migration.upgrade_changes(classic, self._topic_id)
        except MalformedProtocol as err:
            _log.warning("cannot upgrade the classic group: the embedded consumer protocol "
                         "is malformed", group_id=group_id, error=str(err))
            raise Refused(E.GROUP_ID_NOT_FOUND,
                          f"Cannot upgrade the classic group {group_id} to consumer group "
                          "because the embedded consumer protocol is malformed.") from None
        group = ConsumerGroup(group_id)
        group.offsets = classic.offsets
        group.pending_offset_commits = classic.pending_offset_commits
        group.state_timestamp = self._clock.time_ms()
        for change in changes:
            group.apply(change)
        _log.info("converting the classic group to a consumer group", group_id=group_id,
                  members=len(group.members), epoch=group.group_epoch)
        return group, list(changes)

    def _install_consumer_group(self, group: ConsumerGroup) -> None:
        """``group`` becomes the group of its id; a classic group it replaces is retired
        (Kafka's completeAllJoinFutures / completeAllSyncFutures with
        REBALANCE_IN_PROGRESS; its deadlines go with it) and the members it brought start
        their sessions at their classic session timeouts."""
        old = self._groups.get(group.group_id)
        self._groups[group.group_id] = group
        if isinstance(old, GroupMetadata):
            self._drop_group(old, E.REBALANCE_IN_PROGRESS)
            for member in group.members.values():
                self._schedule_session(group, member.member_id,
                                       member.subscription.classic.session_timeout_ms)

    # -- downgrade --------------------------------------------------------------------------
    def _downgrades_without(self, group: ConsumerGroup, member_id: str) -> bool:
        """Kafka's validateOnlineDowngradeWithFencedMember."""
        if not migration.all_classic_except(group, member_id) or len(group.members) <= 1:
            return False
        return self._downgrade_allowed(group, len(group.members) - 1)

    def _downgrades_replacing(self, group: ConsumerGroup, member_id: str) -> bool:
        """Kafka's validateOnlineDowngradeWithReplacedMemberId: a static member of the
        classic protocol replaces ``member_id``."""
        if not migration.all_classic_except(group, member_id):
            return False
        return self._downgrade_allowed(group, len(group.members))

    def _downgrade_allowed(self, group: ConsumerGroup, size: int) -> bool:
        if not migration.downgrade_enabled(self.consumer.migration_policy):
            _log.info("cannot downgrade the consumer group to a classic group: online "
                      "downgrade is disabled", group_id=group.group_id)
            return False
        if size > self.settings.max_size:
            _log.info("cannot downgrade the consumer group to a classic group: it has more "
                      "members than the classic group maximum size", group_id=group.group_id)
            return False
        return True

    def _convert_to_classic(self, group: ConsumerGroup, leaving: str | None,
                            changes: list[Change], rebalance: bool) -> GroupMetadata:
        """Kafka's convertToClassicGroup: the change recording it joins ``changes``, the
        classic group replaces ``group`` at once (heartbeat deadlines for its members) and,
        with ``rebalance``, prepares a rebalance so they rejoin."""
        group_id = group.group_id
        try:
            down = migration.downgraded(group, leaving, self._clock.time_ms(),
                                        self._topic_names(group))
        except MalformedProtocol as err:
            raise Refused(E.GROUP_ID_NOT_FOUND,
                          f"Cannot downgrade the classic group {group_id}: {err}.") from None
        self._emitter(group, changes)(down.change)
        self._drop_consumer_group(group)
        classic = down.group
        classic.offsets = group.offsets
        classic.pending_offset_commits = group.pending_offset_commits
        self._groups[group_id] = classic
        for member in classic.members.values():
            self._schedule_heartbeat(classic, member)
        _log.info("converted the consumer group to a classic group", group_id=group_id,
                  members=classic.size, generation=classic.generation)
        if rebalance:
            self._prepare_rebalance(classic, f"Downgrade group {group_id} from consumer to "
                                             "classic.")
        return classic

    # -- topic names and ids (the coordinator's metadata) ------------------------------------
    def _topic_id(self, name: str) -> uuid.UUID | None:
        topic = self.topics.topic(name)
        return topic.topic_id if topic is not None else None

    def _topic_names(self, group: ConsumerGroup) -> migration.TopicName:
        """A topic's name by its id, as the metadata has it now (None: no such topic); the
        group's subscribed topics are looked at first, every topic only when they miss."""
        known = {t.topic_id: name for name, t in group.topics.items()}

        def name_of(topic_id: uuid.UUID) -> str | None:
            name = known.get(topic_id)
            if name is not None and self._topic_id(name) == topic_id:
                return name
            return next((n for n in self.topics.names() if self._topic_id(n) == topic_id),
                        None)
        return name_of
