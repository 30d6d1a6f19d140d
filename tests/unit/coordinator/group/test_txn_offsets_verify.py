"""A transactional offset commit whose transaction check is answered later (the
transaction coordinator on another broker): nothing is written before the answer; a
refusal is every partition's answer (nothing pending); once verified, the group is checked
as it is then and the offsets are pending for the transaction until its marker."""
from __future__ import annotations

import asyncio

from kafkapy.coordinator.group.offsets import OffsetAndMetadata
from kafkapy.protocol.errors import ErrorCode as E
from tests.support.group_coordinator import Harness


def _offsets(h) -> dict:
    return {("t", 0): OffsetAndMetadata(5, -1, "", h.clock.time_ms())}


def test_the_commit_waits_for_the_transaction_check(tmp_path):
    h = Harness(tmp_path)
    c = h.coordinator
    loop = asyncio.new_event_loop()
    try:
        async def commit(answer: int):
            check = loop.create_future()
            pending = c.commit_txn_offsets("g", 42, 0, "", None, -1, _offsets(h),
                                           verify=lambda: check)
            assert asyncio.isfuture(pending) and not pending.done()
            assert c.fetch_offsets("g", [("t", 0)]) == (0, [(("t", 0), None)])
            check.set_result(answer)
            return await pending

        refused = loop.run_until_complete(commit(E.TRANSACTION_ABORTABLE))
        assert refused == {("t", 0): E.TRANSACTION_ABORTABLE}
        # Nothing was made pending: a COMMIT marker of the producer commits nothing.
        c.complete_txn_offsets(42, [c.partition_for("g")], commit=True)
        assert c.fetch_offsets("g", [("t", 0)]) == (0, [(("t", 0), None)])

        assert loop.run_until_complete(commit(0)) == {("t", 0): 0}
        assert c.fetch_offsets("g", [("t", 0)]) == (0, [(("t", 0), None)])   # pending
        c.complete_txn_offsets(42, [c.partition_for("g")], commit=True)
        error, [(_, committed)] = c.fetch_offsets("g", [("t", 0)])
        assert (error, committed.offset) == (0, 5)
    finally:
        loop.close()
