"""One transactional id's state and its legal transitions (Kafka's TransactionMetadata).

States (the int8 ids stored in ``__transaction_state``)::

    Empty(0) -> Ongoing(1) -> PrepareCommit(2) -> CompleteCommit(4) -> Ongoing / Empty / Dead
                       \\-> PrepareAbort(3)  -> CompleteAbort(5)  -> Ongoing / Empty / Dead
    Ongoing -> PrepareEpochFence(7) -> PrepareAbort   (InitProducerId or timeout fences)
    Empty / Complete* -> Dead(6)                       (transactional.id expiry)

A change is two-phase: ``prepare_*`` validates it, sets ``pending`` and
returns a ``TxnTransit`` (the full new state, which is what gets written to the
log); once the write succeeded ``complete(transit)`` installs it, else
``abort_pending()`` forgets it.  While ``pending`` is set no other change may
start (callers answer CONCURRENT_TRANSACTIONS).  PrepareEpochFence is never
written: it is only ever a pending state, immediately followed by a
PrepareAbort carrying the bumped epoch.

Transactions v2 (``client_tv`` 2, the transaction version the client's EndTxn v5 /
Produce v12 / TxnOffsetCommit v5 speak): PrepareCommit/PrepareAbort carry the epoch + 1
(the markers are written with it and the client is answered it), and when the current
epoch is exhausted a ``next_producer_id``, which Complete* installs at epoch 0;
PrepareAbort may also follow Empty/Complete* (an abort with nothing added).  v1
transitions keep the epoch.  Every completed transition overwrites the whole state
(producer ids, epochs, version), as Kafka 4's completeTransitionTo.
Single owner: only the coordinator, on the event loop, touches these objects.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.topic_partition import TopicPartition

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_EPOCH = 32767
TV_2 = 2        # the first transaction version that bumps the epoch (below it: alike)


class TxnState(enum.IntEnum):
    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def display_name(self) -> str:
        return _NAMES[self]

    @classmethod
    def from_name(cls, name: str) -> "TxnState | None":
        return _BY_NAME.get(name)


_NAMES = {TxnState.EMPTY: "Empty", TxnState.ONGOING: "Ongoing",
          TxnState.PREPARE_COMMIT: "PrepareCommit", TxnState.PREPARE_ABORT: "PrepareAbort",
          TxnState.COMPLETE_COMMIT: "CompleteCommit", TxnState.COMPLETE_ABORT: "CompleteAbort",
          TxnState.DEAD: "Dead", TxnState.PREPARE_EPOCH_FENCE: "PrepareEpochFence"}
_BY_NAME = {v: k for k, v in _NAMES.items()}

S = TxnState
VALID_PREVIOUS = {
    S.EMPTY: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.ONGOING: {S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.PREPARE_COMMIT: {S.ONGOING},
    # Empty / Complete* -> PrepareAbort: a v2 abort of a transaction that added nothing.
    S.PREPARE_ABORT: {S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT,
                      S.COMPLETE_ABORT},
    S.COMPLETE_COMMIT: {S.PREPARE_COMMIT},
    S.COMPLETE_ABORT: {S.PREPARE_ABORT},
    S.DEAD: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.PREPARE_EPOCH_FENCE: {S.ONGOING},
}


def is_epoch_exhausted(epoch: int) -> bool:
    """Kafka keeps Short.MaxValue for fencing: epoch >= 32766 needs a new producer id."""
    return epoch >= MAX_EPOCH - 1


class IllegalTransition(Exception):
    pass


@dataclass(frozen=True)
class TxnTransit:
    """The complete state a transition leads to (what is written to the log)."""
    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset
    start_ms: int
    last_update_ms: int
    next_producer_id: int = NO_PRODUCER_ID
    client_tv: int = 0


def supports_epoch_bump(client_tv: int) -> bool:
    return client_tv >= TV_2


class TransactionMetadata:
    def __init__(self, transactional_id: str, producer_id: int, producer_epoch: int,
                 timeout_ms: int, state: TxnState = TxnState.EMPTY,
                 partitions=(), start_ms: int = -1, last_update_ms: int = -1,
                 last_producer_id: int = NO_PRODUCER_ID,
                 last_producer_epoch: int = NO_PRODUCER_EPOCH,
                 next_producer_id: int = NO_PRODUCER_ID, client_tv: int = 0) -> None:
        self.transactional_id = transactional_id
        self.producer_id = producer_id
        self.last_producer_id = last_producer_id
        self.producer_epoch = producer_epoch
        self.last_producer_epoch = last_producer_epoch
        self.timeout_ms = timeout_ms
        self.state = TxnState(state)
        self.partitions: set[TopicPartition] = set(partitions)
        self.start_ms = start_ms
        self.last_update_ms = last_update_ms
        self.next_producer_id = next_producer_id
        self.client_tv = client_tv
        self.pending: TxnState | None = None
        self.failed_epoch_fence = False

    def __repr__(self) -> str:
        return (f"Txn({self.transactional_id!r}, pid={self.producer_id}, "
                f"epoch={self.producer_epoch}, tv={self.client_tv}, {self.state.display_name}, "
                f"pending={self.pending and self.pending.display_name}, "
                f"partitions={sorted(self.partitions)})")

    @property
    def pending_in_progress(self) -> bool:
        return self.pending is not None

    @property
    def has_pending_transaction(self) -> bool:
        return self.state in (S.ONGOING, S.PREPARE_ABORT, S.PREPARE_COMMIT)

    # -- preparing ------------------------------------------------------------------------
    def prepare_fence_producer_epoch(self) -> TxnTransit:
        if self.producer_epoch >= MAX_EPOCH:
            raise IllegalTransition("cannot fence a producer at epoch Short.MaxValue")
        bumped = self.producer_epoch if self.failed_epoch_fence else self.producer_epoch + 1
        return self._prepare(S.PREPARE_EPOCH_FENCE, self.producer_id, bumped, NO_PRODUCER_EPOCH,
                             self.timeout_ms, frozenset(self.partitions), self.start_ms,
                             self.last_update_ms, client_tv=self.client_tv)

    def prepare_increment_producer_epoch(self, timeout_ms: int, expected_epoch: int | None,
                                         now_ms: int) -> TxnTransit | int:
        """The transit, or an error code (PRODUCER_FENCED) for a stale expected epoch."""
        if is_epoch_exhausted(self.producer_epoch):
            raise IllegalTransition(f"epochs exhausted for producer id {self.producer_id}")
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epochs = (bumped, NO_PRODUCER_EPOCH)
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epochs = (bumped, self.producer_epoch)
        elif expected_epoch == self.last_producer_epoch:
            epochs = (self.producer_epoch, self.last_producer_epoch)
        else:
            return ErrorCode.PRODUCER_FENCED
        return self._prepare(S.EMPTY, self.producer_id, epochs[0], epochs[1], timeout_ms,
                             frozenset(), -1, now_ms)

    def prepare_producer_id_rotation(self, new_producer_id: int, timeout_ms: int, now_ms: int,
                                     record_last_epoch: bool) -> TxnTransit:
        if self.has_pending_transaction:
            raise IllegalTransition("cannot rotate producer ids while a transaction is pending")
        return self._prepare(S.EMPTY, new_producer_id, 0,
                             self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
                             timeout_ms, frozenset(), -1, now_ms)

    def prepare_add_partitions(self, added, now_ms: int, client_tv: int | None = None
                               ) -> TxnTransit:
        """``client_tv``: the version of the request adding them (None: unchanged)."""
        start = now_ms if self.state in (S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT) \
            else self.start_ms
        return self._prepare(S.ONGOING, self.producer_id, self.producer_epoch,
                             self.last_producer_epoch, self.timeout_ms,
                             frozenset(self.partitions) | frozenset(added), start, now_ms,
                             client_tv=self.client_tv if client_tv is None else client_tv)

    def prepare_abort_or_commit(self, new_state: TxnState, now_ms: int, client_tv: int = 0,
                                next_producer_id: int = NO_PRODUCER_ID,
                                no_partition_added: bool = False) -> TxnTransit:
        """v2 (``client_tv`` 2): the epoch + 1 (kept at Short.MaxValue for an abort of an
        epoch already there), the current epoch as the last one, ``next_producer_id`` when
        the epoch is exhausted; an abort with nothing added starts now."""
        if supports_epoch_bump(client_tv):
            stuck = self.producer_epoch == MAX_EPOCH and new_state == S.PREPARE_ABORT
            epochs = (self.producer_epoch if stuck else self.producer_epoch + 1,
                      self.producer_epoch)
        else:
            epochs = (self.producer_epoch, self.last_producer_epoch)
        return self._prepare(new_state, self.producer_id, epochs[0], epochs[1],
                             self.timeout_ms, frozenset(self.partitions),
                             now_ms if no_partition_added else self.start_ms, now_ms,
                             next_producer_id=next_producer_id, client_tv=client_tv)

    def prepare_complete(self, now_ms: int) -> TxnTransit:
        """Complete*; a v2 transaction that rolled its producer id moves to it at epoch 0."""
        new_state = S.COMPLETE_COMMIT if self.state == S.PREPARE_COMMIT else S.COMPLETE_ABORT
        self.failed_epoch_fence = False
        if supports_epoch_bump(self.client_tv) and self.next_producer_id != NO_PRODUCER_ID:
            producer_id, epoch = self.next_producer_id, 0
        else:
            producer_id, epoch = self.producer_id, self.producer_epoch
        return self._prepare(new_state, producer_id, epoch,
                             self.last_producer_epoch, self.timeout_ms, frozenset(),
                             self.start_ms, now_ms, client_tv=self.client_tv)

    def prepare_dead(self) -> TxnTransit:
        return self._prepare(S.DEAD, self.producer_id, self.producer_epoch,
                             self.last_producer_epoch, self.timeout_ms, frozenset(),
                             self.start_ms, self.last_update_ms, client_tv=self.client_tv)

    def _prepare(self, new_state: TxnState, producer_id: int, epoch: int, last_epoch: int,
                 timeout_ms: int, partitions: frozenset, start_ms: int,
                 now_ms: int, next_producer_id: int = NO_PRODUCER_ID,
                 client_tv: int | None = None) -> TxnTransit:
        if self.pending is not None:
            raise IllegalTransition(f"{self}: transition to {new_state.display_name} while "
                                    f"{self.pending.display_name} is pending")
        if producer_id < 0:
            raise IllegalTransition(f"illegal producer id {producer_id}")
        if new_state != S.DEAD and epoch < 0:
            raise IllegalTransition(f"illegal producer epoch {epoch}")
        if self.state not in VALID_PREVIOUS[new_state]:
            raise IllegalTransition(f"{self}: {new_state.display_name} cannot follow "
                                    f"{self.state.display_name}")
        self.pending = new_state
        return TxnTransit(producer_id, self.producer_id, epoch, last_epoch, timeout_ms,
                          new_state, partitions, start_ms, now_ms, next_producer_id,
                          self.client_tv if client_tv is None else client_tv)

    # -- completing ------------------------------------------------------------------------
    def abort_pending(self) -> None:
        self.pending = None

    def complete(self, t: TxnTransit) -> None:
        """Install a transition whose log write succeeded."""
        to = self.pending
        if to is None or to != t.state:
            raise IllegalTransition(f"{self}: completing {t.state.display_name} but pending is "
                                    f"{to and to.display_name}")
        if to == S.EMPTY:
            if t.partitions or t.start_ms != -1:
                raise IllegalTransition(f"{self}: bad Empty transit {t}")
            self.timeout_ms = t.timeout_ms
            self.producer_epoch = t.producer_epoch
            self.last_producer_epoch = t.last_producer_epoch
            self.producer_id = t.producer_id
            self.last_producer_id = t.last_producer_id
        elif to == S.ONGOING:
            if not self.partitions <= t.partitions or self.timeout_ms != t.timeout_ms:
                raise IllegalTransition(f"{self}: bad Ongoing transit {t}")
            self.start_ms = t.start_ms
            self.partitions |= t.partitions
        elif to in (S.PREPARE_ABORT, S.PREPARE_COMMIT):
            empty_abort = (to == S.PREPARE_ABORT and supports_epoch_bump(t.client_tv)
                           and self.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT))
            if self.partitions != t.partitions or (self.start_ms != t.start_ms
                                                   and not empty_abort):
                raise IllegalTransition(f"{self}: bad {to.display_name} transit {t}")
            self.start_ms = t.start_ms
        elif to in (S.COMPLETE_ABORT, S.COMPLETE_COMMIT):
            self.start_ms = t.start_ms
            self.partitions.clear()
        else:
            raise IllegalTransition(f"{self}: cannot complete a transition to "
                                    f"{to.display_name}")
        if to != S.EMPTY:
            self.producer_id = t.producer_id
            self.producer_epoch = t.producer_epoch
            self.last_producer_epoch = t.last_producer_epoch
            self.last_producer_id = t.last_producer_id
        self.next_producer_id = t.next_producer_id
        self.client_tv = t.client_tv
        self.last_update_ms = t.last_update_ms
        self.pending = None
        self.state = to
