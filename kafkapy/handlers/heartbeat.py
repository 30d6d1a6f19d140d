"""Heartbeat (key 12): keep a member's session alive; learn about rebalances.

Versions 0-4 (v3+ carry group.instance.id).  Errors: UNKNOWN_MEMBER_ID,
ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS (rejoin), FENCED_INSTANCE_ID.
"""
from __future__ import annotations

from kafkapy.security import authz
from kafkapy.handlers._groups import coordinator
from kafkapy.protocol.errors import ErrorCode

API_KEY = 12
MIN_VERSION = 0
MAX_VERSION = 4


def handle(ctx, request):
    if not authz.allowed(ctx, authz.READ, authz.GROUP, request.group_id):
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    instance_id = request.group_instance_id if ctx.api_version >= 3 else None
    error = coordinator(ctx).heartbeat(request.group_id, request.member_id, instance_id,
                                       request.generation_id)
    return ctx.response(throttle_time_ms=0, error_code=error)
