"""A committed offset, as stored in ``__consumer_offsets`` and answered by OffsetFetch.

``leader_epoch`` is -1 when the client did not give one; ``expire_timestamp``
is set only for OffsetCommit v2-4 commits with an explicit retention time
(Kafka then writes OffsetCommitValue v1).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int | None = None
