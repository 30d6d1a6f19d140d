"""ListGroups (key 16): the groups this broker coordinates.

Versions 0-5; v4+ filter by state (case-insensitive) and answer it; v5+
filter by type ("classic", "consumer", "share"; case-insensitive) and answer it.  Every
version lists every kind of group: a consumer group (KIP-848) with protocol type
"consumer", a share group (KIP-932) with protocol type "share" (state Empty or Stable).
"""
from __future__ import annotations

from kafkapy.security import authz
from kafkapy.handlers._groups import coordinator
from kafkapy.protocol.messages import RESPONSES

API_KEY = 16
MIN_VERSION = 0
MAX_VERSION = 5

_Group = RESPONSES[API_KEY].ListedGroup


def handle(ctx, request):
    version = ctx.api_version
    states = request.states_filter if version >= 4 else None
    types = request.types_filter if version >= 5 else None
    error, groups = coordinator(ctx).list_groups(states, types)
    if not authz.cluster(ctx, authz.DESCRIBE):
        # Kafka: DESCRIBE on the cluster lists every group, else those the principal may describe.
        allowed = authz.filter_allowed(ctx, authz.DESCRIBE, authz.GROUP, [g.group_id for g in groups])
        groups = [g for g in groups if g.group_id in allowed]
    return ctx.response(throttle_time_ms=0, error_code=error, groups=[
        _Group(group_id=g.group_id, protocol_type=g.protocol_type, group_state=g.state,
               group_type=g.group_type) for g in groups])
