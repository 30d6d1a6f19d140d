"""The group coordinator: membership protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup).

It serves the groups whose ``__consumer_offsets`` partition this broker leads
and has loaded (``owns``).  Requests are answered through callbacks (``respond``)
so that parked JoinGroup/SyncGroup requests are answered when the rebalance
completes; everything runs on the event loop, deadlines on the purgatory timer
(``Deadlines``), so tests drive it with a MockClock.

Rebalance (Kafka's classic protocol):
- a join that changes membership or metadata moves the group to
  PreparingRebalance and parks joins until every member has rejoined (and no
  MEMBER_ID_REQUIRED id is outstanding) or the rebalance timeout passes (members
  that did not rejoin are removed); a group coming from Empty waits
  group.initial.rebalance.delay.ms first, extended while new members arrive,
  up to the rebalance timeout;
- then the generation is bumped, a protocol is chosen (common to all, most
  votes), the leader gets every member's metadata and the group moves to
  CompletingRebalance; the leader's SyncGroup assignment is persisted and,
  once that write is durable (the high watermark passed it: a later loop turn
  when followers must catch up), handed out and the group becomes Stable;
- a member whose session timeout passes without a heartbeat (and that is not
  parked in a join/sync) is removed, which triggers a rebalance.
Offset and admin operations live in the mixins ``OffsetOps`` and ``AdminOps``; the
consumer group protocol (KIP-848) in ``ConsumerOps``.  Consumer groups share the group
id space and the offsets: classic requests to a non-empty consumer group are served by it
(``ClassicMembers``: its members that speak the classic protocol), an empty group of one
kind gives way to a new group of the other, and a non-empty group changes kind online
when ``group.consumer.migration.policy`` allows (``MigrationOps``).  Share groups (KIP-932)
are ``ShareOps``'; they share the group id space but never change kind: a classic
JoinGroup to a share group's id answers INCONSISTENT_GROUP_PROTOCOL, its SyncGroup,
Heartbeat and LeaveGroup UNKNOWN_MEMBER_ID, as Kafka 4.x's.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Mapping

import structlog

from kafkapy.coordinator.group import records as R
from kafkapy.coordinator.group.admin_ops import AdminOps
from kafkapy.coordinator.group.classic_members import ClassicMembers
from kafkapy.coordinator.group.consumer.changes import deletion_entries, rebuilt
from kafkapy.coordinator.group.consumer.group import ConsumerGroup
from kafkapy.coordinator.group.consumer.settings import ConsumerSettings
from kafkapy.coordinator.group.consumer_ops import ConsumerOps, GroupTimeouts, TopicView
from kafkapy.coordinator.group.group import GroupMetadata, GroupState
from kafkapy.coordinator.group.hashing import partition_for
from kafkapy.coordinator.group.member import MemberMetadata, Protocols
from kafkapy.coordinator.group.migration_ops import MigrationOps
from kafkapy.coordinator.group.offset_ops import OffsetOps
from kafkapy.coordinator.group.persistence import Loaded
from kafkapy.coordinator.group.results import JoinResult, SyncResult
from kafkapy.coordinator.group.share.group import ShareGroup
from kafkapy.coordinator.group.share.settings import ShareSettings
from kafkapy.coordinator.group.share_admin_ops import ShareAdminOps
from kafkapy.coordinator.group.share_ops import BrokerShareTimeouts, ShareOps, ShareTimeouts
from kafkapy.coordinator.group.timers import Deadlines, cancel
from kafkapy.coordinator.group.txn_offsets import TxnOffsetOps
from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.replication import acks

_log = structlog.get_logger("kafkapy.coordinator.group")
_S = GroupState
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000


@dataclass(frozen=True)
class GroupSettings:
    num_partitions: int = 50
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1800000
    initial_rebalance_delay_ms: int = 3000
    max_size: int = 2**31 - 1
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    retention_check_interval_ms: int = 600000
    metadata_max_bytes: int = 4096

    @classmethod
    def from_config(cls, config) -> "GroupSettings":
        return cls(config["offsets.topic.num.partitions"], config["group.min.session.timeout.ms"],
                   config["group.max.session.timeout.ms"],
                   config["group.initial.rebalance.delay.ms"], config["group.max.size"],
                   config["offsets.retention.minutes"] * 60000,
                   config["offsets.retention.check.interval.ms"],
                   config["offset.metadata.max.bytes"])


Respond = Callable[[object], None]


class _NoTopics:
    """No metadata: every subscribed topic is missing (unit tests of the classic side)."""

    def topic(self, name: str):
        return None

    def names(self):
        return ()


class _BrokerTimeouts:
    """Every group at the broker's ``group.consumer.*`` session and heartbeat settings."""

    def __init__(self, consumer: ConsumerSettings) -> None:
        self._consumer = consumer

    def session_timeout_ms(self, group_id: str) -> int:
        return self._consumer.session_timeout_ms

    def heartbeat_interval_ms(self, group_id: str) -> int:
        return self._consumer.heartbeat_interval_ms


class GroupCoordinator(ShareOps, ShareAdminOps, OffsetOps, AdminOps, TxnOffsetOps, ConsumerOps,
                       ClassicMembers, MigrationOps):
    def __init__(self, settings: GroupSettings, clock, deadlines: Deadlines, store, *,
                 consumer: ConsumerSettings = ConsumerSettings(),
                 topics: TopicView | None = None,
                 timeouts: GroupTimeouts | None = None,
                 share: ShareSettings = ShareSettings(),
                 share_timeouts: ShareTimeouts | None = None,
                 persister=None) -> None:
        """``consumer``: the consumer group protocol's settings; ``topics``: the metadata
        its assignors read; ``timeouts``: each group's session timeout and heartbeat
        interval (its group configs, else the broker's); ``share``, ``share_timeouts``:
        the same for share groups; ``persister``: the share coordinator's
        (``coordinator.share.persister.Persister``), which keeps share partitions' state."""
        self.settings = settings
        self.consumer = consumer
        self.topics = topics or _NoTopics()
        self.timeouts = timeouts or _BrokerTimeouts(consumer)
        self.share = share
        self.share_timeouts = share_timeouts or BrokerShareTimeouts(share)
        self.persister = persister
        self._share_tasks: set = set()   # share partitions being initialized
        self._clock = clock
        self._deadlines = deadlines
        self._store = store
        self._groups: dict[str, GroupMetadata] = {}
        self._owned: set[int] = set()
        self._loading: set[int] = set()
        self._active = True
        self._cleanup_task = None

    # -- ownership ------------------------------------------------------------------
    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.settings.num_partitions)

    @property
    def groups(self) -> Mapping[str, GroupMetadata]:
        """The groups this coordinator holds, by id (read-only: the metrics' view)."""
        return MappingProxyType(self._groups)

    def begin_loading(self, index: int) -> None:
        self._loading.add(index)

    def finish_loading(self, index: int, loaded: Loaded) -> None:
        """Install what a partition holds and start serving its groups."""
        for group_id in loaded.group_ids():
            offsets = loaded.offsets.get(group_id, {})
            stored = loaded.consumer_groups.get(group_id)
            share = loaded.share_groups.get(group_id)
            if stored is not None:
                self._install_consumer(group_id, stored, offsets)
            elif share is not None:
                self._install_share(share)
            else:
                self._install(group_id, loaded.groups.get(group_id), offsets)
        self.install_pending_txn_offsets(loaded.pending_txn)  # open transactions' offsets
        self._loading.discard(index)
        self._owned.add(index)
        if loaded.group_ids():
            _log.info("loaded group partition", partition=index, groups=len(loaded.group_ids()))

    def unload(self, index: int) -> None:
        """This broker no longer leads partition ``index``: forget its groups."""
        self._owned.discard(index)
        self._loading.discard(index)
        self.drop_pending_txn_offsets(index)  # open transactions' offsets
        for group_id in [g for g in self._groups if self.partition_for(g) == index]:
            self._drop_group(self._groups.pop(group_id), E.NOT_COORDINATOR)

    def serves(self, index: int) -> bool:
        """Whether partition ``index`` is loaded or loading here."""
        return index in self._owned or index in self._loading

    def owns(self, group_id: str) -> bool:
        return self.partition_for(group_id) in self._owned

    def shutdown(self) -> None:
        self._active = False
        for group in self._groups.values():
            self._drop_group(group, E.NOT_COORDINATOR)
        self._groups.clear()
        for task in list(self._share_tasks):
            task.cancel()
        if self._cleanup_task is not None:
            self._cleanup_task.cancel()

    def _install(self, group_id: str, stored: R.StoredGroup | None, offsets: dict) -> None:
        now = self._clock.time_ms()
        members = stored.members if stored else []
        group = GroupMetadata(group_id, now, _S.STABLE if members else _S.EMPTY)
        group.offsets = dict(offsets)
        if stored is not None:
            group.protocol_type = stored.protocol_type or None
            group.generation = stored.generation
            group.protocol_name = stored.protocol
            if stored.current_state_timestamp >= 0:
                group.state_timestamp = stored.current_state_timestamp
        for m in members:
            member = MemberMetadata(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                    m.rebalance_timeout_ms, m.session_timeout_ms,
                                    group.protocol_type or "", [(stored.protocol or "", m.subscription)])
            member.assignment = m.assignment
            group.add(member)
        group.leader_id = stored.leader if stored and stored.leader in group.members else \
            next(iter(group.members), None)
        self._groups[group_id] = group
        for member in group.members.values():
            self._schedule_heartbeat(group, member)

    def _install_consumer(self, group_id: str, stored, offsets: dict) -> None:
        group = rebuilt(group_id, stored)
        group.offsets = dict(offsets)
        group.state_timestamp = self._clock.time_ms()
        group.metadata_stale = True     # the topics may have changed while it was not served
        self._groups[group_id] = group
        self._start_consumer_timers(group)

    def _drop_group(self, group: GroupMetadata, error: int) -> None:
        if isinstance(group, ConsumerGroup):
            self._drop_consumer_group(group)
            return
        if isinstance(group, ShareGroup):
            self._drop_share_group(group)
            return
        for member in group.members.values():
            member.answer_join(JoinResult(error, member.member_id))
            member.answer_sync(SyncResult(error))
            cancel(member.heartbeat_task)
        for task in group.pending_tasks.values():
            task.cancel()
        cancel(group.join_task)
        cancel(group.sync_task)

    # -- validation -----------------------------------------------------------------
    def _group_error(self, group_id: str | None, allow_empty: bool = False) -> int:
        if group_id is None or (not group_id and not allow_empty):
            return E.INVALID_GROUP_ID
        if not self._active:
            return E.COORDINATOR_NOT_AVAILABLE
        index = self.partition_for(group_id)
        if index in self._loading:
            return E.COORDINATOR_LOAD_IN_PROGRESS
        if index not in self._owned:
            return E.NOT_COORDINATOR
        return 0

    def _new_group(self, group_id: str) -> GroupMetadata:
        group = GroupMetadata(group_id, self._clock.time_ms())
        self._groups[group_id] = group
        return group

    # -- JoinGroup --------------------------------------------------------------------
    def join(self, group_id: str, member_id: str, instance_id: str | None, protocol_type: str,
             protocols: Protocols, session_timeout_ms: int, rebalance_timeout_ms: int,
             client_id: str, client_host: str, require_known_member_id: bool,
             respond: Respond) -> None:
        error = self._group_error(group_id)
        s = self.settings
        if not error and not s.min_session_timeout_ms <= session_timeout_ms <= s.max_session_timeout_ms:
            error = E.INVALID_SESSION_TIMEOUT
        group = self._groups.get(group_id)
        if not error and isinstance(group, ShareGroup) and not group.dead:
            respond(JoinResult(E.INCONSISTENT_GROUP_PROTOCOL, ""))
            return
        if not error and isinstance(group, ConsumerGroup):
            if group.members and not group.dead:     # served as a consumer group member
                self._classic_join(group, member_id, instance_id, protocol_type, protocols,
                                   session_timeout_ms, rebalance_timeout_ms, client_id,
                                   client_host, require_known_member_id, respond)
                return
            group = self._classic_in_place_of(group)
        if not error and group is None:
            if member_id:
                error = E.UNKNOWN_MEMBER_ID
            else:
                group = self._new_group(group_id)
        if not error and not self._accept_joining_member(group, member_id):
            error = E.GROUP_MAX_SIZE_REACHED
        if error:
            respond(JoinResult(error, "" if error == E.GROUP_MAX_SIZE_REACHED else member_id))
            return
        args = (group, instance_id, protocol_type, protocols, session_timeout_ms,
                rebalance_timeout_ms, client_id, client_host, respond)
        if member_id:
            self._join_known(member_id, *args)
        else:
            self._join_unknown(require_known_member_id, *args)
        if group.is_(_S.PREPARING_REBALANCE):
            self._try_complete_join(group)

    def _classic_in_place_of(self, group: ConsumerGroup) -> GroupMetadata:
        """A classic member joining an empty consumer group: it is deleted (its tombstones
        written, its offsets kept for the new classic group), as Kafka's
        maybeDeleteEmptyConsumerGroup."""
        self._drop_consumer_group(group)
        tombstones = deletion_entries(group)
        self._store.write(self.partition_for(group.group_id), tombstones, for_offsets=False,
                          wait=False)
        classic = self._new_group(group.group_id)
        classic.offsets = group.offsets
        classic.pending_offset_commits = group.pending_offset_commits
        return classic

    def _accept_joining_member(self, group: GroupMetadata, member_id: str) -> bool:
        max_size = self.settings.max_size
        if group.state in (_S.EMPTY, _S.DEAD):
            return True
        if group.is_(_S.PREPARING_REBALANCE):
            return ((group.has(member_id) and group.get(member_id).awaiting_join)
                    or group.num_awaiting_join < max_size)
        return group.has(member_id) or group.size < max_size

    def _join_unknown(self, require_known_member_id: bool, group: GroupMetadata,
                      instance_id, protocol_type, protocols, session_timeout_ms,
                      rebalance_timeout_ms, client_id, client_host, respond) -> None:
        if group.is_(_S.DEAD):
            respond(JoinResult(E.COORDINATOR_NOT_AVAILABLE, ""))
            return
        if not group.supports_protocols(protocol_type, [n for n, _ in protocols]):
            respond(JoinResult(E.INCONSISTENT_GROUP_PROTOCOL, ""))
            return
        # Kafka's GroupMetadata.generateMemberId: a static member's id starts with its
        # instance id (even an empty one), a dynamic member's with its client id.
        new_id = f"{client_id if instance_id is None else instance_id}-{uuid.uuid4()}"
        old_id = group.static_member_id(instance_id)
        if old_id is not None:
            self._replace_static_member(group, old_id, new_id, instance_id, protocols,
                                        session_timeout_ms, rebalance_timeout_ms, respond)
        elif instance_id is None and require_known_member_id:
            group.pending_members.add(new_id)
            group.pending_tasks[new_id] = self._deadlines.schedule(
                session_timeout_ms, lambda: self._expire_pending(group, new_id))
            respond(JoinResult(E.MEMBER_ID_REQUIRED, new_id))
        else:
            self._add_member_and_rebalance(group, new_id, instance_id, protocol_type, protocols,
                                           session_timeout_ms, rebalance_timeout_ms, client_id,
                                           client_host, respond)

    def _join_known(self, member_id: str, group: GroupMetadata, instance_id, protocol_type,
                    protocols, session_timeout_ms, rebalance_timeout_ms, client_id,
                    client_host, respond) -> None:
        if group.is_(_S.DEAD):
            respond(JoinResult(E.COORDINATOR_NOT_AVAILABLE, member_id))
        elif not group.supports_protocols(protocol_type, [n for n, _ in protocols]):
            respond(JoinResult(E.INCONSISTENT_GROUP_PROTOCOL, member_id))
        elif member_id in group.pending_members:
            self._add_member_and_rebalance(group, member_id, instance_id, protocol_type, protocols,
                                           session_timeout_ms, rebalance_timeout_ms, client_id,
                                           client_host, respond)
        elif group.is_static_member_fenced(instance_id, member_id):
            respond(JoinResult(E.FENCED_INSTANCE_ID, member_id))
        elif not group.has(member_id) or (instance_id is not None
                                          and group.static_member_id(instance_id) is None):
            respond(JoinResult(E.UNKNOWN_MEMBER_ID, member_id))
        else:
            self._rejoin(group, group.get(member_id), protocols, session_timeout_ms,
                         rebalance_timeout_ms, respond)

    def _rejoin(self, group: GroupMetadata, member: MemberMetadata, protocols,
                session_timeout_ms, rebalance_timeout_ms, respond) -> None:
        state = group.state
        unchanged = member.matches(protocols)
        if state is _S.COMPLETING_REBALANCE and unchanged:
            respond(self._join_result(group, member))
        elif state is _S.STABLE and unchanged and not group.is_leader(member.member_id):
            respond(self._join_result(group, member))
        elif state in (_S.PREPARING_REBALANCE, _S.COMPLETING_REBALANCE, _S.STABLE):
            group.update_member(member, protocols, rebalance_timeout_ms, session_timeout_ms,
                                respond)
            self._maybe_prepare_rebalance(group, f"member {member.member_id} rejoined")
        else:
            respond(JoinResult(E.UNKNOWN_MEMBER_ID, member.member_id))

    def _join_result(self, group: GroupMetadata, member: MemberMetadata) -> JoinResult:
        members = []
        if group.is_leader(member.member_id):
            members = [(m.member_id, m.group_instance_id, data)
                       for m, data in group.current_member_metadata()]
        return JoinResult(0, member.member_id, group.generation, group.protocol_type,
                          group.protocol_name, group.leader_id or "", members)

    def _add_member_and_rebalance(self, group: GroupMetadata, member_id: str, instance_id,
                                  protocol_type, protocols, session_timeout_ms,
                                  rebalance_timeout_ms, client_id, client_host, respond) -> None:
        member = MemberMetadata(member_id, instance_id, client_id, client_host,
                                rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols)
        member.is_new = True
        if group.is_(_S.PREPARING_REBALANCE) and group.generation == 0:
            group.new_member_added = True
        cancel(group.pending_tasks.pop(member_id, None))
        group.add(member, respond)
        self._schedule_heartbeat(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(group, f"adding new member {member_id}")

    def _replace_static_member(self, group: GroupMetadata, old_id: str, new_id: str,
                               instance_id: str, protocols, session_timeout_ms,
                               rebalance_timeout_ms, respond) -> None:
        """A known group.instance.id joins with a new member id: the old one is fenced."""
        old_member = group.get(old_id)
        old_member.answer_join(JoinResult(E.FENCED_INSTANCE_ID, old_id))
        old_member.answer_sync(SyncResult(E.FENCED_INSTANCE_ID))
        old_leader = group.leader_id
        old_protocols = old_member.protocols
        member = group.replace_static_member(instance_id, old_id, new_id)
        self._schedule_heartbeat(group, member)
        group.update_member(member, protocols, rebalance_timeout_ms, session_timeout_ms, respond)
        if group.is_(_S.STABLE):
            if group.protocol_name == group.select_protocol():
                self._static_rejoin_stable(group, member, old_id, old_leader, old_protocols)
            else:
                self._maybe_prepare_rebalance(group, f"static member {instance_id} changed protocols")
        elif group.is_(_S.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, f"static member {instance_id} rejoined during sync")

    def _static_rejoin_stable(self, group: GroupMetadata, member: MemberMetadata, old_id: str,
                              old_leader: str | None, old_protocols) -> None:
        """Kafka's updateStaticMemberAndRebalance in Stable: the new member id is stored
        (a durable write) before the member is answered; a failed write reverts it."""
        written = self._store_group(group, {m.member_id: m.assignment
                                            for m in group.members.values()})

        def stored(error: int) -> None:
            if error:
                member.protocols = old_protocols
                group.replace_static_member(member.group_instance_id, member.member_id, old_id)
                member.answer_join(JoinResult(error, ""))
                return
            is_leader = group.is_leader(member.member_id)
            result = self._join_result(group, member)
            result.skip_assignment = is_leader
            result.old_leader_id = old_leader or ""
            member.answer_join(result)

        acks.then(written, stored)

    def _expire_pending(self, group: GroupMetadata, member_id: str) -> None:
        group.pending_tasks.pop(member_id, None)
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            if group.is_(_S.PREPARING_REBALANCE):
                self._try_complete_join(group)

    # -- rebalance --------------------------------------------------------------------
    def _maybe_prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.can_rebalance:
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.is_(_S.COMPLETING_REBALANCE):
            self._reset_and_propagate_error(group, E.REBALANCE_IN_PROGRESS)
        cancel(group.sync_task)
        group.sync_task = None
        cancel(group.join_task)
        if group.is_(_S.EMPTY):
            delay = self.settings.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms - delay, 0)
            group.join_initial = True
            group.join_task = self._deadlines.schedule(
                delay, lambda: self._initial_join_expired(group, remaining))
        else:
            group.join_initial = False
            group.join_task = self._deadlines.schedule(
                group.rebalance_timeout_ms, lambda: self._complete_join(group))
        group.transition_to(_S.PREPARING_REBALANCE, self._clock.time_ms())
        _log.info("preparing to rebalance", group=group.group_id, generation=group.generation,
                  reason=reason)
        self._try_complete_join(group)

    def _initial_join_expired(self, group: GroupMetadata, remaining: int) -> None:
        if group.new_member_added and remaining > 0:
            group.new_member_added = False
            delay = min(self.settings.initial_rebalance_delay_ms, remaining)
            left = max(remaining - delay, 0)
            group.join_task = self._deadlines.schedule(
                delay, lambda: self._initial_join_expired(group, left))
        else:
            self._complete_join(group)

    def _try_complete_join(self, group: GroupMetadata) -> None:
        if (group.is_(_S.PREPARING_REBALANCE) and not group.join_initial
                and group.all_members_joined()):
            self._complete_join(group)

    def _complete_join(self, group: GroupMetadata) -> None:
        cancel(group.join_task)
        group.join_task = None
        if not group.is_(_S.PREPARING_REBALANCE):
            return
        for member in group.not_yet_rejoined():
            cancel(member.heartbeat_task)
            group.remove(member.member_id)
        if group.members and not group.maybe_elect_new_joined_leader():
            group.join_initial = False
            group.join_task = self._deadlines.schedule(
                group.rebalance_timeout_ms, lambda: self._complete_join(group))
            return
        group.init_next_generation(self._clock.time_ms())
        if group.is_(_S.EMPTY):
            self._store_group(group, {})
            return
        _log.info("rebalance completed join", group=group.group_id, generation=group.generation,
                  members=group.size, protocol=group.protocol_name)
        for member in list(group.members.values()):
            member.answer_join(self._join_result(group, member))
            self._schedule_heartbeat(group, member)
            member.is_new = False
        generation = group.generation
        group.sync_task = self._deadlines.schedule(
            group.rebalance_timeout_ms, lambda: self._expire_sync(group, generation))

    def _expire_sync(self, group: GroupMetadata, generation: int) -> None:
        group.sync_task = None
        if group.generation != generation or not group.pending_sync:
            return
        if group.state not in (_S.COMPLETING_REBALANCE, _S.STABLE):
            return
        for member_id in list(group.pending_sync):
            member = group.members.get(member_id)
            if member is not None:
                cancel(member.heartbeat_task)
                group.remove(member_id)
        self._maybe_prepare_rebalance(group, "members did not sync in time")

    def _reset_and_propagate_error(self, group: GroupMetadata, error: int) -> None:
        for member in group.members.values():
            member.assignment = b""
            member.answer_sync(SyncResult(error))

    def _propagate_assignment(self, group: GroupMetadata, assignment: dict[str, bytes]) -> None:
        for member in group.members.values():
            member.assignment = assignment.get(member.member_id, b"")
            if member.answer_sync(SyncResult(0, member.assignment, group.protocol_type,
                                             group.protocol_name)):
                self._schedule_heartbeat(group, member)

    def _store_group(self, group: GroupMetadata, assignment: dict[str, bytes]):
        """Write the group's metadata: its error code, or a future of it (durable write)."""
        members = [R.StoredMember(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                  m.rebalance_timeout_ms, m.session_timeout_ms,
                                  m.metadata(group.protocol_name) if group.protocol_name else b"",
                                  assignment.get(m.member_id, b""))
                   for m in group.members.values()]
        stored = R.StoredGroup(group.protocol_type or "", group.generation, group.protocol_name,
                               group.leader_id, group.state_timestamp, members)
        entry = (R.group_key(group.group_id), R.group_value(stored))
        return self._store.write(self.partition_for(group.group_id), [entry], for_offsets=False)

    # -- heartbeats and session expiry -------------------------------------------------
    def _schedule_heartbeat(self, group: GroupMetadata, member: MemberMetadata,
                            timeout_ms: int | None = None) -> None:
        cancel(member.heartbeat_task)
        member_id = member.member_id
        member.heartbeat_task = self._deadlines.schedule(
            member.session_timeout_ms if timeout_ms is None else timeout_ms,
            lambda: self._heartbeat_expired(group, member, member_id))

    def _heartbeat_expired(self, group: GroupMetadata, member: MemberMetadata,
                           member_id: str) -> None:
        if group.members.get(member_id) is not member:
            return
        if not member.is_new and (member.awaiting_join or member.awaiting_sync):
            return
        _log.info("member session expired", group=group.group_id, member=member_id)
        self._remove_member_and_update(group, member)

    def _remove_member_and_update(self, group: GroupMetadata, member: MemberMetadata) -> None:
        member.answer_join(JoinResult(E.UNKNOWN_MEMBER_ID, member.member_id))
        cancel(member.heartbeat_task)
        group.remove(member.member_id)
        if group.state in (_S.STABLE, _S.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, f"removing member {member.member_id}")
        elif group.is_(_S.PREPARING_REBALANCE):
            self._try_complete_join(group)

    # -- SyncGroup ----------------------------------------------------------------------
    def sync(self, group_id: str, generation: int, member_id: str, instance_id: str | None,
             protocol_type: str | None, protocol_name: str | None,
             assignments: dict[str, bytes], respond: Respond) -> None:
        group = self._groups.get(group_id)
        error = self._group_error(group_id)
        if not error and isinstance(group, ShareGroup):
            respond(SyncResult(E.UNKNOWN_MEMBER_ID))
            return
        if not error and isinstance(group, ConsumerGroup):
            self._classic_sync(group, generation, member_id, instance_id, protocol_type,
                               protocol_name, respond)
            return
        error = error or self._member_error(group, member_id, instance_id, generation)
        if not error and protocol_type is not None and protocol_type != group.protocol_type:
            error = E.INCONSISTENT_GROUP_PROTOCOL
        if not error and protocol_name is not None and protocol_name != group.protocol_name:
            error = E.INCONSISTENT_GROUP_PROTOCOL
        if not error and group.is_(_S.EMPTY):
            error = E.UNKNOWN_MEMBER_ID
        if not error and group.is_(_S.PREPARING_REBALANCE):
            error = E.REBALANCE_IN_PROGRESS
        if error:
            respond(SyncResult(error))
            return
        member = group.get(member_id)
        group.pending_sync.discard(member_id)
        if group.is_(_S.STABLE):
            respond(SyncResult(0, member.assignment, group.protocol_type, group.protocol_name))
            self._schedule_heartbeat(group, member)
            return
        member.sync_waiter = respond
        if group.is_leader(member_id):
            self._leader_synced(group, assignments)

    def _leader_synced(self, group: GroupMetadata, assignments: dict[str, bytes]) -> None:
        """Store the leader's assignment (a durable write; the group stays
        CompletingRebalance meanwhile, so other members' SyncGroups wait), then hand it
        out -- unless the group moved on while the write was in flight (Kafka's check of
        state and generation in storeGroup's callback)."""
        full = {m: assignments.get(m, b"") for m in group.members}
        generation = group.generation
        written = self._store_group(group, full)

        def stored(error: int) -> None:
            if (self._groups.get(group.group_id) is not group
                    or not group.is_(_S.COMPLETING_REBALANCE) or group.generation != generation):
                return
            if error:
                self._reset_and_propagate_error(group, error)
                self._maybe_prepare_rebalance(group, "failed to store the group")
                return
            self._propagate_assignment(group, full)
            group.transition_to(_S.STABLE, self._clock.time_ms())
            _log.info("group stable", group=group.group_id, generation=group.generation)

        acks.then(written, stored)

    def _member_error(self, group: GroupMetadata | None, member_id: str,
                      instance_id: str | None, generation: int) -> int:
        """The checks SyncGroup and Heartbeat share (Kafka's order)."""
        if group is None:
            return E.UNKNOWN_MEMBER_ID
        if group.is_(_S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        if group.is_static_member_fenced(instance_id, member_id):
            return E.FENCED_INSTANCE_ID
        if not group.has(member_id):
            return E.UNKNOWN_MEMBER_ID
        if generation != group.generation:
            return E.ILLEGAL_GENERATION
        return 0

    # -- Heartbeat ------------------------------------------------------------------------
    def heartbeat(self, group_id: str, member_id: str, instance_id: str | None,
                  generation: int) -> int:
        group = self._groups.get(group_id)
        error = self._group_error(group_id)
        if not error and isinstance(group, ShareGroup):
            return E.UNKNOWN_MEMBER_ID
        if not error and isinstance(group, ConsumerGroup):
            return self._classic_heartbeat(group, member_id, instance_id, generation)
        error = error or self._member_error(group, member_id, instance_id, generation)
        if error:
            return error
        if group.is_(_S.EMPTY):
            return E.UNKNOWN_MEMBER_ID
        self._schedule_heartbeat(group, group.get(member_id))
        return E.REBALANCE_IN_PROGRESS if group.is_(_S.PREPARING_REBALANCE) else 0

    # -- LeaveGroup -----------------------------------------------------------------------
    def leave(self, group_id: str, members: list[tuple[str, str | None]]) -> tuple[int, list[int]]:
        """(group error, one error per (member_id, instance_id) asked to leave)."""
        error = self._group_error(group_id)
        if error:
            return error, [error] * len(members)
        group = self._groups.get(group_id)
        if isinstance(group, ConsumerGroup):
            return 0, self._classic_leave(group, members)
        if group is None or isinstance(group, ShareGroup):
            return 0, [E.UNKNOWN_MEMBER_ID] * len(members)
        if group.is_(_S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE, [E.COORDINATOR_NOT_AVAILABLE] * len(members)
        return 0, [self._leave_one(group, m, i) for m, i in members]

    def _leave_one(self, group: GroupMetadata, member_id: str, instance_id: str | None) -> int:
        if not member_id and instance_id is not None:
            member_id = group.static_member_id(instance_id) or ""
            if not member_id:
                return E.UNKNOWN_MEMBER_ID
        if group.is_static_member_fenced(instance_id, member_id):
            return E.FENCED_INSTANCE_ID
        if member_id in group.pending_members:
            cancel(group.pending_tasks.pop(member_id, None))
            self._expire_pending(group, member_id)
            return 0
        if not group.has(member_id):
            return E.UNKNOWN_MEMBER_ID
        _log.info("member left", group=group.group_id, member=member_id)
        self._remove_member_and_update(group, group.get(member_id))
        return 0
