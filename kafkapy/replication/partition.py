"""One partition replica on this broker: its log, leadership and idempotence checks.

The leader appends (the handler has already run Kafka's request-level record
checks): up-convert a magic 0/1 message set (Produce v0-2) to one v2 batch,
validate the batch header (CRC32C, size, offsets), walk its records in native
code (keys on a compacted topic, timestamps: Kafka's LogValidator) and, on a
CreateTime topic, write their largest timestamp into the header's maxTimestamp
as Kafka does (a header patch, when the producer's differs), check the producer's
sequence against the partition's producer state (a duplicate
is answered with the original offsets), then let the log assign offsets and
write.  Failed appends carry Kafka's log start offset: -1 for the errors Kafka
answers without looking at the log (corrupt, too large, storage), the log's
otherwise; only record-level errors carry a message to the client.  With a
sole in-sync replica the high watermark follows the log end offset; with more,
the followers' fetches move it (below).  A write that fails with an
OSError takes the log's dir offline (``storage_failed``) and is answered
KAFKA_STORAGE_ERROR; so is every later request to a partition whose log is
offline.

Replication (Kafka 3.9's ZK-mode Partition):
- ``make_leader``: a new leader epoch starts at the log end in the leader-epoch
  cache; a broker that was not the leader forgets what it knew of the followers
  (their log end offsets are unknown until they fetch), a re-elected one keeps it.
- ``update_follower_fetch`` (the leader, on each follower fetch): the follower's
  log end offset is its fetch offset, its last caught-up time follows Kafka's
  Replica.updateFetchStateOrThrow (caught up to the leader's log end now, or to the
  leader's log end at its previous fetch); a follower outside the ISR that is in sync
  (Kafka's isFollowerInSync: at or past the high watermark and the current leader
  epoch's start offset, and alive in the metadata cache) is proposed for the ISR.
- the high watermark (Kafka's maybeIncrementLeaderHW) is the smallest log end
  offset over the *maximal* ISR (the committed ISR plus a member whose expansion is
  in flight) and over caught-up eligible followers about to join; it never moves
  back, stays put while a member's log end is unknown, and does not move while the
  ISR is below the effective min.insync.replicas (Kafka 3.9, KIP-966).
- ``maybe_shrink_isr`` (every replica.lag.time.max.ms / 2): ISR followers not caught
  up for longer than replica.lag.time.max.ms are proposed out of the ISR.
- ISR changes are Kafka's PendingExpandIsr / PendingShrinkIsr: at most one in
  flight (``isr_inflight``), sent by the AlterPartitionManager (``isr_manager``) to
  the controller; ``state.isr`` stays the committed ISR until the controller's
  answer (new ISR and partition epoch = ``state.zk_version``) is applied; a
  LeaderAndIsr meanwhile replaces the pending change (its answer is then ignored).
- ``make_follower``: tells whether the fetcher must (re)start (a new leader or
  epoch) and truncates nothing: the fetcher truncates by leader epoch (Kafka 3.9,
  ``kafkapy.replication.truncation``); ``append_as_follower`` writes the leader's
  batches as they are (offsets, epochs, timestamps byte for byte), and
  ``update_follower_high_watermark`` takes the leader's high watermark (bounded by
  the local log end) and log start offset.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

import structlog

from kafkapy.metrics import counters as metrics
from kafkapy.metadata.cache import PartitionState
from kafkapy.native import CREATE_TIME, LONG_MAX
from kafkapy.protocol.errors import ErrorCode, KafkaError, error_name
from kafkapy.purgatory.delayed_fetch import LogOffsetMetadata
from kafkapy.records.batch import (TIMESTAMP_CREATE_TIME, RecordError, is_crc_valid,
                                   iter_headers, read_header, set_max_timestamp,
                                   validate_batches)
from kafkapy.records.legacy import first_magic, up_convert
from kafkapy.records.validation import check_records
from kafkapy.replication import truncation

_log = structlog.get_logger("kafkapy.replication")
_UNKNOWN = -1

# Kafka's ReplicaManager answers these with no log start offset (-1).
_NO_LOG_START = frozenset({ErrorCode.CORRUPT_MESSAGE, ErrorCode.MESSAGE_TOO_LARGE,
                           ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.KAFKA_STORAGE_ERROR,
                           ErrorCode.NOT_LEADER_OR_FOLLOWER,
                           ErrorCode.UNKNOWN_TOPIC_OR_PARTITION})


def min_insync_replicas(partition) -> int:
    """The topic's min.insync.replicas (its override, else the broker default)."""
    return int(partition.log.config.values.get("min.insync.replicas", 1))


def effective_min_isr(partition) -> int:
    """Kafka's effectiveMinIsr: min(min.insync.replicas, replication factor); what acks=all
    appends are checked against (``kafkapy.replication.acks``)."""
    return min(min_insync_replicas(partition), max(len(partition.state.replicas), 1))


@dataclass(slots=True)
class AppendResult:
    error_code: int = 0
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    last_offset: int = -1
    # (batch index, message) per refused record; Kafka then sends error_message too.
    record_errors: list = field(default_factory=list)
    # Whether Kafka sends error_message to the client (record errors, txn verification).
    message_is_public: bool = False


@dataclass(slots=True)
class FollowerState:
    """What the leader knows of one follower (Kafka's ReplicaState)."""

    log_end_offset: int = _UNKNOWN
    log_start_offset: int = _UNKNOWN
    last_fetch_ms: int = 0
    last_caught_up_ms: int = 0
    broker_epoch: int = -1   # the follower's, from its fetch (KIP-903 ISR checks, later)
    # The leader's log end offset when the previous fetch came (Kafka's
    # lastFetchLeaderLogEndOffset): reaching it proves the follower was caught up then.
    last_fetch_leader_leo: int = _UNKNOWN

    def update_fetch_state(self, fetch_offset: int, log_start_offset: int, broker_epoch: int,
                           leader_end_offset: int, now_ms: int) -> None:
        """Kafka's ReplicaState.updateFetchStateOrThrow: a fetch from ``fetch_offset`` (its
        log end) at ``now_ms``, when the leader's log ends at ``leader_end_offset``."""
        if fetch_offset >= leader_end_offset:
            self.last_caught_up_ms = max(self.last_caught_up_ms, now_ms)
        elif fetch_offset >= self.last_fetch_leader_leo:
            self.last_caught_up_ms = max(self.last_caught_up_ms, self.last_fetch_ms)
        self.log_end_offset = fetch_offset
        self.log_start_offset = log_start_offset
        self.broker_epoch = broker_epoch
        self.last_fetch_ms = now_ms
        self.last_fetch_leader_leo = max(leader_end_offset, self.last_fetch_leader_leo)

    def is_caught_up(self, leader_end_offset: int, now_ms: int, max_lag_ms: int) -> bool:
        """Kafka's ReplicaState.isCaughtUp."""
        return (self.log_end_offset == leader_end_offset
                or now_ms - self.last_caught_up_ms <= max_lag_ms)


#: Kafka's replica.lag.time.max.ms default, used when no ISR manager is attached.
DEFAULT_LAG_TIME_MAX_MS = 30000
EXPAND = "expand"
SHRINK = "shrink"


@dataclass(eq=False, slots=True)
class PendingIsrChange:
    """Kafka's PendingExpandIsr / PendingShrinkIsr: the ISR sent to the controller
    (``new_isr``) at (``leader_epoch``, ``partition_epoch``), the replicas it adds or
    removes, and the committed ISR it came from.  Compared by identity: an answer
    applies only while this very change is the partition's pending one."""
    kind: str
    replica_ids: frozenset
    new_isr: list
    leader_epoch: int
    partition_epoch: int
    committed_isr: list
    leader_recovery_state: int = 0

    @property
    def maximal_isr(self) -> list:
        """The expanded ISR counts at once (a failed expansion only held the HW back
        longer); a shrink counts only once committed."""
        if self.kind == EXPAND:
            return self.committed_isr + [r for r in self.replica_ids
                                         if r not in self.committed_isr]
        return self.committed_isr


class Partition:
    #: Test hook (``truncation``): True restores pre-KIP-101 truncation to the HW.
    truncate_to_hw = False

    def __init__(self, topic: str, index: int, log, state: PartitionState, node_id: int,
                 storage_failed: Callable[[OSError], None] = lambda err: None,
                 isr_manager=None) -> None:
        self.topic = topic
        self.index = index
        self.log = log
        self.node_id = node_id
        self.state = state
        # Takes the log's dir offline (LogManager.fail_dir): after a failed write the
        # file's tail is unknown, so nothing more may be appended to it.
        self._storage_failed = storage_failed
        # The leader's view of each other assigned replica (empty on a follower).
        self.followers: dict[int, FollowerState] = {}
        # "leader" / "follower" once make_leader / make_follower ran (None: not yet).
        self._role: str | None = None
        # The AlterPartitionManager (submit, replica_lag_time_max_ms, is_replica_eligible);
        # None: the ISR never changes from here (a single broker without one, unit tests).
        self.isr_manager = isr_manager
        # The ISR change sent to the controller and not yet answered (Kafka's Pending*Isr).
        self.pending_isr: PendingIsrChange | None = None
        # Log end offset when this broker's current leader epoch began (Kafka's
        # leaderEpochStartOffsetOpt): a follower joins the ISR only once it reached it.
        self._leader_epoch_start_offset: int | None = (
            log.log_end_offset if state.leader == node_id else None)
        if self.is_leader:
            self._track_followers(new_leader=True, now_ms=log.clock.time_ms())

    @property
    def is_leader(self) -> bool:
        return self.state.leader == self.node_id

    @property
    def leader_epoch(self) -> int:
        return self.state.leader_epoch

    @property
    def partition_epoch(self) -> int:
        """The zk version of the state znode the current state came from."""
        return self.state.zk_version

    # -- ISR views (what acks=all, metrics and Metadata read) -------------------------------
    @property
    def isr_inflight(self) -> bool:
        return self.pending_isr is not None

    @property
    def maximal_isr(self) -> list[int]:
        """Kafka's partitionState.maximalIsr: the committed ISR plus a member whose
        expansion is in flight (acks=all and the high watermark wait for it too)."""
        pending = self.pending_isr
        return list(self.state.isr) if pending is None else pending.maximal_isr

    @property
    def in_sync_count(self) -> int:
        """Size of the committed ISR (Kafka's appendRecordsToLeader checks min ISR on it)."""
        return len(self.state.isr)

    @property
    def effective_min_isr(self) -> int:
        """min.insync.replicas, at most the replication factor (Kafka's effectiveMinIsr)."""
        return effective_min_isr(self)

    @property
    def is_under_min_isr(self) -> bool:
        return self.is_leader and len(self.state.isr) < self.effective_min_isr

    @property
    def is_under_replicated(self) -> bool:
        """Kafka's isUnderReplicated: the leader sees fewer in-sync replicas than assigned."""
        return self.is_leader and len(self.state.replicas) - len(self.state.isr) > 0

    @property
    def replica_lag_time_max_ms(self) -> int:
        manager = self.isr_manager
        return DEFAULT_LAG_TIME_MAX_MS if manager is None else manager.replica_lag_time_max_ms

    def _is_replica_isr_eligible(self, replica_id: int) -> bool:
        """ZK mode: the broker is alive in the metadata cache (the controller refuses
        brokers shutting down)."""
        manager = self.isr_manager
        return True if manager is None else manager.is_replica_eligible(replica_id)

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def last_stable_offset(self) -> int:
        """The high watermark, or the first offset of the earliest open transaction if lower."""
        hw = self.log.high_watermark
        unstable = self.log.first_unstable_offset()
        return hw if unstable is None else min(hw, unstable)

    def append_as_leader(self, records: bytes, produce_version: int) -> AppendResult:
        """Validate one partition's Produce data and append it (a duplicate answers with
        its first offsets; Produce v0-2 data without a whole batch appends nothing)."""
        log = self.log
        try:
            records, header = self._validated(records, produce_version)
            if header is None:
                return AppendResult(0, log_start_offset=log.log_start_offset)
            self._check_online()
            info = log.append_as_leader(records, header, self.leader_epoch)
        except RecordError as err:
            start = -1 if err.code in _NO_LOG_START else log.log_start_offset
            return AppendResult(err.code, log_start_offset=start, error_message=err.message,
                                record_errors=err.record_errors,
                                message_is_public=bool(err.record_errors))
        except KafkaError as err:
            return AppendResult(err.code, error_message=err.message)
        except OSError as err:
            return self._failed_append(err)
        # Kafka's BrokerTopicMetrics count every successful append (a duplicate too)
        metrics.appended(self.topic, header.records_count, len(records))
        return self._appended(info)

    def _validated(self, records, produce_version: int):
        """(records, header) ready for the log; header None when there is nothing to append."""
        config = self.log.config
        compacted = "compact" in config.cleanup_policy
        mv = memoryview(records)
        if produce_version < 3 and first_magic(mv) in (0, 1):
            # Kafka checks a converted message set's records (timestamps too) as it converts.
            records = up_convert(mv, config.max_message_bytes,
                                 config.values.get("compression.type", "producer"), compacted,
                                 f"{self.topic}-{self.index}", **self._timestamp_rules())
            header = validate_batches(memoryview(records), config.max_message_bytes)[0]
            return records, header
        headers = validate_batches(mv, config.max_message_bytes)
        if not headers:
            return records, None
        header = headers[0]
        verdict = check_records(mv[header.position:header.position + header.size],
                                f"{self.topic}-{self.index}", compacted=compacted,
                                **self._timestamp_rules())
        if not config.log_append_time:  # LogAppendTime: the log sets it to now
            records = set_max_timestamp(records, header, TIMESTAMP_CREATE_TIME,
                                        verdict.max_timestamp)
        return records, header

    def _timestamp_rules(self) -> dict:
        """The clock and the topic's message.timestamp.* settings, for the record checks."""
        values = self.log.config.values
        return {"now_ms": self.log.clock.time_ms(),
                "timestamp_type": values.get("message.timestamp.type", CREATE_TIME),
                "before_max_ms": int(values.get("message.timestamp.before.max.ms", LONG_MAX)),
                "after_max_ms": int(values.get("message.timestamp.after.max.ms", LONG_MAX))}

    def has_ongoing_transaction(self, producer_id: int, epoch: int | None = None) -> bool:
        """Whether ``producer_id`` has an open transaction here (Kafka skips verification);
        with ``epoch``, one of that epoch (transactions v2 bump it at every transaction)."""
        entry = self.log.producer_state.last_entry(producer_id)
        return (entry is not None and entry.current_txn_first_offset >= 0
                and (epoch is None or entry.epoch == epoch))

    def append_internal(self, records: bytes) -> AppendResult:
        """Append one batch the broker built itself (coordinator records): no client checks,
        but the topic's max.message.bytes holds (Kafka's append checks it for every origin),
        so a group with megabytes of member metadata is refused, not persisted."""
        log = self.log
        if len(records) > log.config.max_message_bytes:
            return AppendResult(ErrorCode.MESSAGE_TOO_LARGE,
                                error_message=f"The batch of {len(records)} bytes is larger than "
                                              f"max.message.bytes {log.config.max_message_bytes}")
        try:
            self.check_leader()
            header = read_header(records)
            info = log.append_as_leader(bytearray(records), header, self.leader_epoch)
        except KafkaError as err:
            return AppendResult(err.code, error_message=err.message)
        except OSError as err:
            return self._failed_append(err)
        metrics.appended(self.topic, header.records_count, len(records))
        return self._appended(info)

    def _failed_append(self, err: OSError) -> AppendResult:
        self._storage_failed(err)
        return AppendResult(ErrorCode.KAFKA_STORAGE_ERROR,
                            error_message=f"Error while appending records to {self.topic}-{self.index} "
                                          f"in dir {self.log.dir}: {err}")

    def _check_online(self) -> None:
        if self.log.offline:
            raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR,
                             f"the log dir of {self.topic}-{self.index} is offline")

    def swap_in_future_log(self, future_log) -> None:
        """Serve from ``future_log`` from now on: the copy in another log dir that
        ``LogManager.replace_current_with_future`` made current (a move between log
        dirs).  It holds the same records, so leadership, followers and the ISR stay."""
        self.log = future_log

    # -- leadership -----------------------------------------------------------------------
    def make_leader(self, state: PartitionState, now_ms: int | None = None) -> bool:
        """Become (or stay) the leader as ``state`` says; True if this broker was not the
        leader before.  Kafka's Partition.makeLeader: a new leader epoch starts at the log
        end; a new leader forgets the followers' log ends; a pending ISR change is
        superseded (its answer will be ignored); the high watermark stays, or moves up
        when the ISR is down to this broker."""
        now = self.log.clock.time_ms() if now_ms is None else now_ms
        was_leader = self._role == "leader"
        new_epoch = state.leader_epoch > self.state.leader_epoch or not was_leader
        self._role = "leader"
        self.state = replace(state, isr=list(state.isr), replicas=list(state.replicas))
        self.pending_isr = None
        log = self.log
        cache = log.leader_epoch_cache
        if not log.offline and (cache.latest_epoch is None
                                or state.leader_epoch > cache.latest_epoch):
            # OffsetForLeaderEpoch / diverging-epoch answers can place the new epoch
            # before anything is appended in it.
            cache.assign(state.leader_epoch, log.log_end_offset)
        if new_epoch or self._leader_epoch_start_offset is None:
            self._leader_epoch_start_offset = log.log_end_offset
        self._track_followers(new_leader=not was_leader, now_ms=now, reset=new_epoch)
        self._maybe_increment_high_watermark(now)
        return not was_leader

    def make_follower(self, state: PartitionState) -> bool:
        """Follow ``state.leader``; True when the fetcher must (re)start from the log end
        (a new leader or leader epoch).  Nothing is truncated here: as Kafka 3.9, the
        fetcher truncates on the leader's diverging-epoch answer (``truncation``); the
        ``truncate_to_hw`` test hook restores pre-KIP-101 truncation to the HW."""
        changed = (self._role != "follower" or state.leader != self.state.leader
                   or state.leader_epoch > self.leader_epoch)
        self._role = "follower"
        self.state = state
        self.followers.clear()
        self.pending_isr = None
        self._leader_epoch_start_offset = None
        # Only when the fetcher restarts: a running one fetches from the log end it knows.
        if changed:
            truncation.on_become_follower(self)
        return changed

    def _track_followers(self, new_leader: bool, now_ms: int, reset: bool = True) -> None:
        """Kafka's resetReplicaState over the assigned replicas other than this one: an
        ISR member counts as caught up now, any other as never (so it neither holds
        the high watermark back nor rejoins before it fetches)."""
        isr = set(self.state.isr)
        leader_end = self.log.log_end_offset
        tracked: dict[int, FollowerState] = {}
        for replica in self.state.replicas:
            if replica == self.node_id:
                continue
            old = None if new_leader else self.followers.get(replica)
            caught_up = now_ms if replica in isr else 0
            if old is None:
                tracked[replica] = FollowerState(last_caught_up_ms=caught_up)
            elif reset:
                tracked[replica] = FollowerState(old.log_end_offset, old.log_start_offset,
                                                 caught_up, caught_up, old.broker_epoch,
                                                 leader_end)
            else:
                tracked[replica] = old
        self.followers = tracked

    # -- the leader's side of follower fetches ----------------------------------------------
    def update_follower_fetch(self, replica_id: int, fetch_offset: int, now_ms: int,
                              log_start_offset: int = _UNKNOWN, broker_epoch: int = -1) -> bool:
        """A follower fetched from ``fetch_offset``: that is its log end (Kafka's
        updateFollowerFetchState).  It may join the ISR; returns whether the high
        watermark moved (the caller then wakes delayed produces and fetches)."""
        follower = self.followers.get(replica_id)
        if follower is None or not self.is_leader:
            return False
        previous = follower.log_end_offset
        follower.update_fetch_state(fetch_offset, log_start_offset, broker_epoch,
                                    self.log.log_end_offset, now_ms)
        self._maybe_expand_isr(replica_id, follower)
        if previous == fetch_offset:
            return False
        return self._maybe_increment_high_watermark(now_ms)

    def still_at_end(self, req, high_watermark: int, log_start_offset: int) -> bool:
        """Whether a follower's fetch (``req``: a PartitionRequest) would read nothing new
        since it was last answered, as ``high_watermark`` and ``log_start_offset``: this
        replica leads, online, at the epoch the fetch knows, and the fetch offset is the
        log end (nothing to send, and no divergence: neither the log end nor the epoch
        moved since that request was read).  Then the fetch session leaves it out of the
        answer (what a wait's last read needs)."""
        log = self.log
        state = self.state
        return (req.fetch_offset == log.log_end_offset and high_watermark == log.high_watermark
                and log_start_offset == log.log_start_offset and not log.offline
                and state.leader == self.node_id
                and req.current_leader_epoch == state.leader_epoch)

    def follower_still_at_end(self, replica_id: int, broker_epoch: int, req,
                              high_watermark: int, log_start_offset: int, now_ms: int) -> bool:
        """still_at_end, and the follower, in the ISR, already reported this log end, with
        the same log start and broker epoch.  Then update_follower_fetch would only move
        its fetch and caught-up times (no ISR expansion to try, no high watermark to
        move): its fetch is recorded here, at ``now_ms``."""
        if not self.still_at_end(req, high_watermark, log_start_offset):
            return False
        fetch_offset = req.fetch_offset
        follower = self.followers.get(replica_id)
        if (follower is None or follower.log_end_offset != fetch_offset
                or follower.log_start_offset != req.log_start_offset
                or follower.broker_epoch != broker_epoch or replica_id not in self.state.isr):
            return False
        follower.update_fetch_state(fetch_offset, req.log_start_offset, broker_epoch,
                                    fetch_offset, now_ms)
        return True

    def _maybe_increment_high_watermark(self, now_ms: int | None = None) -> bool:
        """Kafka's maybeIncrementLeaderHW: the smallest log end offset over the maximal
        ISR and over followers caught up and eligible to join it; it only grows, stays
        put while a member's log end is unknown, and while the ISR is under min ISR."""
        if not self.is_leader or self.log.offline:
            return False
        log = self.log
        if not self.followers:      # a single replica (the hot path of a lone broker)
            if log.log_end_offset > log.high_watermark:
                log.high_watermark = log.log_end_offset
                return True
            return False
        log = self.log
        now = log.clock.time_ms() if now_ms is None else now_ms
        leader_end = log.log_end_offset
        lag = self.replica_lag_time_max_ms
        maximal = set(self.maximal_isr)
        candidate = leader_end
        for replica, follower in self.followers.items():
            leo = follower.log_end_offset
            if leo >= candidate:
                continue
            if replica in maximal or (follower.is_caught_up(leader_end, now, lag)
                                      and self._is_replica_isr_eligible(replica)):
                candidate = leo
        for replica in maximal:     # an ISR member this leader does not track holds it
            if replica != self.node_id and replica not in self.followers:
                candidate = min(candidate, _UNKNOWN)
        if candidate > log.high_watermark and not self.is_under_min_isr:
            log.high_watermark = candidate
            return True
        return False

    # -- ISR changes (Kafka's maybeExpandIsr / maybeShrinkIsr / submitAlterPartition) ---------
    def _is_follower_in_sync(self, follower: FollowerState) -> bool:
        """Kafka's isFollowerInSync: at or past the HW and this leader epoch's start."""
        start = self._leader_epoch_start_offset
        return (start is not None and follower.log_end_offset >= self.log.high_watermark
                and follower.log_end_offset >= start)

    def _maybe_expand_isr(self, replica_id: int, follower: FollowerState) -> None:
        if (self.isr_manager is None or self.pending_isr is not None
                or replica_id in self.state.isr or self.log.offline
                or not self._is_replica_isr_eligible(replica_id)
                or not self._is_follower_in_sync(follower)):
            return
        committed = list(self.state.isr)
        # Kafka 3.9 logs the proposal at debug only ("Submitting ISR state change").
        _log.debug(f"Expanding ISR from {_ids(committed)} to {_ids(committed + [replica_id])}",
                   partition=f"{self.topic}-{self.index}")
        self._submit(PendingIsrChange(EXPAND, frozenset([replica_id]), committed + [replica_id],
                                      self.leader_epoch, self.partition_epoch, committed))

    def out_of_sync_replicas(self, now_ms: int) -> list[int]:
        """Kafka's getOutOfSyncReplicas: ISR followers not caught up within the lag."""
        if not self.is_leader or self.pending_isr is not None:
            return []
        leader_end = self.log.log_end_offset
        lag = self.replica_lag_time_max_ms
        out = []
        for replica in self.state.isr:
            if replica == self.node_id:
                continue
            follower = self.followers.get(replica)
            if follower is None or not follower.is_caught_up(leader_end, now_ms, lag):
                out.append(replica)
        return out

    def maybe_shrink_isr(self, now_ms: int | None = None) -> bool:
        """Propose the ISR without the followers out of sync; True when one was sent."""
        if self.isr_manager is None or self.log.offline:
            return False
        now = self.log.clock.time_ms() if now_ms is None else now_ms
        out = self.out_of_sync_replicas(now)
        if not out:
            return False
        committed = list(self.state.isr)
        new_isr = [r for r in committed if r not in out]
        lagging = " ".join(
            f"(brokerId: {r}, endOffset: "
            f"{self.followers[r].log_end_offset if r in self.followers else 'unknown'})"
            for r in out)
        _log.info(f"Shrinking ISR from {_ids(committed)} to {_ids(new_isr)}. Leader: "
                  f"(highWatermark: {self.log.high_watermark}, endOffset: "
                  f"{self.log.log_end_offset}). Out of sync replicas: {lagging}.",
                  partition=f"{self.topic}-{self.index}")
        self._submit(PendingIsrChange(SHRINK, frozenset(out), new_isr, self.leader_epoch,
                                      self.partition_epoch, committed))
        return True

    def _submit(self, pending: PendingIsrChange) -> None:
        self.pending_isr = pending
        if not self.isr_manager.submit(self, pending):
            # Kafka's OperationNotAttemptedException: another change for this partition
            # is still queued; back to the committed state.
            self.pending_isr = None

    def alter_partition_answered(self, pending: PendingIsrChange, error_code: int,
                                 leader_epoch: int = -1, isr=None,
                                 partition_epoch: int = -1) -> tuple[bool, bool]:
        """The controller's answer to ``pending`` (Kafka's submitAlterPartition completion):
        returns (high watermark moved, resubmit).  Ignored when the partition moved on
        (a LeaderAndIsr replaced the pending change)."""
        if self.pending_isr is not pending:
            _log.debug("ignoring an answer to a superseded ISR change",
                       partition=f"{self.topic}-{self.index}", error_code=error_code)
            return False, False
        if error_code != ErrorCode.NO_ERROR:
            return False, self._alter_partition_failed(pending, error_code)
        if leader_epoch != self.leader_epoch or partition_epoch < self.partition_epoch:
            # Stays pending until a LeaderAndIsr brings the controller's state.
            metrics.BROKER.failed_isr_updates += 1
            _log.debug("ignoring an ISR answer from a stale epoch",
                       partition=f"{self.topic}-{self.index}", leader_epoch=leader_epoch,
                       partition_epoch=partition_epoch)
            return False, False
        self.state = replace(self.state, isr=list(isr), zk_version=partition_epoch)
        self.pending_isr = None
        if pending.kind == EXPAND:
            metrics.BROKER.isr_expands += 1
        else:
            metrics.BROKER.isr_shrinks += 1
        _log.info(f"ISR updated to {_ids(self.state.isr)}"
                  f"{' (under-min-isr)' if self.is_under_min_isr else ''} and version "
                  f"updated to {partition_epoch}", partition=f"{self.topic}-{self.index}")
        return self._maybe_increment_high_watermark(), False

    def _alter_partition_failed(self, pending: PendingIsrChange, error_code: int) -> bool:
        """Kafka's handleAlterPartitionError; True when the change is to be sent again."""
        metrics.BROKER.failed_isr_updates += 1
        name = error_name(error_code)
        where = f"{self.topic}-{self.index}"
        if error_code in (ErrorCode.OPERATION_NOT_ATTEMPTED, ErrorCode.INELIGIBLE_REPLICA):
            # The controller says the request was not applied at this partition epoch.
            self.pending_isr = None
            _log.info(f"Failed to alter partition since the controller rejected the request "
                      f"with {name}. Partition state has been reset to the latest committed "
                      f"state.", partition=where, isr=list(self.state.isr))
            return False
        if error_code in _AWAIT_METADATA:
            # The controller's newer state (a LeaderAndIsr) is on its way.
            _log.debug(f"Failed to alter partition with {name}; awaiting new metadata",
                       partition=where)
            return False
        _log.warning(f"Failed to update ISR due to unexpected {name}. Retrying.",
                     partition=where)
        return True

    # -- the follower's side ------------------------------------------------------------
    def append_as_follower(self, records) -> int:
        """Append the leader's batches as they are; returns the new log end offset.

        Whole batches only (a fetch answer may end with a partial one, dropped as Kafka
        drops it); batches wholly below the log end are skipped; a batch that fails its
        CRC raises CORRUPT_MESSAGE before anything after it is written.  The producer
        state and the leader-epoch cache learn from the batches (Log.append_as_follower).
        """
        log = self.log
        mv = memoryview(records)
        appended = 0
        try:
            for header in iter_headers(mv):
                if header.last_offset < log.log_end_offset:
                    continue
                if header.magic != 2 or not is_crc_valid(mv, header):
                    raise RecordError(ErrorCode.CORRUPT_MESSAGE,
                                      f"Record batch at offset {header.base_offset} from the "
                                      f"leader of {self.topic}-{self.index} is corrupt")
                self._check_online()
                log.append_as_follower(mv, header)
                appended += header.size
        except OSError as err:
            self._storage_failed(err)
            raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, str(err)) from None
        if appended:
            metrics.BROKER.replication_bytes_in += appended
            if log.log_end_offset - log.recovery_point >= log.config.flush_messages:
                log.flush()
        return log.log_end_offset

    def update_follower_high_watermark(self, leader_high_watermark: int,
                                       leader_log_start_offset: int = _UNKNOWN) -> int:
        """Follower HW = min(own log end, the leader's HW); the log start follows the
        leader's when that is within what this log holds below its HW."""
        log = self.log
        log.high_watermark = min(log.log_end_offset, leader_high_watermark)
        if log.log_start_offset < leader_log_start_offset <= log.high_watermark:
            log.maybe_increment_log_start_offset(leader_log_start_offset)
        return log.high_watermark

    def _appended(self, info) -> AppendResult:
        """A sole in-sync replica's high watermark follows its log end at once (Kafka's
        appendRecordsToLeader ends with maybeIncrementLeaderHW)."""
        self._maybe_increment_high_watermark()
        return AppendResult(0, info.first_offset, info.log_append_time_ms,
                            info.log_start_offset, last_offset=info.last_offset)

    def offset_metadata(self, offset: int) -> LogOffsetMetadata:
        """Segment and byte position of ``offset`` (the batch holding it, or the log end)."""
        log = self.log
        if offset >= log.log_end_offset:
            active = log.segments[-1]
            return LogOffsetMetadata(log.log_end_offset, active.base_offset, active.size)
        segment = log.segments[log.segment_for(offset)]
        found = segment.find_offset_position(offset)
        position = found.position if found is not None else segment.size
        return LogOffsetMetadata(offset, segment.base_offset, position)

    def check_leader(self, current_leader_epoch: int = -1) -> None:
        """Raise unless this replica leads, at the epoch the client knows (if it says)."""
        if not self.is_leader:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        self._check_online()
        if current_leader_epoch >= 0:
            if current_leader_epoch < self.leader_epoch:
                raise KafkaError(ErrorCode.FENCED_LEADER_EPOCH)
            if current_leader_epoch > self.leader_epoch:
                raise KafkaError(ErrorCode.UNKNOWN_LEADER_EPOCH)


# Kafka's handleAlterPartitionError: errors after which a LeaderAndIsr / UpdateMetadata
# brings the controller's state; the change stays pending until then.
_AWAIT_METADATA = frozenset({
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID,
    ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.INVALID_UPDATE_VERSION,
    ErrorCode.INVALID_REQUEST, ErrorCode.NEW_LEADER_ELECTED})


def _ids(replicas) -> str:
    return ",".join(str(r) for r in replicas)
