"""InitializeShareGroupState (key 83, v0): the group coordinator sets a share partition's
state epoch and start offset before the partition is assigned (Kafka 4.2).

Checks and order as ``_share_state``; each partition is the share coordinator's
``initialize`` (FENCED_STATE_EPOCH for a state epoch below the stored one,
UNKNOWN_TOPIC_OR_PARTITION, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, ...).
"""
from __future__ import annotations

from kafkapy.handlers import _share_state
from kafkapy.protocol.share_group_apis import InitializeShareGroupStateResponse

API_KEY = 83
MIN_VERSION = 0
MAX_VERSION = 0

_Topic = InitializeShareGroupStateResponse.InitializeStateResult
_Partition = _Topic.PartitionResult


def _partition(partition: int, error: int, message: str | None):
    return _Partition(partition=partition, error_code=error, error_message=message)


async def handle(ctx, request):
    return await _share_state.answered(
        ctx, request, _Topic, _partition,
        lambda coordinator, key, p: coordinator.initialize(
            key, state_epoch=p.state_epoch, start_offset=p.start_offset),
        lambda p, answer: _partition(p.partition, *answer))
