"""DeleteGroups (key 42): remove empty groups and their committed offsets.

Versions 0-2.  Per group: unknown -> GROUP_ID_NOT_FOUND; with members ->
NON_EMPTY_GROUP; otherwise tombstones for the group and each offset are
written to ``__consumer_offsets``.  As Kafka 4.2's GroupCoordinatorService, share groups
go first (``delete_share_groups``): an empty one has its share partitions' state deleted
in the share coordinator, and only the groups whose state went (or that are no share
group) go on to the ordinary deletion; a share group whose state could not be deleted is
answered the persister's error.
"""
from __future__ import annotations

from kafkapy.protocol.errors import ErrorCode
from kafkapy.security import authz
from kafkapy.handlers._groups import coordinator
from kafkapy.protocol.messages import RESPONSES

API_KEY = 42
MIN_VERSION = 0
MAX_VERSION = 2

_Result = RESPONSES[API_KEY].DeletableGroupResult


async def handle(ctx, request):
    names = list(request.groups_names)
    refused = {}
    if ctx.services.authorizer is not None:
        allowed = authz.filter_allowed(ctx, authz.DELETE, authz.GROUP, names)
        refused = {g: ErrorCode.GROUP_AUTHORIZATION_FAILED for g in names if g not in allowed}
        names = [g for g in names if g in allowed]
    if names:
        refused.update(await coordinator(ctx).delete_share_groups(names))
        names = [g for g in names if g not in refused]
    results = {**refused, **coordinator(ctx).delete_groups(names)} if names else refused
    return ctx.response(throttle_time_ms=0, results=[
        _Result(group_id=g, error_code=e) for g, e in results.items()])
