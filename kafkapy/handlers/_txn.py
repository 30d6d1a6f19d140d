"""Helpers shared by the transaction handlers (not an API module itself)."""
from __future__ import annotations


def service(ctx):
    """The broker's TransactionService, or None while transactions are disabled."""
    return ctx.services.txn_coordinator
