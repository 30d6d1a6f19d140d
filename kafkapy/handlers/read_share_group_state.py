"""ReadShareGroupState (key 84, v0): a share-partition leader reads a share partition's
persisted state (state epoch, start offset, state batches) when it becomes its leader.

Checks and order as ``_share_state``; each partition is the share coordinator's ``read``
(INVALID_REQUEST for a partition never initialized, FENCED_LEADER_EPOCH for a leader
epoch below the stored one; a higher one is stored first).
"""
from __future__ import annotations

from kafkapy.handlers import _share_state
from kafkapy.protocol.share_group_apis import ReadShareGroupStateResponse

API_KEY = 84
MIN_VERSION = 0
MAX_VERSION = 0

_Topic = ReadShareGroupStateResponse.ReadStateResult
_Partition = _Topic.PartitionResult
_Batch = _Partition.StateBatch


def _error(partition: int, error: int, message: str | None):
    # the other fields at their schema defaults, as Kafka's toErrorResponseData leaves them
    return _Partition(partition=partition, error_code=error, error_message=message,
                      state_epoch=0, start_offset=0, state_batches=[])


def _result(p, state):
    if state.error:
        return _error(p.partition, state.error, state.message)
    return _Partition(partition=p.partition, error_code=0, error_message=None,
                      state_epoch=state.state_epoch, start_offset=state.start_offset,
                      state_batches=[_Batch(first_offset=b.first_offset,
                                            last_offset=b.last_offset,
                                            delivery_state=b.delivery_state,
                                            delivery_count=b.delivery_count)
                                     for b in state.batches])


async def handle(ctx, request):
    return await _share_state.answered(
        ctx, request, _Topic, _error,
        lambda coordinator, key, p: coordinator.read(key, leader_epoch=p.leader_epoch), _result)
