"""Helpers shared by the transaction handlers (not an API module itself)."""
from __future__ import annotations

from kafkapy.protocol.errors import ErrorCode


def service(ctx):
    """The broker's TransactionService, or None while transactions are disabled."""
    broker = ctx.broker
    return broker.txn_coordinator if broker.transactions_enabled else None


def fenced_for_version(code: int, version: int, first_with_fenced: int) -> int:
    """Kafka answers PRODUCER_FENCED as INVALID_PRODUCER_EPOCH to request versions that
    predate the PRODUCER_FENCED error (KIP-588)."""
    if code == ErrorCode.PRODUCER_FENCED and version < first_with_fenced:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return code
