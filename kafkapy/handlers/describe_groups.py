"""DescribeGroups (key 15): state, protocol and members of groups.

Versions 0-6; v3+ may ask for authorized operations (the principal's among READ,
DELETE, DESCRIBE; all three without an authorizer); v4+ answer group.instance.id.
A group the principal may not DESCRIBE is answered GROUP_AUTHORIZATION_FAILED.  A group
the coordinator does not have is described as Dead without error up to v5, as Kafka does;
v6 (KIP-1043) answers it GROUP_ID_NOT_FOUND, state Dead, with Kafka's message ("Group g
not found.").  A share group is not a classic group (the coordinator answers it
GROUP_ID_NOT_FOUND): up to v5 it is described as Dead without error, from v6 it is
GROUP_ID_NOT_FOUND with Kafka 4.2's message ("Group g is not a classic group."), as
GroupMetadataManager.describeGroups answers any group that is not classic.  Authorized
operations are answered only for a group without error.
"""
from __future__ import annotations

from kafkapy.protocol.errors import ErrorCode
from kafkapy.security import authz
from kafkapy.handlers._groups import coordinator
from kafkapy.handlers.common import GROUP_OPERATIONS
from kafkapy.protocol.messages import RESPONSES

API_KEY = 15
MIN_VERSION = 0
MAX_VERSION = 6

_Group = RESPONSES[API_KEY].DescribedGroup
_Member = _Group.DescribedGroupMember


def handle(ctx, request):
    include_ops = ctx.api_version >= 3 and request.include_authorized_operations
    groups = []
    for group_id in request.groups:
        if not authz.allowed(ctx, authz.DESCRIBE, authz.GROUP, group_id):
            groups.append(_Group(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, error_message=None,
                                 group_id=group_id, group_state="", protocol_type="", protocol_data="",
                                 members=[], authorized_operations=None))
            continue
        s = coordinator(ctx).describe_group(group_id)
        error, message = _not_found(ctx, s) or (s.error, None)
        groups.append(_Group(
            error_code=error, error_message=message, group_id=group_id, group_state=s.state,
            protocol_type=s.protocol_type, protocol_data=s.protocol,
            members=[_Member(member_id=m.member_id, group_instance_id=m.group_instance_id,
                             client_id=m.client_id, client_host=m.client_host,
                             member_metadata=m.metadata, member_assignment=m.assignment)
                     for m in s.members],
            authorized_operations=(authz.authorized_operations(ctx, authz.GROUP, group_id, GROUP_OPERATIONS)
                                   if include_ops and not error else None)))
    return ctx.response(throttle_time_ms=0, groups=groups)


def _not_found(ctx, summary) -> tuple[int, str | None] | None:
    """v6: a group described as Dead without error is GROUP_ID_NOT_FOUND, with a message;
    a group of another kind (the coordinator's GROUP_ID_NOT_FOUND) is that from v6, Dead
    without error before."""
    if summary.error == ErrorCode.GROUP_ID_NOT_FOUND:
        if ctx.api_version < 6:
            return 0, None
        return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {summary.group_id} is not a classic group."
    if ctx.api_version < 6 or summary.error or summary.state != "Dead":
        return None
    return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {summary.group_id} not found."
