"""DelayedProduce: an acks=-1 produce waiting for the high watermark to pass its data.

The produce handler appends to each leader partition first, then creates one
DelayedProduce for the whole request with, per partition, the *required offset*
(the next offset after the appended batch) and the append's result, and watches it
on each partition key.  High watermark moves call ``check_and_complete(key)``.

Protocol with the caller: ``hw_of(key)`` returns the partition's high watermark as a
plain int, or an ``ErrorCode`` member when the partition cannot satisfy the produce
any more (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION); ``after_append(key)``
(optional) is asked once the high watermark passed the data and answers
NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR is now below min.insync.replicas, else
NO_ERROR (Kafka's Partition.checkEnoughReplicasReachOffset).

Completion (Kafka's rules): a partition is finished when its high watermark is
``>= required_offset`` (error: ``after_append``'s, else NO_ERROR) or ``hw_of``
reports an error (that error);
partitions that arrived with an error are finished from the start.  The operation
completes when every partition is finished; at the deadline each unfinished one
gets REQUEST_TIMED_OUT.  ``respond_callback`` receives the ``partitions`` dict,
whose statuses then all have ``acks_pending`` False and their final ``error_code``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Union

from kafkapy.protocol.errors import ErrorCode
from kafkapy.purgatory.delayed_operation import DelayedOperation

HighWatermarkOf = Callable[[Hashable], Union[int, ErrorCode]]
AfterAppend = Callable[[Hashable], int]


@dataclass(slots=True)
class ProducePartitionStatus:
    """One partition of a delayed produce."""

    required_offset: int
    error_code: int = ErrorCode.NO_ERROR
    result: Any = None  # the append's result (base offset, append time...), returned as-is
    acks_pending: bool = field(default=False, init=False)


class DelayedProduce(DelayedOperation):
    """Completes when every partition's HW reached its required offset or failed."""

    __slots__ = ("partitions", "_hw_of", "_respond", "_after_append")

    def __init__(self, delay_ms: int, partitions: dict[Hashable, ProducePartitionStatus],
                 hw_of: HighWatermarkOf,
                 respond_callback: Callable[[dict[Hashable, ProducePartitionStatus]], None],
                 after_append: AfterAppend | None = None) -> None:
        super().__init__(delay_ms)
        self.partitions = partitions
        self._hw_of = hw_of
        self._respond = respond_callback
        self._after_append = after_append
        for status in partitions.values():
            status.acks_pending = status.error_code == ErrorCode.NO_ERROR

    def try_complete(self) -> bool:
        pending = False
        for key, status in self.partitions.items():
            if status.acks_pending:
                self._check(key, status)
                pending = pending or status.acks_pending
        return False if pending else self.force_complete()

    def on_complete(self) -> None:
        for status in self.partitions.values():
            if status.acks_pending:  # only left pending when the deadline completed us
                status.acks_pending = False
                status.error_code = ErrorCode.REQUEST_TIMED_OUT
        self._respond(self.partitions)

    def on_expiration(self) -> None:
        pass  # the purgatory counts expirations; on_complete already answered

    def _check(self, key: Hashable, status: ProducePartitionStatus) -> None:
        hw = self._hw_of(key)
        if isinstance(hw, ErrorCode):
            status.acks_pending = False
            status.error_code = hw
        elif hw >= status.required_offset:
            status.acks_pending = False
            after = self._after_append
            status.error_code = ErrorCode.NO_ERROR if after is None else after(key)
