"""DeleteShareGroupState (key 86, v0): the group coordinator drops share partitions'
persisted state (a share group deleted, or its offsets deleted).

Checks and order as ``_share_state``; each partition is the share coordinator's
``delete`` (a tombstone; a partition never initialized is no error).
"""
from __future__ import annotations

from kafkapy.handlers import _share_state
from kafkapy.protocol.share_group_apis import DeleteShareGroupStateResponse

API_KEY = 86
MIN_VERSION = 0
MAX_VERSION = 0

_Topic = DeleteShareGroupStateResponse.DeleteStateResult
_Partition = _Topic.PartitionResult


def _partition(partition: int, error: int, message: str | None):
    return _Partition(partition=partition, error_code=error, error_message=message)


async def handle(ctx, request):
    return await _share_state.answered(
        ctx, request, _Topic, _partition,
        lambda coordinator, key, _p: coordinator.delete(key),
        lambda p, answer: _partition(p.partition, *answer))
