"""acks=all: min.insync.replicas before an append, the wait for the high watermark after.

Kafka 3.9's rules (Partition.appendRecordsToLeader, checkEnoughReplicasReachOffset,
DelayedProduce, ReplicaManager.appendRecords):
- before a leader append with acks=-1 (client Produce, coordinator writes, markers):
  an ISR smaller than the *effective* min ISR refuses it with NOT_ENOUGH_REPLICAS,
  nothing appended (``min_isr_error``).  The effective min ISR is
  ``min(min.insync.replicas, replication factor)``: a topic configured above its
  replica count still takes writes (Kafka's effectiveMinIsr).
- after the append the write waits (``wait_for_replication``, run by the replica
  manager's ``await_replication``: for a Produce request, WriteTxnMarkers and the
  coordinators' writes) until the high watermark
  reaches the next offset after it; it is then NO_ERROR, or
  NOT_ENOUGH_REPLICAS_AFTER_APPEND when the
  (maximal) ISR fell below the effective min ISR meanwhile; NOT_LEADER_OR_FOLLOWER
  when leadership moved; REQUEST_TIMED_OUT at the deadline.  With one in-sync
  replica the high watermark moves at the append, so these answer at once and
  single-broker behaviour needs no loop turn.  A client's Produce waits in a
  ``LateAnswer`` (``late=True``), which its connection sends inside the follower fetch
  that moved the high watermark; the coordinators' writes, which chain more work on
  theirs, wait in asyncio futures.
Everything runs on the event loop; a waiting write is a DelayedProduce in the
produce purgatory the replica manager hands in, woken by its append listeners.
"""
from __future__ import annotations

import asyncio
from typing import Any, Callable

from kafkapy.api.late_answer import LateAnswer
from kafkapy.protocol.errors import ErrorCode
from kafkapy.purgatory.delayed_produce import DelayedProduce, ProducePartitionStatus
from kafkapy.replication import stage_trace
from kafkapy.replication.partition import AppendResult, effective_min_isr


# -- min.insync.replicas ----------------------------------------------------------------------
def maximal_isr(partition) -> list[int]:
    """The ISR the high watermark uses (Kafka's maximalIsr: a pending expansion counts)."""
    return list(partition.maximal_isr)


def min_isr_error(partition, topic: str, index: int):
    """NOT_ENOUGH_REPLICAS as an AppendResult when an acks=-1 append must be refused."""
    minimum = effective_min_isr(partition)
    isr = partition.state.isr
    if len(isr) >= minimum:
        return None
    # Kafka logs this text; the client gets only the code (no custom message).
    message = (f"The size of the current ISR {_scala_set(isr)} is insufficient to satisfy "
               f"the min.isr requirement of {minimum} for partition {topic}-{index}")
    return AppendResult(ErrorCode.NOT_ENOUGH_REPLICAS,
                        log_start_offset=partition.log.log_start_offset, error_message=message)


def _scala_set(ids: list[int]) -> str:
    return f"Set({', '.join(str(i) for i in ids)})"


# -- waiting for the high watermark -----------------------------------------------------------
def _high_watermark(partitions: dict, key):
    partition = partitions.get(key)
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if not partition.is_leader:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    return partition.high_watermark


def _after_append(partitions: dict, key) -> int:
    partition = partitions.get(key)
    if partition is None:
        return ErrorCode.NO_ERROR
    if effective_min_isr(partition) <= len(maximal_isr(partition)):
        return ErrorCode.NO_ERROR
    return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND


def wait_for_replication(partitions: dict, purgatory, loop, results, timeout_ms: int,
                         build_response, late: bool = False):
    """acks=all: answer once every partition's high watermark covers its append.

    ``results`` are (topic, partition, AppendResult); ``build_response`` turns the final
    results (REQUEST_TIMED_OUT where the deadline won, NOT_ENOUGH_REPLICAS_AFTER_APPEND
    where the ISR shrank below min ISR) into the response.  Returns it at once when
    already satisfied (a single replica), else a future the produce purgatory resolves
    (``late``: a LateAnswer, given inside the code that moved the high watermark).
    ``partitions`` are the replica manager's, ``purgatory`` the produce purgatory.
    """
    statuses = {(t, p): ProducePartitionStatus(r.last_offset + 1, r.error_code, r)
                for t, p, r in results}

    def respond(done):
        if stage_trace.ENABLED:
            now = stage_trace.now()
            for (topic, index), status in done.items():
                stage_trace.event("P", topic, index, status.required_offset, now)
        final = []
        for (topic, index), status in done.items():
            result = status.result
            if status.error_code != result.error_code:
                result = type(result)(status.error_code, log_start_offset=-1)
            final.append((topic, index, result))
        return build_response(final)

    return _watch(partitions, purgatory, loop, statuses, timeout_ms, respond, late)


def _watch(partitions: dict, purgatory, loop, statuses: dict, timeout_ms: int,
           respond: Callable[[dict], Any], late: bool):
    outcome: list = []
    future = None

    def complete(done):
        value = respond(done)
        if future is None:
            outcome.append(value)
        elif not future.done():
            future.set_result(value)

    operation = DelayedProduce(timeout_ms, statuses, lambda k: _high_watermark(partitions, k),
                               complete, after_append=lambda k: _after_append(partitions, k))
    if purgatory.try_complete_else_watch(operation, list(statuses)):
        return outcome[0]
    future = LateAnswer() if late else loop.create_future()
    return future


# -- chaining a value that may still be pending ------------------------------------------------
def is_pending(value) -> bool:
    return isinstance(value, (asyncio.Future, LateAnswer))


async def settled(value):
    """``value``, once resolved when it is a future."""
    return await value if is_pending(value) else value


def then(value, fn: Callable[[Any], Any]):
    """``fn(value)`` now, or once the future ``value`` resolves (a future of fn's result;
    fn may itself return a future, which is followed)."""
    if not is_pending(value):
        return fn(value)
    loop = asyncio.get_running_loop() if isinstance(value, LateAnswer) else value.get_loop()
    out = loop.create_future()

    def settle(result) -> None:
        if is_pending(result):
            result.add_done_callback(lambda f: _resolve(out, f))
        elif not out.done():
            out.set_result(result)

    def done(f) -> None:
        if f.cancelled():
            out.cancel()
            return
        try:
            settle(fn(f.result()))
        except BaseException as err:  # noqa: BLE001 - handed to whoever awaits
            if not out.done():
                out.set_exception(err)

    value.add_done_callback(done)
    return out


def _resolve(out, f) -> None:
    if out.done():
        return
    if f.cancelled():
        out.cancel()
    elif f.exception() is not None:
        out.set_exception(f.exception())
    else:
        out.set_result(f.result())
