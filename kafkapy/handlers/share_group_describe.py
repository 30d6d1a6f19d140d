"""ShareGroupDescribe (key 77): share groups (KIP-932) with their epochs, assignor and
members, each member's subscription and assignment.

Version 1 (version 0 was Kafka 4.0's early access).  As Kafka's KafkaApis:
- while share groups are off (``share_group_heartbeat.share_protocol_enabled``) every
  group is answered UNSUPPORTED_VERSION (the error code alone);
- a group the principal may not DESCRIBE is answered GROUP_AUTHORIZATION_FAILED (the error
  code alone); these come first, then the coordinator's answers for the others, in its
  order (``describe_share_groups``: GROUP_ID_NOT_FOUND for a group that is not a share
  group, NOT_COORDINATOR, INVALID_GROUP_ID for an empty id, ... with their messages);
- ``authorized_operations`` when asked, for the groups without error: the principal's among
  the operations Kafka 4.x supports on a group (as ConsumerGroupDescribe), else INT32_MIN;
- with an authorizer, a group whose members' assignments hold a topic the principal may
  not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED with Kafka's message and no members.
Assignments name topics by id and name (from the metadata cache); a topic id the cache does
not know (a deleted topic) is left out, as Kafka leaves out a topic missing from its image.
Topics are in topic id order, partitions ascending; subscribed topic names in Kafka's
HashSet order.
"""
from __future__ import annotations

from kafkapy.coordinator.group.share.types import DescribedShareMember
from kafkapy.handlers._groups import coordinator, describe_groups, named_assignment
from kafkapy.handlers.share_group_heartbeat import share_protocol_enabled
from kafkapy.protocol.share_group_apis import ShareGroupDescribeResponse

API_KEY = 77
MIN_VERSION = 1
MAX_VERSION = 1

_Group = ShareGroupDescribeResponse.DescribedGroup
_Member = _Group.Member
_Assignment = _Member.Assignment


def handle(ctx, request):
    return describe_groups(
        ctx, request, enabled=share_protocol_enabled(ctx.services.config),
        describe=lambda group_ids: coordinator(ctx).describe_share_groups(group_ids),
        group_cls=_Group, member=_member, assignment_fields=("assignment",))


def _member(m: DescribedShareMember, names):
    return _Member(member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
                   client_id=m.client_id, client_host=m.client_host,
                   subscribed_topic_names=list(m.subscribed_topic_names),
                   assignment=named_assignment(_Assignment, m.assigned, names))
