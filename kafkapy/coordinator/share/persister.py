"""The persister: what share-partition leaders and the group coordinator call to keep
a share partition's state in the share coordinator.

A share partition's persisted state (Kafka's ``PersisterStateBatch`` and the
``ReadShareGroupState`` answer) is a start offset, a state epoch, a leader epoch and
the batches of offsets at or above the start offset whose state is not "available with
delivery count 0": each ``StateBatch`` is one inclusive range ``[first_offset,
last_offset]`` with one delivery state (0 AVAILABLE, 2 ACKNOWLEDGED, 4 ARCHIVED; an
acquired record is persisted as AVAILABLE) and one delivery count.

``Persister`` is the shape every implementation has: the broker's own routes each key
``"<group>:<topic id>:<partition>"`` to the share coordinator that leads the key's
``__share_group_state`` partition (``kafkapy.coordinator.share.service``); tests use an
in-memory one.  Every call answers an error code (or a ``ShareState`` carrying one),
never raises for a Kafka error, and has already retried NOT_COORDINATOR,
COORDINATOR_NOT_AVAILABLE and COORDINATOR_LOAD_IN_PROGRESS within its bound.

Kafka's rules every implementation keeps:
- ``initialize`` of a key whose stored state epoch is above the request's answers
  FENCED_STATE_EPOCH; otherwise it replaces the state (no batches, leader epoch 0).
- ``read``/``write`` of a key never initialized answer INVALID_REQUEST.
- ``read`` with a leader epoch below the stored one answers FENCED_LEADER_EPOCH; a
  higher one is stored (the older leader's writes are fenced from then on).
- ``write`` with a leader epoch below the stored one answers FENCED_LEADER_EPOCH, a
  state epoch below the stored one FENCED_STATE_EPOCH (-1 for either skips its check).
- ``delete`` of an unknown key is not an error.
- ``read_summary`` of an unknown key answers start offset -1, state epoch 0.
"""
from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

# Kafka's persisted delivery states (RecordState ids).
AVAILABLE = 0
ACKNOWLEDGED = 2
ARCHIVED = 4

UNINITIALIZED_START_OFFSET = -1
DEFAULT_STATE_EPOCH = 0
UNKNOWN_DELIVERY_COMPLETE_COUNT = -1


@dataclass(frozen=True, slots=True)
class StateBatch:
    """One range of offsets with one state, as ShareSnapshotValue and
    WriteShareGroupState carry it; ``first_offset`` <= ``last_offset``, inclusive."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class ShareState:
    """What ReadShareGroupState (or its summary) answers for one partition.

    ``start_offset`` -1: initialized without a start offset (the share-partition
    leader applies ``share.auto.offset.reset``).  ``delivery_complete_count`` is the
    v1 summary's count of delivered records from the start offset (-1: unknown)."""

    error: int
    state_epoch: int = DEFAULT_STATE_EPOCH
    start_offset: int = UNINITIALIZED_START_OFFSET
    leader_epoch: int = -1
    batches: tuple[StateBatch, ...] = ()
    message: str | None = None
    delivery_complete_count: int = UNKNOWN_DELIVERY_COMPLETE_COUNT


class Persister(Protocol):
    """One per broker; see the module docstring for the rules."""

    async def initialize(self, group_id: str, topic_id: uuid.UUID, partition: int, *,
                         state_epoch: int, start_offset: int) -> int: ...

    async def read(self, group_id: str, topic_id: uuid.UUID, partition: int, *,
                   leader_epoch: int) -> ShareState: ...

    async def write(self, group_id: str, topic_id: uuid.UUID, partition: int, *,
                    state_epoch: int, leader_epoch: int, start_offset: int,
                    batches: Sequence[StateBatch],
                    delivery_complete_count: int = -1) -> int: ...

    async def delete(self, group_id: str, topic_id: uuid.UUID, partition: int) -> int: ...

    async def read_summary(self, group_id: str, topic_id: uuid.UUID, partition: int, *,
                           leader_epoch: int) -> ShareState: ...
