"""Admin operations of the group coordinator: describe, list and delete groups.

A mixin of ``GroupCoordinator``.  DescribeGroups of an unknown group answers
state Dead with no error (as Kafka does); a classic group's members carry their
metadata and assignment only while the group is Stable; a consumer group (KIP-848) is
shown as Kafka 4.x shows it: protocol type "consumer", its assignor as the protocol,
each member's subscription and target assignment in the classic consumer protocol's
bytes.  ListGroups filters by state (case-insensitive) and type ("classic",
"consumer").  DeleteGroups removes only Empty groups (NON_EMPTY_GROUP otherwise),
writing tombstones for the group's records and every offset.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kafkapy.coordinator.group.consumer.embedded import assignment_bytes, subscription_bytes
from kafkapy.coordinator.group.consumer.group import ConsumerGroup
from kafkapy.coordinator.group.group import GroupState
from kafkapy.protocol.errors import ErrorCode as E

_S = GroupState
GROUP_TYPE = "classic"


@dataclass
class MemberSummary:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass
class GroupSummary:
    error: int
    group_id: str
    state: str = "Dead"
    protocol_type: str = ""
    protocol: str = ""
    members: list[MemberSummary] = field(default_factory=list)


@dataclass
class GroupOverview:
    group_id: str
    protocol_type: str
    state: str
    group_type: str = GROUP_TYPE


class AdminOps:
    def describe_group(self, group_id: str) -> GroupSummary:
        error = self._group_error(group_id, allow_empty=True)
        if error:
            return GroupSummary(error, group_id, state="")
        group = self._groups.get(group_id)
        if group is None:
            return GroupSummary(0, group_id)
        if isinstance(group, ConsumerGroup):
            return self._consumer_summary(group)
        stable = group.is_(_S.STABLE)
        members = [MemberSummary(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                 m.metadata(group.protocol_name) if stable else b"",
                                 m.assignment if stable else b"")
                   for m in group.members.values()]
        return GroupSummary(0, group_id, group.state.value, group.protocol_type or "",
                            (group.protocol_name or "") if stable else "", members)

    def _consumer_summary(self, group: ConsumerGroup) -> GroupSummary:
        names = {t.topic_id: name for name, t in group.topics.items()}
        members = []
        for m in group.members.values():
            target = group.target(m.member_id)
            by_name = {names[t]: p for t, p in target.items() if t in names}
            members.append(MemberSummary(
                m.member_id, m.instance_id, m.subscription.client_id,
                m.subscription.client_host,
                subscription_bytes(m.subscription.topic_names, m.subscription.rack_id),
                assignment_bytes(by_name)))
        assignor = group.preferred_assignor() or self.consumer.default_assignor
        return GroupSummary(0, group.group_id, group.state.value, group.protocol_type,
                            assignor, members)

    def list_groups(self, states: list[str] | None = None,
                    types: list[str] | None = None) -> tuple[int, list[GroupOverview]]:
        if not self._active:
            return E.COORDINATOR_NOT_AVAILABLE, []
        if self._loading:
            return E.COORDINATOR_LOAD_IN_PROGRESS, []
        wanted_states = {s.lower() for s in states or []}
        wanted_types = {t.lower() for t in types or []}
        out = [GroupOverview(g.group_id, g.protocol_type or "", g.state.value, g.group_type)
               for g in self._groups.values()
               if not g.is_(_S.DEAD)
               and (not wanted_states or g.state.value.lower() in wanted_states)
               and (not wanted_types or g.group_type in wanted_types)]
        return 0, sorted(out, key=lambda o: o.group_id)

    def delete_groups(self, group_ids: list[str]) -> dict[str, int]:
        return {group_id: self._delete_group(group_id) for group_id in group_ids}

    def _delete_group(self, group_id: str) -> int:
        error = self._group_error(group_id, allow_empty=True)
        if error:
            return error
        group = self._groups.get(group_id)
        if group is None or group.is_(_S.DEAD):
            return E.GROUP_ID_NOT_FOUND
        if not group.is_(_S.EMPTY):
            return E.NON_EMPTY_GROUP
        return self._remove_group(group)
