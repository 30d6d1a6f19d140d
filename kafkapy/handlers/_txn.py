"""Helpers shared by the transaction handlers (not an API module itself)."""
from __future__ import annotations


def service(ctx):
    """The broker's TransactionService, or None while transactions are disabled."""
    broker = ctx.broker
    return broker.txn_coordinator if broker.transactions_enabled else None
