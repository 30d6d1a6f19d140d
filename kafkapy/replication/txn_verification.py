"""Transaction verification of a produce (KIP-890 part 1): Kafka's AddPartitionsToTxnManager.

With ``transaction.partition.verification.enable`` (read per request), the replica
manager asks before appending a transactional batch whether its producer's
transaction holds the partition: not when the producer already has an open
transaction on the partition (the leader knows it from its producer state), else the
transaction coordinator's answer (``Verifier.verify``, Kafka's
handleVerifyPartitionsInTransaction: asked in-process when the coordinator runs here,
else with AddPartitionsToTxn VerifyOnly on another broker; the verifier is handed in by
the broker, nothing here imports it); the answer may come later (a future).

Produce v12 (transactions v2): the client sends no AddPartitionsToTxn, so a transactional
batch whose producer has no open transaction at its epoch on the partition has the
partition added to its transaction by the coordinator (``Verifier.add``, Kafka's
add-partition operation; the coordinator may run on another broker), whether or not
verification is enabled; the answer may come later (a future).  A batch of an older
epoch than the producer's open transaction here is added too, so the coordinator
refuses it (PRODUCER_FENCED: a late Produce of a previous transaction).

The coordinator's error becomes the client's answer as Kafka's ReplicaManager maps it
(``failure``): PRODUCER_FENCED -> INVALID_PRODUCER_EPOCH; a partition outside the
transaction -> TRANSACTION_ABORTABLE from Produce v11, else INVALID_TXN_STATE with
Kafka's message; coordinator-unavailable errors -> NOT_ENOUGH_REPLICAS (old clients
retry it without a metadata refresh), with the underlying error named in the message.
"""
from __future__ import annotations

from typing import Protocol

from kafkapy.protocol.errors import ErrorCode
from kafkapy.replication import acks
from kafkapy.replication.partition import AppendResult

_FIRST_ABORTABLE_VERSION = 11  # Produce v11 answers TRANSACTION_ABORTABLE (KIP-890)
FIRST_ADDING_VERSION = 12      # Produce v12: the leader adds the partition (transactions v2)

_RETRY_AS_NOT_ENOUGH_REPLICAS = frozenset({
    ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.NETWORK_EXCEPTION,
    ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR})


class Verifier(Protocol):
    """What verification asks of the transaction coordinator (a higher layer's
    ``PartitionAdder``, handed in as this)."""

    def verify(self, transactional_id: str, producer_id: int, epoch: int,
               tp: tuple[str, int]): ...

    def add(self, transactional_id: str, producer_id: int, epoch: int,
            tp: tuple[str, int]): ...


def coordinator_verdict(coordinator: Verifier | None, transactional_id: str,
                        producer_id: int, epoch: int, tp: tuple[str, int]):
    """None when the partition is in the producer's transaction, else an error code; a
    future of that while another broker's coordinator answers.  ``coordinator`` is this
    broker's verifier (None: transactions are not served here)."""
    if coordinator is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    return acks.then(coordinator.verify(transactional_id, producer_id, epoch, tp), _verdict)


def _verdict(error: int) -> int | None:
    if error == ErrorCode.TRANSACTION_ABORTABLE:
        return ErrorCode.INVALID_TXN_STATE  # the partition is not in the transaction
    return error or None


def add_verdict(coordinator: Verifier | None, transactional_id: str, producer_id: int,
                epoch: int, tp: tuple[str, int]):
    """None when ``tp`` is in the producer's transaction now, else an error code; a
    future of that while the coordinator adds it."""
    if coordinator is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    return acks.then(coordinator.add(transactional_id, producer_id, epoch, tp),
                     lambda error: error or None)


def failure(error: int, produce_version: int) -> AppendResult:
    """The client-facing answer Kafka's ReplicaManager makes of a coordinator error."""
    if error == ErrorCode.PRODUCER_FENCED:
        return AppendResult(ErrorCode.INVALID_PRODUCER_EPOCH)
    if error == ErrorCode.INVALID_TXN_STATE:
        if produce_version >= _FIRST_ABORTABLE_VERSION:
            return AppendResult(ErrorCode.TRANSACTION_ABORTABLE)
        return AppendResult(error, error_message="Partition was not added to the transaction",
                            message_is_public=True)
    if error in _RETRY_AS_NOT_ENOUGH_REPLICAS:
        # Old clients retry NOT_ENOUGH_REPLICAS without refreshing metadata.
        return AppendResult(ErrorCode.NOT_ENOUGH_REPLICAS, message_is_public=True,
                            error_message="Unable to verify the partition has been added to "
                                          f"the transaction. Underlying error: "
                                          f"{ErrorCode(error).name}")
    return AppendResult(error)
