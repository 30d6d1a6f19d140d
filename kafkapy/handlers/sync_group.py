"""SyncGroup (key 14): the leader hands out assignments; every member receives its own.

Versions 0-5; v3+ carry group.instance.id; v5 carry (and answer) protocol type
and name, which are mandatory and must match the group's (else
INCONSISTENT_GROUP_PROTOCOL).  In
CompletingRebalance a follower's request waits for the leader's.
"""
from __future__ import annotations

from kafkapy.security import authz
from kafkapy.handlers._groups import callback_future, coordinator
from kafkapy.protocol.errors import ErrorCode

API_KEY = 14
MIN_VERSION = 0
MAX_VERSION = 5


def handle(ctx, request):
    version = ctx.api_version
    if version >= 5 and (request.protocol_type is None or request.protocol_name is None):
        # Mandatory from v5: Kafka refuses the request before it reaches the group.
        return ctx.response(throttle_time_ms=0,
                            error_code=ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                            protocol_type=None, protocol_name=None, assignment=b"")
    if not authz.allowed(ctx, authz.READ, authz.GROUP, request.group_id):
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
                            protocol_type=None, protocol_name=None, assignment=b"")
    future, respond = callback_future()
    coordinator(ctx).sync(
        request.group_id, request.generation_id, request.member_id,
        request.group_instance_id if version >= 3 else None,
        request.protocol_type if version >= 5 else None,
        request.protocol_name if version >= 5 else None,
        {a.member_id: bytes(a.assignment) for a in request.assignments}, respond)
    return _answer(ctx, future)


async def _answer(ctx, future):
    r = await future
    return ctx.response(throttle_time_ms=0, error_code=r.error, protocol_type=r.protocol_type,
                        protocol_name=r.protocol_name, assignment=r.assignment)
