"""ReadShareGroupStateSummary (key 87, v0-1): the group coordinator reads share
partitions' start offsets (DescribeShareGroupOffsets); v1 adds the delivery complete
count (KIP-1226).

Checks and order as ``_share_state``; each partition is the share coordinator's
``read_summary`` (a partition never initialized: start offset -1, state epoch 0,
leader epoch -1, no error).
"""
from __future__ import annotations

from kafkapy.handlers import _share_state
from kafkapy.protocol.share_group_apis import ReadShareGroupStateSummaryResponse

API_KEY = 87
MIN_VERSION = 0
MAX_VERSION = 1

_Topic = ReadShareGroupStateSummaryResponse.ReadStateSummaryResult
_Partition = _Topic.PartitionResult


def _error(partition: int, error: int, message: str | None):
    # the other fields at their schema defaults, as Kafka's toErrorResponseData leaves them
    return _Partition(partition=partition, error_code=error, error_message=message,
                      state_epoch=0, leader_epoch=0, start_offset=0,
                      delivery_complete_count=-1)


def _result(p, state):
    if state.error:
        return _error(p.partition, state.error, state.message)
    return _Partition(partition=p.partition, error_code=0, error_message=None,
                      state_epoch=state.state_epoch, leader_epoch=state.leader_epoch,
                      start_offset=state.start_offset,
                      delivery_complete_count=state.delivery_complete_count)


async def handle(ctx, request):
    return await _share_state.answered(
        ctx, request, _Topic, _error,
        lambda coordinator, key, _p: coordinator.read_summary(key), _result)
