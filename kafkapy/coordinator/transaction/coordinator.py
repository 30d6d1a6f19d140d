"""The transaction coordinator (Kafka's TransactionCoordinator + TransactionStateManager).

It serves the transactional ids whose ``__transaction_state`` partition
(``abs(java_string_hash(id)) % transaction.state.log.num.partitions``) this
broker leads and has loaded.  Every state change is written to that partition
first (``store.write``: key TransactionLogKey, value TransactionLogValue, see
``records.py``) and installed only once the write is durable: the store answers
an error code, or a future of it while followers catch up (Kafka appends with
acks=-1 and min ISR transaction.state.log.min.isr); meanwhile the transition is
pending, so other requests for the id get CONCURRENT_TRANSACTIONS, and the
public operations return a future of their answer.

Flow of one transaction:
- InitProducerId: a new id gets a producer id (from the persisted id blocks)
  and epoch 0; an existing one in Empty/Complete* gets its epoch bumped
  (PRODUCER_FENCED for a stale expected epoch, v3+); in Ongoing the epoch is
  bumped to fence the old producer, the transaction is aborted and the client
  gets CONCURRENT_TRANSACTIONS (its retry bumps again); in Prepare* it gets
  CONCURRENT_TRANSACTIONS.  A timeout above transaction.max.timeout.ms is
  INVALID_TRANSACTION_TIMEOUT.
- AddPartitionsToTxn / AddOffsetsToTxn: Ongoing with the partitions added
  (the start time is set when leaving Empty/Complete*).
- EndTxn: Prepare{Commit,Abort} is written, the client is answered, and the
  markers are written to every partition of the transaction (``markers``,
  deferred to the next loop turn; failures retried after
  ``MARKER_RETRY_BACKOFF_MS``); then Complete{Commit,Abort}.  Meanwhile the
  transaction has a pending transition and every request for it gets
  CONCURRENT_TRANSACTIONS.
- Timeouts run on the purgatory timer (``Deadlines``, injected clock): an
  Ongoing transaction whose start + transaction timeout has passed is fenced
  (epoch + 1) and aborted; an id idle in Empty/Complete* for
  transactional.id.expiration.ms is removed (a tombstone is written).
- Loading a partition (restart, leadership): the latest value per id is
  installed; Prepare* transactions get their markers (re)sent, Ongoing ones
  their timeout.

Transactions v2 (a client speaking EndTxn v5, Produce v12, TxnOffsetCommit v5;
``state.TV_2``): partitions are added by the partition leaders on the client's
first write (``add_partitions`` with ``client_tv``), and ``end_txn_v2`` bumps the
epoch at every commit or abort: PrepareCommit/PrepareAbort carry epoch + 1, the
markers are written with it (WriteTxnMarkers v2 says the transaction version, so the
leader refuses a marker not above its producer's epoch), and the client is answered
the new epoch; when the epoch is exhausted the coordinator takes a new producer id,
which Complete* installs at epoch 0 and which is what the client is answered.
Retries (Kafka 4's table): in Complete* a request at epoch - 1 (or at the previous
producer id's last epoch after a roll) of the same outcome answers NONE with the
current producer id and epoch; an abort at the current epoch in Empty/Complete*
aborts with a bump (nothing to mark); in Prepare* only a retry's epoch is accepted
(CONCURRENT_TRANSACTIONS), other epochs are PRODUCER_FENCED.  A v2 transaction that
times out, or that InitProducerId fences, is fenced (epoch + 1) and then aborted with
the v2 bump when transaction.version 2 is finalized, as Kafka does (the cluster's level,
not the client's, decides the aborts the coordinator starts, and the log format:
``__transaction_state`` values are version 1 from level 1 on).

Errors: unknown partition owner -> NOT_COORDINATOR, loading ->
COORDINATOR_LOAD_IN_PROGRESS, unknown id -> INVALID_PRODUCER_ID_MAPPING,
wrong producer id -> INVALID_PRODUCER_ID_MAPPING, wrong epoch ->
PRODUCER_FENCED (handlers turn it into INVALID_PRODUCER_EPOCH for old
request versions), illegal end state -> INVALID_TXN_STATE.
Single owner: everything runs on the event loop; no locks.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterable

import structlog

from kafkapy.coordinator.transaction import records as R
from kafkapy.coordinator.transaction.state import (MAX_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID,
                                                   TransactionMetadata, TxnState, TxnTransit,
                                                   TV_2, is_epoch_exhausted,
                                                   supports_epoch_bump)
from kafkapy.jvm import string_hash as java_string_hash
from kafkapy.jvm import utils_abs as java_utils_abs
from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.protocol.topic_partition import TopicPartition
from kafkapy.replication.acks import then

_log = structlog.get_logger("kafkapy.coordinator.transaction")
S = TxnState
MARKER_RETRY_BACKOFF_MS = 100

# Kafka's appendTransactionToLog: a failed append as the client sees it.
_TO_COORDINATOR_NOT_AVAILABLE = {E.UNKNOWN_TOPIC_OR_PARTITION, E.NOT_ENOUGH_REPLICAS,
                                 E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, E.REQUEST_TIMED_OUT}
_TO_NOT_COORDINATOR = {E.NOT_LEADER_OR_FOLLOWER, E.KAFKA_STORAGE_ERROR}
_TO_UNKNOWN = {E.MESSAGE_TOO_LARGE, E.RECORD_LIST_TOO_LARGE}


def _coordinator_error(code: int) -> int:
    if code in _TO_COORDINATOR_NOT_AVAILABLE:
        return E.COORDINATOR_NOT_AVAILABLE
    if code in _TO_NOT_COORDINATOR:
        return E.NOT_COORDINATOR
    if code in _TO_UNKNOWN:
        return E.UNKNOWN
    return code


def partition_for(transactional_id: str, num_partitions: int) -> int:
    return java_utils_abs(java_string_hash(transactional_id)) % num_partitions


@dataclass(frozen=True)
class TxnSettings:
    num_partitions: int = 50
    max_timeout_ms: int = 900000
    id_expiration_ms: int = 604800000

    @classmethod
    def from_config(cls, config) -> "TxnSettings":
        return cls(config["transaction.state.log.num.partitions"],
                   config["transaction.max.timeout.ms"],
                   config["transactional.id.expiration.ms"])


@dataclass
class _Owned:
    coordinator_epoch: int
    loading: bool
    txns: dict


class TransactionCoordinator:
    """See the module docstring.

    ``store.write(partition, key, value) -> error code`` appends one record to
    ``__transaction_state``; ``markers.write(producer_id, epoch, coordinator_epoch,
    commit, partitions) -> {partition: error code}`` writes COMMIT/ABORT markers;
    ``next_producer_id()`` hands out persisted producer ids; ``defer(fn)`` runs fn on
    a later loop turn; ``offsets_partition(group_id)`` is the __consumer_offsets
    partition of a group; ``finalized_tv()`` the cluster's finalized transaction.version.
    """

    def __init__(self, settings: TxnSettings, clock, deadlines, store, markers,
                 next_producer_id: Callable[[], int], defer: Callable[[Callable], None],
                 offsets_partition: Callable[[str], TopicPartition] | None = None,
                 finalized_tv: Callable[[], int] = lambda: 0) -> None:
        self.settings = settings
        self._clock = clock
        self._deadlines = deadlines
        self._store = store
        self._markers = markers
        self._next_producer_id = next_producer_id
        self._defer = defer
        self._offsets_partition = offsets_partition
        self._finalized_tv = finalized_tv
        self._owned: dict[int, _Owned] = {}
        self._timeouts: dict[str, object] = {}
        self._expiries: dict[str, object] = {}
        self._marker_jobs: dict[str, object] = {}

    # -- ownership ------------------------------------------------------------------------
    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.settings.num_partitions)

    def serves(self, index: int) -> bool:
        return index in self._owned

    def begin_loading(self, index: int, coordinator_epoch: int) -> None:
        self.unload(index)
        self._owned[index] = _Owned(coordinator_epoch, True, {})

    def finish_loading(self, index: int, entries: Iterable[tuple[bytes, bytes | None]]) -> None:
        """Install the latest state of every id in the partition (from its records)."""
        owned = self._owned.get(index)
        if owned is None:
            return
        latest: dict[str, R.StoredTxn | None] = {}
        for key, value in entries:
            txn_id = R.decode_key(key)
            if txn_id is not None:
                latest[txn_id] = R.decode_value(value)
        for txn_id, stored in latest.items():
            if stored is None:
                continue
            owned.txns[txn_id] = TransactionMetadata(
                txn_id, stored.producer_id, stored.producer_epoch, stored.timeout_ms,
                TxnState(stored.state), stored.partitions, stored.start_ms, stored.last_update_ms,
                last_producer_id=stored.prev_producer_id,
                next_producer_id=stored.next_producer_id, client_tv=stored.client_tv)
        owned.loading = False
        for txn in list(owned.txns.values()):
            if txn.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                transit = txn.prepare_complete(self._clock.time_ms())
                self._start_markers(txn, owned.coordinator_epoch,
                                    txn.state == S.PREPARE_COMMIT, transit)
            self._schedule_deadlines(txn)
        if owned.txns:
            _log.info("loaded transaction state partition", partition=index,
                      transactions=len(owned.txns))

    def unload(self, index: int) -> None:
        owned = self._owned.pop(index, None)
        if owned is None:
            return
        for txn_id in owned.txns:
            for table in (self._timeouts, self._expiries, self._marker_jobs):
                _cancel(table.pop(txn_id, None))

    def shutdown(self) -> None:
        for index in list(self._owned):
            self.unload(index)

    def _lookup(self, txn_id: str) -> tuple[int, _Owned | None]:
        """The coordinator state owning ``txn_id``, or the error to answer (an empty id is
        INVALID_REQUEST, as Kafka refuses it before anything else)."""
        if not txn_id:
            return E.INVALID_REQUEST, None
        owned = self._owned.get(self.partition_for(txn_id))
        if owned is None:
            return E.NOT_COORDINATOR, None
        if owned.loading:
            return E.COORDINATOR_LOAD_IN_PROGRESS, None
        return 0, owned

    # -- InitProducerId ---------------------------------------------------------------------
    def init_producer_id(self, txn_id: str, timeout_ms: int, expected_pid: int = -1,
                         expected_epoch: int = -1):
        """(error, producer id, epoch) for InitProducerId with a transactional id (or a
        future of it while the write replicates)."""
        if not txn_id:
            return E.INVALID_REQUEST, -1, -1
        if timeout_ms <= 0 or timeout_ms > self.settings.max_timeout_ms:
            return E.INVALID_TRANSACTION_TIMEOUT, -1, -1
        error, owned = self._lookup(txn_id)
        if error:
            return error, -1, -1
        now = self._clock.time_ms()
        txn = owned.txns.get(txn_id)
        if txn is None:
            txn = TransactionMetadata(txn_id, self._next_producer_id(), NO_PRODUCER_EPOCH,
                                      timeout_ms, S.EMPTY, (), -1, now)
            owned.txns[txn_id] = txn
        expected = (expected_pid, expected_epoch) if expected_pid >= 0 else None
        if txn.pending_in_progress:
            return E.CONCURRENT_TRANSACTIONS, -1, -1
        if expected is not None and not (
                txn.producer_epoch == NO_PRODUCER_EPOCH or expected_pid == txn.producer_id
                or (expected_pid == txn.last_producer_id and is_epoch_exhausted(expected_epoch))):
            return E.PRODUCER_FENCED, -1, -1
        if txn.state in (S.PREPARE_ABORT, S.PREPARE_COMMIT):
            return E.CONCURRENT_TRANSACTIONS, -1, -1
        if txn.state == S.ONGOING:
            transit = txn.prepare_fence_producer_epoch()
            return then(self._fence_and_abort(txn, owned, transit.producer_epoch),
                        lambda error: ((error or E.CONCURRENT_TRANSACTIONS), -1, -1))
        if txn.state not in (S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT):
            return E.INVALID_TXN_STATE, -1, -1
        if txn.producer_epoch >= 0 and is_epoch_exhausted(txn.producer_epoch) and (
                expected is None or expected_epoch == txn.producer_epoch):
            transit = txn.prepare_producer_id_rotation(self._next_producer_id(), timeout_ms, now,
                                                       expected is not None)
        else:
            transit = txn.prepare_increment_producer_epoch(
                timeout_ms, expected_epoch if expected is not None else None, now)
            if isinstance(transit, int):
                return transit, -1, -1

        def written(error: int) -> tuple[int, int, int]:
            if error:
                return error, -1, -1
            _log.info("initialized transactional id", transactional_id=txn_id,
                      producer_id=txn.producer_id, epoch=txn.producer_epoch)
            return 0, txn.producer_id, txn.producer_epoch

        return then(self._write(txn, owned, transit), written)

    # -- AddPartitionsToTxn / AddOffsetsToTxn ---------------------------------------------------
    def add_partitions(self, txn_id: str, producer_id: int, epoch: int,
                       partitions: Iterable[TopicPartition], client_tv: int | None = None):
        """The error code, or a future of it while the write replicates.  ``client_tv``:
        the transaction version of the request (2: a partition leader adding the partition
        of a v2 client's first write to it); None keeps the transaction's."""
        error, owned = self._lookup(txn_id)
        if error:
            return error
        txn = owned.txns.get(txn_id)
        partitions = frozenset(partitions)
        if txn is None or txn.producer_id != producer_id:
            return E.INVALID_PRODUCER_ID_MAPPING
        if txn.producer_epoch != epoch:
            return E.PRODUCER_FENCED
        if txn.pending_in_progress or txn.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return E.CONCURRENT_TRANSACTIONS
        if txn.state == S.ONGOING and partitions <= txn.partitions:
            return 0
        return self._write(txn, owned, txn.prepare_add_partitions(
            partitions, self._clock.time_ms(), client_tv))

    def add_offsets(self, txn_id: str, producer_id: int, epoch: int, group_id: str):
        """AddOffsetsToTxn: a client of transactions v1 (Kafka passes TV_0)."""
        if self._offsets_partition is None:
            return E.COORDINATOR_NOT_AVAILABLE
        return self.add_partitions(txn_id, producer_id, epoch,
                                   [self._offsets_partition(group_id)], client_tv=0)

    def verify_partitions(self, txn_id: str, producer_id: int, epoch: int,
                          partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """Whether each partition is in the producer's transaction, without adding it
        (KIP-890 part 1; Kafka's handleVerifyPartitionsInTransaction): a partition that is
        not answers TRANSACTION_ABORTABLE; a transaction-wide error is every partition's."""
        partitions = list(partitions)
        error = self._verify_txn(txn_id, producer_id, epoch)
        if error:
            return {tp: error for tp in partitions}
        txn = self._owned[self.partition_for(txn_id)].txns[txn_id]
        return {tp: 0 if tp in txn.partitions else E.TRANSACTION_ABORTABLE for tp in partitions}

    def _verify_txn(self, txn_id: str, producer_id: int, epoch: int) -> int:
        error, owned = self._lookup(txn_id)
        if error:
            return error
        txn = owned.txns.get(txn_id)
        if txn is None or txn.state == S.DEAD or txn.producer_id != producer_id:
            return E.INVALID_PRODUCER_ID_MAPPING
        if txn.producer_epoch != epoch:
            return E.PRODUCER_FENCED
        if txn.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return E.CONCURRENT_TRANSACTIONS
        return 0

    # -- EndTxn -------------------------------------------------------------------------------
    def end_txn(self, txn_id: str, producer_id: int, epoch: int, commit: bool):
        """The error code, or a future of it while PrepareCommit/PrepareAbort replicates."""
        error, owned = self._lookup(txn_id)
        if error:
            return error
        txn = owned.txns.get(txn_id)
        if txn is None or txn.producer_id != producer_id:
            return E.INVALID_PRODUCER_ID_MAPPING
        return self._end(txn, owned, epoch, commit, from_client=True)

    def end_txn_v2(self, txn_id: str, producer_id: int, epoch: int, commit: bool):
        """EndTxn v5: (error, producer id, epoch) -- the producer id and epoch the client
        goes on with, -1/-1 with an error -- or a future of it while Prepare* replicates."""
        error, owned = self._lookup(txn_id)
        if error:
            return error, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        txn = owned.txns.get(txn_id)
        if txn is None:
            return E.INVALID_PRODUCER_ID_MAPPING, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        return self._end_v2(txn, owned, producer_id, epoch, commit, from_client=True)

    def _fence_and_abort(self, txn: TransactionMetadata, owned: _Owned, fenced_epoch: int):
        """Abort an Ongoing transaction whose epoch fence is pending (InitProducerId of a
        new producer, or its timeout), at the cluster's finalized transaction version as
        Kafka does (not the client's: nothing here comes from the client): the error code,
        or a future of it."""
        if supports_epoch_bump(self._finalized_tv()):
            return then(self._end_v2(txn, owned, txn.producer_id, fenced_epoch, False,
                                     from_client=False), lambda answer: answer[0])
        return self._end(txn, owned, fenced_epoch, False, from_client=False)

    def _end_v2(self, txn: TransactionMetadata, owned: _Owned, producer_id: int, epoch: int,
                commit: bool, from_client: bool):
        """Kafka 4's endTransaction for transaction version 2 (see the module docstring)."""
        fence = txn.pending == S.PREPARE_EPOCH_FENCE
        retry_on_overflow = (not fence and txn.last_producer_id == producer_id
                             and epoch == MAX_EPOCH - 1 and txn.producer_epoch == 0)
        retry_on_bump = not fence and txn.producer_epoch == epoch + 1
        retry = retry_on_bump or retry_on_overflow
        state = txn.state
        if fence:
            valid = (not from_client or epoch == txn.producer_epoch) \
                and epoch >= txn.producer_epoch
        elif state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            valid = retry_on_bump
        elif state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            valid = retry or epoch == txn.producer_epoch
        else:
            valid = epoch == txn.producer_epoch
        error = 0
        if txn.producer_id != producer_id and not retry_on_overflow:
            error = E.INVALID_PRODUCER_ID_MAPPING
        elif not valid:
            error = E.PRODUCER_FENCED
        elif txn.pending_in_progress and not fence:
            error = E.CONCURRENT_TRANSACTIONS
        elif state == S.ONGOING:
            return self._prepare_end_v2(txn, owned, commit, fence, epoch, False)
        elif state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            same = commit == (state == S.COMPLETE_COMMIT)
            if retry:
                error = 0 if same else E.INVALID_TXN_STATE
            elif commit:
                error = E.INVALID_TXN_STATE
            else:
                return self._prepare_end_v2(txn, owned, False, fence, epoch, True)
        elif state == S.EMPTY and not commit:
            return self._prepare_end_v2(txn, owned, False, fence, epoch, True)
        elif state == S.PREPARE_COMMIT:
            error = E.CONCURRENT_TRANSACTIONS if commit else E.INVALID_TXN_STATE
        elif state == S.PREPARE_ABORT:
            error = E.CONCURRENT_TRANSACTIONS if not commit else E.INVALID_TXN_STATE
        else:
            error = E.INVALID_TXN_STATE
        if fence:
            txn.abort_pending()
        if error:
            return error, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        return 0, txn.producer_id, txn.producer_epoch   # a retry of a completed EndTxn

    def _prepare_end_v2(self, txn: TransactionMetadata, owned: _Owned, commit: bool,
                        fence: bool, epoch: int, nothing_added: bool):
        """Write Prepare{Commit,Abort} with the bumped epoch (and a next producer id when
        the epoch is exhausted); once durable, answer and start the markers."""
        next_producer_id = NO_PRODUCER_ID
        if not fence and txn.producer_epoch >= 0 and is_epoch_exhausted(txn.producer_epoch):
            next_producer_id = self._next_producer_id()
        if fence:
            txn.pending = None
            txn.producer_epoch = epoch
            txn.last_producer_epoch = NO_PRODUCER_EPOCH
        transit = txn.prepare_abort_or_commit(
            S.PREPARE_COMMIT if commit else S.PREPARE_ABORT, self._clock.time_ms(),
            client_tv=TV_2,
            next_producer_id=next_producer_id, no_partition_added=nothing_added)

        def prepared(error: int):
            if error:
                if fence:
                    txn.failed_epoch_fence = True
                return error, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
            _cancel(self._timeouts.pop(txn.transactional_id, None))
            if txn.next_producer_id != NO_PRODUCER_ID:
                answer = (0, txn.next_producer_id, 0)
            else:
                answer = (0, txn.producer_id, txn.producer_epoch)
            complete = txn.prepare_complete(self._clock.time_ms())
            self._start_markers(txn, owned.coordinator_epoch, commit, complete)
            return answer

        return then(self._write(txn, owned, transit), prepared)

    def _end(self, txn: TransactionMetadata, owned: _Owned, epoch: int, commit: bool,
             from_client: bool):
        if (from_client and epoch != txn.producer_epoch) or epoch < txn.producer_epoch:
            if txn.pending == S.PREPARE_EPOCH_FENCE:
                txn.abort_pending()
            return E.PRODUCER_FENCED
        if txn.pending_in_progress and txn.pending != S.PREPARE_EPOCH_FENCE:
            return E.CONCURRENT_TRANSACTIONS
        state = txn.state
        if state == S.ONGOING:
            fence = False
            if not commit and txn.pending == S.PREPARE_EPOCH_FENCE:
                fence = True
                txn.pending = None
                txn.producer_epoch = epoch
                txn.last_producer_epoch = NO_PRODUCER_EPOCH
            transit = txn.prepare_abort_or_commit(S.PREPARE_COMMIT if commit else S.PREPARE_ABORT,
                                                  self._clock.time_ms())

            def prepared(error: int) -> int:
                if error:
                    if fence:
                        txn.failed_epoch_fence = True
                    return error
                _cancel(self._timeouts.pop(txn.transactional_id, None))
                complete = txn.prepare_complete(self._clock.time_ms())
                self._start_markers(txn, owned.coordinator_epoch, commit, complete)
                return 0

            return then(self._write(txn, owned, transit), prepared)
        if txn.pending == S.PREPARE_EPOCH_FENCE:
            txn.abort_pending()
        if state == S.COMPLETE_COMMIT:
            return 0 if commit else E.INVALID_TXN_STATE
        if state == S.COMPLETE_ABORT:
            return 0 if not commit else E.INVALID_TXN_STATE
        if state == S.PREPARE_COMMIT:
            return E.CONCURRENT_TRANSACTIONS if commit else E.INVALID_TXN_STATE
        if state == S.PREPARE_ABORT:
            return E.CONCURRENT_TRANSACTIONS if not commit else E.INVALID_TXN_STATE
        return E.INVALID_TXN_STATE

    # -- markers ------------------------------------------------------------------------------
    def _start_markers(self, txn: TransactionMetadata, coordinator_epoch: int, commit: bool,
                       complete: TxnTransit) -> None:
        remaining = set(txn.partitions)
        job = _MarkerJob(txn, coordinator_epoch, commit, complete, remaining)
        self._marker_jobs[txn.transactional_id] = job
        self._defer(lambda: self._send_markers(job))

    def _send_markers(self, job: "_MarkerJob") -> None:
        txn = job.txn
        txn_id = txn.transactional_id
        if job.cancelled or self._marker_jobs.get(txn_id) is not job:
            return
        owned = self._owned.get(self.partition_for(txn_id))
        if owned is None or owned.coordinator_epoch != job.coordinator_epoch \
                or owned.txns.get(txn_id) is not txn:
            self._marker_jobs.pop(txn_id, None)
            return
        if job.remaining:
            results = self._markers.write(txn.producer_id, txn.producer_epoch,
                                          job.coordinator_epoch, job.commit,
                                          sorted(job.remaining),
                                          transaction_version=txn.client_tv)
            for tp, code in results.items():
                if code == 0 or code in (E.UNKNOWN_TOPIC_OR_PARTITION, E.INVALID_PRODUCER_EPOCH,
                                         E.TRANSACTION_COORDINATOR_FENCED):
                    # Done, gone, or superseded by a newer epoch/coordinator: Kafka drops it too.
                    if code:
                        _log.warning("transaction marker not written", transactional_id=txn_id,
                                     partition=tp, error=E(code).name)
                    job.remaining.discard(tp)
        if job.remaining:
            job.handle = self._deadlines.schedule(MARKER_RETRY_BACKOFF_MS,
                                                  lambda: self._send_markers(job))
            return
        then(self._write(txn, owned, job.complete), lambda error: self._completed(job, error))

    def _completed(self, job: "_MarkerJob", error: int) -> None:
        """The CompleteCommit/CompleteAbort write of a marker job ended."""
        txn = job.txn
        txn_id = txn.transactional_id
        if self._marker_jobs.get(txn_id) is not job:
            return
        if error in (E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE) \
                and not self.serves(self.partition_for(txn_id)):
            self._marker_jobs.pop(txn_id, None)
            return
        if error:
            # Keep the CompleteX transition pending and retry the write.
            txn.pending = job.complete.state
            job.handle = self._deadlines.schedule(MARKER_RETRY_BACKOFF_MS,
                                                  lambda: self._send_markers(job))
            return
        self._marker_jobs.pop(txn_id, None)
        self._schedule_deadlines(txn)

    # -- writing ------------------------------------------------------------------------------
    def _write(self, txn: TransactionMetadata, owned: _Owned, transit: TxnTransit):
        """Write ``transit`` to the log; install it once the write is durable (the high
        watermark passed it, within the transaction timeout as Kafka's
        appendTransactionToLog), forget it on failure.  The error code, or a future of it;
        meanwhile the transition stays pending (CONCURRENT_TRANSACTIONS for others)."""
        stored = R.StoredTxn(transit.producer_id, transit.producer_epoch, transit.timeout_ms,
                             int(transit.state), transit.partitions, transit.last_update_ms,
                             transit.start_ms, transit.last_producer_id,
                             transit.next_producer_id, transit.client_tv)
        flexible = self._finalized_tv() >= R.FLEXIBLE_VALUE_VERSION
        index = self.partition_for(txn.transactional_id)
        try:
            written = self._store.write(index, R.encode_key(txn.transactional_id),
                                        R.encode_value(stored, flexible),
                                        timeout_ms=transit.timeout_ms)
        except Exception:
            _log.exception("writing transaction state failed",
                           transactional_id=txn.transactional_id)
            written = E.UNKNOWN
        return then(written, lambda code: self._written(txn, owned, index, transit, code))

    def _written(self, txn: TransactionMetadata, owned: _Owned, index: int,
                 transit: TxnTransit, code: int) -> int:
        current = self._owned.get(index)
        if code:
            txn.abort_pending()
            return _coordinator_error(code)
        if current is not owned or owned.txns.get(txn.transactional_id) is not txn:
            # Emigrated (or reloaded) while the write was in flight: Kafka answers
            # NOT_COORDINATOR and leaves the state to the new owner.
            return E.NOT_COORDINATOR
        txn.complete(transit)
        self._schedule_deadlines(txn)
        return 0

    # -- deadlines ------------------------------------------------------------------------------
    def _schedule_deadlines(self, txn: TransactionMetadata) -> None:
        txn_id = txn.transactional_id
        now = self._clock.time_ms()
        if txn.state == S.ONGOING and txn.start_ms >= 0:
            if txn_id not in self._timeouts:
                due = txn.start_ms + txn.timeout_ms
                self._timeouts[txn_id] = self._deadlines.schedule(
                    max(0, due - now), lambda: self._abort_if_timed_out(txn))
        else:
            _cancel(self._timeouts.pop(txn_id, None))
        if txn.state in (S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT):
            _cancel(self._expiries.pop(txn_id, None))
            due = txn.last_update_ms + self.settings.id_expiration_ms
            self._expiries[txn_id] = self._deadlines.schedule(
                max(0, due - now), lambda: self._expire_if_idle(txn))
        else:
            _cancel(self._expiries.pop(txn_id, None))

    def _abort_if_timed_out(self, txn: TransactionMetadata) -> None:
        txn_id = txn.transactional_id
        self._timeouts.pop(txn_id, None)
        error, owned = self._lookup(txn_id)
        if error or owned.txns.get(txn_id) is not txn or txn.state != S.ONGOING:
            return
        now = self._clock.time_ms()
        if txn.start_ms + txn.timeout_ms > now:
            self._schedule_deadlines(txn)
            return
        if txn.pending_in_progress:
            # Retry shortly, as Kafka's periodic abort pass would.
            self._timeouts[txn_id] = self._deadlines.schedule(
                MARKER_RETRY_BACKOFF_MS, lambda: self._abort_if_timed_out(txn))
            return
        _log.info("aborting timed-out transaction", transactional_id=txn_id,
                  producer_id=txn.producer_id, timeout_ms=txn.timeout_ms)
        transit = txn.prepare_fence_producer_epoch()

        def ended(error: int) -> None:
            if not error:
                return
            _log.warning("aborting timed-out transaction failed", transactional_id=txn_id,
                         error=E(error).name)
            if txn.state == S.ONGOING and txn_id not in self._timeouts:
                self._timeouts[txn_id] = self._deadlines.schedule(
                    MARKER_RETRY_BACKOFF_MS, lambda: self._abort_if_timed_out(txn))

        then(self._fence_and_abort(txn, owned, transit.producer_epoch), ended)

    def _expire_if_idle(self, txn: TransactionMetadata) -> None:
        txn_id = txn.transactional_id
        self._expiries.pop(txn_id, None)
        error, owned = self._lookup(txn_id)
        if error or owned.txns.get(txn_id) is not txn:
            return
        if txn.state not in (S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT):
            return
        now = self._clock.time_ms()
        if txn.pending_in_progress or txn.last_update_ms + self.settings.id_expiration_ms > now:
            self._schedule_deadlines(txn)
            return
        txn.prepare_dead()
        index = self.partition_for(txn_id)
        # Kafka writes the tombstone with acks=-1 and forgets the id once it is durable.
        then(self._store.write(index, R.encode_key(txn_id), None),
             lambda code: self._expired(txn, owned, index, code))

    def _expired(self, txn: TransactionMetadata, owned: _Owned, index: int, code: int) -> None:
        txn_id = txn.transactional_id
        txn.abort_pending()
        if self._owned.get(index) is not owned or owned.txns.get(txn_id) is not txn:
            return
        if code:
            self._expiries[txn_id] = self._deadlines.schedule(
                MARKER_RETRY_BACKOFF_MS, lambda: self._expire_if_idle(txn))
            return
        owned.txns.pop(txn_id, None)
        _cancel(self._timeouts.pop(txn_id, None))
        _log.info("expired transactional id", transactional_id=txn_id)

    # -- admin ----------------------------------------------------------------------------------
    def describe(self, txn_id: str) -> tuple[int, TransactionMetadata | None]:
        error, owned = self._lookup(txn_id)
        if error:
            return error, None
        txn = owned.txns.get(txn_id)
        if txn is None or txn.state == S.DEAD:
            return E.TRANSACTIONAL_ID_NOT_FOUND, None
        return 0, txn

    def list(self, states: set[TxnState], producer_ids: set[int], min_duration_ms: int = -1,
             pattern: str | None = None) -> tuple[int, list[TransactionMetadata]]:
        if any(o.loading for o in self._owned.values()):
            return E.COORDINATOR_LOAD_IN_PROGRESS, []
        now = self._clock.time_ms()
        regex = re.compile(pattern) if pattern else None
        out = []
        for owned in self._owned.values():
            for txn in owned.txns.values():
                if states and txn.state not in states:
                    continue
                if producer_ids and txn.producer_id not in producer_ids:
                    continue
                if txn.state == S.DEAD:
                    continue
                if min_duration_ms >= 0 and now - txn.start_ms <= min_duration_ms:
                    continue
                if regex is not None and not regex.match(txn.transactional_id):
                    continue
                out.append(txn)
        return 0, out


class _MarkerJob:
    __slots__ = ("txn", "coordinator_epoch", "commit", "complete", "remaining", "handle",
                 "cancelled")

    def __init__(self, txn, coordinator_epoch, commit, complete, remaining) -> None:
        self.txn = txn
        self.coordinator_epoch = coordinator_epoch
        self.commit = commit
        self.complete = complete
        self.remaining = remaining
        self.handle = None
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True
        _cancel(self.handle)


def _cancel(task) -> None:
    if task is not None:
        task.cancel()
