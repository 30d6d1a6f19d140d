"""The transaction coordinator's harness: a TransactionCoordinator over an in-memory store
(FakeStore)."""
from __future__ import annotations

from kafkapy.clock import MockClock
from kafkapy.coordinator.group.timers import Deadlines
from kafkapy.coordinator.transaction import records as R
from kafkapy.coordinator.transaction.coordinator import TransactionCoordinator, TxnSettings
from kafkapy.purgatory.timer import Timer


OFFSETS_TP = ("__consumer_offsets", 7)


class FakeStore:
    def __init__(self) -> None:
        self.records: list[tuple[int, bytes, bytes | None]] = []
        self.fail_with = 0

    def write(self, index, key, value, timeout_ms=None):
        if self.fail_with:
            return self.fail_with
        self.records.append((index, key, value))
        return 0

    def states(self, txn_id):
        return [R.decode_value(v).state if v is not None else None
                for _, k, v in self.records if R.decode_key(k) == txn_id]


class FakeMarkers:
    def __init__(self) -> None:
        self.calls = []
        self.versions = []      # the transaction version of each call
        self.errors: dict = {}

    def write(self, producer_id, epoch, coordinator_epoch, commit, partitions,
              transaction_version=0):
        self.calls.append((producer_id, epoch, coordinator_epoch, commit, list(partitions)))
        self.versions.append(transaction_version)
        return {tp: self.errors.pop(tp, 0) for tp in partitions}


class Harness:
    def __init__(self, settings=TxnSettings(num_partitions=4, max_timeout_ms=60000,
                                            id_expiration_ms=3_600_000)) -> None:
        self.clock = MockClock()
        self.timer = Timer(None, self.clock)
        self.store = FakeStore()
        self.markers = FakeMarkers()
        self.deferred = []
        self.next_pid = iter(range(1000, 2000))
        self.finalized_tv = 0       # the cluster's transaction.version
        self.coord = TransactionCoordinator(
            settings, self.clock, Deadlines(self.timer), self.store, self.markers,
            lambda: next(self.next_pid), self.deferred.append,
            lambda group: OFFSETS_TP, finalized_tv=lambda: self.finalized_tv)
        for index in range(settings.num_partitions):
            self.coord.begin_loading(index, coordinator_epoch=3)
            self.coord.finish_loading(index, [])

    def run_deferred(self) -> None:
        while self.deferred:
            self.deferred.pop(0)()

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)
        self.timer.advance_clock()
        self.run_deferred()

    def txn(self, txn_id):
        return self.coord.describe(txn_id)[1]
