"""LeaveGroup (key 13): members leave a group (which then rebalances).

Versions 0-5; v0-2 name one member (its error is the response's error);
v3+ a batch of (member id, group.instance.id), each answered on its own; a
static member may leave by instance id alone.
"""
from __future__ import annotations

from kafkapy.security import authz
from kafkapy.handlers._groups import coordinator
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES

API_KEY = 13
MIN_VERSION = 0
MAX_VERSION = 5

_Member = RESPONSES[API_KEY].MemberResponse


def handle(ctx, request):
    if not authz.allowed(ctx, authz.READ, authz.GROUP, request.group_id):
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, members=[])
    if ctx.api_version < 3:
        error, errors = coordinator(ctx).leave(request.group_id, [(request.member_id, None)])
        return ctx.response(throttle_time_ms=0, error_code=error or errors[0], members=[])
    members = [(m.member_id or "", m.group_instance_id) for m in request.members]
    error, errors = coordinator(ctx).leave(request.group_id, members)
    return ctx.response(throttle_time_ms=0, error_code=error, members=[] if error else [
        _Member(member_id=m, group_instance_id=i, error_code=e)
        for (m, i), e in zip(members, errors)])
