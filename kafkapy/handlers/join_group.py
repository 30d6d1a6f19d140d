"""JoinGroup (key 11): join a classic group; answered when the rebalance's join phase ends.

Versions 0-9.  v0 has no rebalance timeout (the session timeout is used);
v4+ first joins without a member id get MEMBER_ID_REQUIRED and the id to
rejoin with (KIP-394); v5+ carry group.instance.id (static membership); v7+
answer the protocol type; v9 tells a static leader rejoining a Stable group to
skip the assignment (earlier versions are instead told the old leader id, so
they act as followers).  The leader gets every member's metadata.
"""
from __future__ import annotations

from kafkapy.security import authz
from kafkapy.handlers._groups import callback_future, client_host, coordinator
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES

API_KEY = 11
MIN_VERSION = 0
MAX_VERSION = 9

_Member = RESPONSES[API_KEY].JoinGroupResponseMember


def handle(ctx, request):
    version = ctx.api_version
    if not authz.allowed(ctx, authz.READ, authz.GROUP, request.group_id):
        return ctx.response(
            throttle_time_ms=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, generation_id=-1,
            protocol_type=None, protocol_name=None if version >= 7 else "", leader="",
            skip_assignment=False, member_id=request.member_id or "", members=[])
    future, respond = callback_future()
    coordinator(ctx).join(
        request.group_id, request.member_id or "",
        request.group_instance_id if version >= 5 else None, request.protocol_type,
        [(p.name, bytes(p.metadata)) for p in request.protocols], request.session_timeout_ms,
        request.rebalance_timeout_ms if version >= 1 else request.session_timeout_ms,
        ctx.client_id or "", client_host(ctx), version >= 4, respond)
    return _answer(ctx, future)


async def _answer(ctx, future):
    r = await future
    version = ctx.api_version
    leader, members, skip = r.leader_id, r.members, r.skip_assignment
    if skip and version < 9:
        leader, members, skip = r.old_leader_id or "", [], False
    protocol_name = r.protocol_name if version >= 7 else (r.protocol_name or "")
    return ctx.response(
        throttle_time_ms=0, error_code=r.error, generation_id=r.generation,
        protocol_type=r.protocol_type, protocol_name=protocol_name, leader=leader,
        skip_assignment=skip, member_id=r.member_id,
        members=[_Member(member_id=m, group_instance_id=i, metadata=data)
                 for m, i, data in members])
