"""Delayed operations: hierarchical timing wheel, timer, purgatory, DelayedFetch/Produce.

Everything here runs on the event loop (no threads, no locks); see each module's
docstring for its invariants.
"""
from __future__ import annotations

from kafkapy.purgatory.delayed_fetch import (DelayedFetch, DelayedFollowerFetch,
                                            FetchPartitionStatus, LogOffsetMetadata)
from kafkapy.purgatory.delayed_operation import DelayedOperation
from kafkapy.purgatory.delayed_produce import DelayedProduce, ProducePartitionStatus
from kafkapy.purgatory.purgatory import Purgatory
from kafkapy.purgatory.timer import Timer, TimerTask

__all__ = [
    "DelayedFetch", "DelayedFollowerFetch", "DelayedOperation", "DelayedProduce",
    "FetchPartitionStatus", "LogOffsetMetadata", "ProducePartitionStatus", "Purgatory", "Timer",
    "TimerTask",
]
