"""WriteShareGroupState (key 85, v0-1): a share-partition leader persists a share
partition's start offset and the state batches that changed (v1 adds the delivery
complete count, KIP-1226).

Checks and order as ``_share_state``; each partition is the share coordinator's
``write`` (INVALID_REQUEST for a partition never initialized, FENCED_LEADER_EPOCH,
FENCED_STATE_EPOCH, ...).  A v0 request's delivery complete count is -1 (unknown).
"""
from __future__ import annotations

from kafkapy.coordinator.share.persister import StateBatch
from kafkapy.handlers import _share_state
from kafkapy.protocol.share_group_apis import WriteShareGroupStateResponse

API_KEY = 85
MIN_VERSION = 0
MAX_VERSION = 1

_Topic = WriteShareGroupStateResponse.WriteStateResult
_Partition = _Topic.PartitionResult


def _partition(partition: int, error: int, message: str | None):
    return _Partition(partition=partition, error_code=error, error_message=message)


def _write(version: int):
    def call(coordinator, key, p):
        return coordinator.write(
            key, state_epoch=p.state_epoch, leader_epoch=p.leader_epoch,
            start_offset=p.start_offset,
            batches=[StateBatch(b.first_offset, b.last_offset, b.delivery_state,
                                b.delivery_count) for b in p.state_batches],
            delivery_complete_count=p.delivery_complete_count if version >= 1 else -1)
    return call


async def handle(ctx, request):
    return await _share_state.answered(
        ctx, request, _Topic, _partition, _write(ctx.api_version),
        lambda p, answer: _partition(p.partition, *answer))
