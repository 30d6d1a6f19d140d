"""ConsumerGroupDescribe (key 69): consumer groups (KIP-848) with their epochs, assignor and
members, each member's current and target assignment.

Versions 0-1 (v1 adds each member's ``MemberType``: 0 classic, 1 consumer).  As Kafka's
KafkaApis:
- while ``group.coordinator.rebalance.protocols`` does not list ``consumer`` every group is
  answered UNSUPPORTED_VERSION (the error code alone);
- a group the principal may not DESCRIBE is answered GROUP_AUTHORIZATION_FAILED (the error
  code alone); these come first, then the coordinator's answers for the others, in its
  order (``describe_consumer_groups``: GROUP_ID_NOT_FOUND for a group that is not a
  consumer group, NOT_COORDINATOR, ... with their messages);
- ``authorized_operations`` when asked, for the groups without error: the principal's among
  the operations Kafka 4.x supports on a group (READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS,
  ALTER_CONFIGS; all of them without an authorizer), else INT32_MIN;
- with an authorizer, a group whose members' assignments (current or target) hold a topic
  the principal may not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED with Kafka's message
  and no members.
Assignments name topics by id and name (from the metadata cache); a topic id the cache does
not know (a deleted topic) is left out, as Kafka leaves out a topic missing from its image.
Topics are in topic id order, partitions ascending.
"""
from __future__ import annotations

from kafkapy.coordinator.group.consumer.types import DescribedMember
from kafkapy.handlers._groups import coordinator, describe_groups, named_assignment
from kafkapy.handlers.consumer_group_heartbeat import consumer_protocol_enabled
from kafkapy.protocol.consumer_group_apis import ConsumerGroupDescribeResponse

API_KEY = 69
MIN_VERSION = 0
MAX_VERSION = 1

_Group = ConsumerGroupDescribeResponse.DescribedGroup
_Member = _Group.Member
_Assignment = _Member.Assignment


def handle(ctx, request):
    def member(m: DescribedMember, names):
        return _member(m, names, ctx.api_version)
    return describe_groups(
        ctx, request, enabled=consumer_protocol_enabled(ctx.services.config),
        describe=lambda group_ids: coordinator(ctx).describe_consumer_groups(group_ids),
        group_cls=_Group, member=member, assignment_fields=("assignment", "target_assignment"))


def _member(m: DescribedMember, names, version: int):
    fields = dict(member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
                  member_epoch=m.member_epoch, client_id=m.client_id, client_host=m.client_host,
                  subscribed_topic_names=list(m.subscribed_topic_names),
                  subscribed_topic_regex=m.subscribed_topic_regex,
                  assignment=named_assignment(_Assignment, m.assigned, names),
                  target_assignment=named_assignment(_Assignment, m.target, names))
    if version >= 1:
        fields["member_type"] = m.member_type
    return _Member(**fields)
