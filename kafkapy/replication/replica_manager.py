"""The replica manager: this broker's partitions, appends and reads.

It hosts the partitions the controller assigns through LeaderAndIsr
(``become_leader_or_follower``: create the log with its topic id, become leader or
follower) and StopReplica (``stop_replicas``: stop following, delete the log), as
Kafka 3.9's ReplicaManager, and it is the one door to the logs for clients:

- ``append_records`` (Kafka's appendRecords): a Produce request's partitions that
  passed the request checks (KafkaApis': garbage, transactional id, authorization,
  unknown topic, acks) are verified against their transaction
  (``txn_verification``), refused on an internal topic unless the request may write
  there, on a replica that is not the leader (NOT_LEADER_OR_FOLLOWER), with acks=-1 on
  an ISR below min.insync.replicas (``acks``), then appended by their Partition (which
  validates); with acks=-1 the answer waits in the produce purgatory until the high
  watermark covers every append (``acks.wait_for_replication``).
- ``fetch_messages`` (Kafka's fetchMessages / readFromLog): per partition the leader
  (or, for a consumer's Fetch v11+, any replica) at the epoch the fetcher knows, the
  follower's membership, its last fetched epoch (diverging logs), the read up to the
  log end (followers), high watermark or last stable offset (``Log.read_for_fetch``:
  file slices for sendfile, aborted transactions for read_committed), the size limits
  and the leader's replication throttle; a follower's fetch offsets move the high
  watermark; less than ``min_bytes`` waits in the fetch purgatory for at most
  ``max_wait_ms``: a consumer's as a DelayedFetch, which reads again when it completes, a
  follower's as a DelayedFollowerFetch, whose every try is a read and whose completing
  read is the answer.
- ``await_replication``: the acks=-1 wait for appends made elsewhere (WriteTxnMarkers,
  the coordinators' writes).

Both answer through a ``respond`` callback, at once (its value) or, when they wait, in
a future of its value (a fetch and a client's acks=-1 produce: a ``LateAnswer``, given
inside the append or the follower fetch that ends the wait).  Appends (and leadership changes) wake the operations parked on a partition
through ``on_append`` listeners (the purgatories).  A high watermark that moves wakes the
listeners too, but not the followers' parked fetches: a follower reads to the log end,
so only a change of the log (or of the partition) can end its wait.  Those fetches are
watched on their own key (``replica_fetch_key``) for that reason.

``leader_quota`` is the leader-side replication throttle (``replication.quota``),
applied to follower fetches.

Becoming leader of many partitions: the logs are created and the partitions made
leaders in one pass; the new epochs' leader-epoch-checkpoint files are written by one
background task after the pass (``leader_epoch.write_behind``), not one file per
partition on the event loop.

Invariants: a partition's leader epoch only grows (an older LeaderAndIsr is refused
per partition); a follower has a fetcher (``fetchers``, the ReplicaFetcherManager)
exactly while it follows a live leader; a partition whose log dir is offline is
answered KAFKA_STORAGE_ERROR and never changed.
"""
from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import structlog

from kafkapy.api.late_answer import LateAnswer
from kafkapy.log.leader_epoch import write_behind
from kafkapy.metadata.cache import PartitionState
from kafkapy.metadata.topics import (invalid_topic_reason, is_internal, parse_topic_id,
                                     topic_id_text)
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.protocol.topic_partition import TopicPartition
from kafkapy.purgatory.delayed_fetch import (DelayedFetch, DelayedFollowerFetch,
                                            FetchPartitionStatus)
from kafkapy.records.batch import MAGIC_OFFSET, read_header
from kafkapy.replication import acks, stage_trace, txn_verification
from kafkapy.replication.partition import AppendResult, Partition
from kafkapy.replication.quota import LEADER, ReplicationQuota

_log = structlog.get_logger("kafkapy.replication")

#: StopReplica leader epochs that skip the epoch check (LeaderAndIsr.EpochDuringDelete, NoEpoch).
EPOCH_DURING_DELETE = -2
NO_EPOCH = -1

#: Kafka's AppendOrigin: a client's records (validated) or the broker's own (coordinators).
CLIENT = "client"
COORDINATOR = "coordinator"

READ_COMMITTED = 1          # Fetch isolation_level
_HARD_LIMIT_BELOW = 3       # Fetch v0-2: max bytes are hard limits (no KIP-74 first batch)
_FETCH_FROM_FOLLOWER_FROM = 11  # a consumer's Fetch v11+ may read a follower (KIP-392)
_VERIFICATION_KEY = "transaction.partition.verification.enable"
_BATCH_HEADER_SIZE = 61


@dataclass(slots=True)
class FetchParams:
    """Kafka's FetchParams: who reads and how much, for one Fetch request.  The handler
    capped the sizes as KafkaApis does (``max_bytes`` by fetch.max.bytes, ``min_bytes``
    by ``max_bytes``)."""
    version: int
    replica_id: int         # the fetching broker's id, -1 for a consumer
    replica_epoch: int      # that broker's epoch (Fetch v15+ replica_state), else -1
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    isolation_level: int    # READ_COMMITTED: up to the LSO (a follower reads to the log end)


@dataclass(slots=True)
class LogReadResult:
    """One partition's read (or why it was not read), as ``fetch_messages`` answers it.

    ``tip`` and ``request`` are the fetch session's TopicIdPartition and
    PartitionRequest; ``found`` the file slices read (``kafkapy.log.segment.FetchSlice``,
    ``size`` their bytes); ``aborted`` the aborted transactions of a read_committed read
    (``AbortedTxn``), else None; ``config`` the local log's topic config, when there is a
    log; ``diverging`` the (epoch, end offset) of a fetcher whose log diverged."""
    tip: Any
    request: Any
    error_code: int
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    aborted: list | None = None
    found: list = field(default_factory=list)
    size: int = 0
    config: dict | None = None
    diverging: tuple[int, int] | None = None

    def read_bytes(self) -> bytes:
        """The bytes of the slices read (copied: TLS, down-conversion, tests)."""
        return b"".join(s.read_bytes() for s in self.found)


@dataclass
class PartitionChange:
    """One partition of a LeaderAndIsr request."""
    topic: str
    topic_id: uuid.UUID | None     # None: the request carries no (or a zero) id
    state: PartitionState
    is_new: bool = False


class ReplicaManager:
    def __init__(self, log_manager, node_id: int, topic_config_of: Callable[[str], dict],
                 cache=None, fetchers=None, alter_partition=None, alter_log_dirs=None,
                 config=None, clock=None,
                 txn_coordinator: Callable[[], txn_verification.Verifier | None] = lambda: None,
                 ) -> None:
        self._logs = log_manager
        self._node_id = node_id
        self._topic_config_of = topic_config_of
        self.cache = cache          # MetadataCache: leader liveness, known partitions
        self.fetchers = fetchers    # ReplicaFetcherManager (REPL); None: nothing followed
        # The broker's configuration (effective values: throttle rates, verification)
        # and clock (follower fetch times, the throttle's rate); the log manager's clock
        # unless told.
        self.config = config if config is not None else {}
        self.clock = clock if clock is not None else log_manager.clock
        # Where waiting produces and fetches park (``attach_purgatories``).
        self.produce_purgatory = None
        self.fetch_purgatory = None
        self._loop = None
        # This broker's TransactionCoordinator, asked by transaction verification; a
        # callable since the coordinator is made after the replica manager (None while
        # transactions are disabled).
        self._txn_coordinator = txn_coordinator
        self.partitions: dict[TopicPartition, Partition] = {}
        self._append_listeners: list[Callable[[TopicPartition], None]] = []
        # Appends and changes of partitions so far (``_wake``): a follower's fetch that read
        # nothing parks without trying again when none came since its read.
        self._wakes = 0
        # The AlterPartitionManager (ISR changes to the controller); None: ISRs stay.
        self.alter_partition = alter_partition
        # Leader-side replication throttle (Kafka's quotas.leader), applied by Fetch.
        self.leader_quota = ReplicationQuota(LEADER, node_id, config=self.config,
                                             clock=self.clock)
        # Moves between this broker's log dirs (replication.alter_log_dirs); None: none.
        self.alter_log_dirs = alter_log_dirs
        # Topic configs looked up during one LeaderAndIsr (None outside one).
        self._configs: dict[str, dict] | None = None

    def add_append_listener(self, listener: Callable[[TopicPartition], None]) -> None:
        self._append_listeners.append(listener)

    def attach_purgatories(self, fetch_purgatory, produce_purgatory, loop) -> None:
        """The purgatories waiting fetches and produces park in (woken by appends and
        leadership changes here), and the loop their futures belong to."""
        self.fetch_purgatory = fetch_purgatory
        self.produce_purgatory = produce_purgatory
        self._loop = loop
        self.add_append_listener(fetch_purgatory.check_and_complete)
        self.add_append_listener(produce_purgatory.check_and_complete)

    # -- LeaderAndIsr ----------------------------------------------------------------
    def become_leader_or_follower(self, controller_id: int, controller_epoch: int,
                                  changes: list[PartitionChange]) -> dict[TopicPartition, int]:
        """Kafka's becomeLeaderOrFollower after the request-level fencing (done by the
        handler): per partition an error code, in request order."""
        errors: dict[TopicPartition, int] = {}
        leaders: list[tuple[PartitionChange, Partition | None]] = []
        followers: list[tuple[PartitionChange, Partition | None]] = []
        for change in changes:
            key = (change.topic, change.state.partition)
            errors[key] = self._check(change, key, leaders, followers)
        # New epochs' leader-epoch-checkpoint files are written off the event loop, once
        # the whole request is applied (see kafkapy.log.leader_epoch).
        self._configs = {}      # one topic config per topic of the request, not per partition
        try:
            with write_behind():
                if leaders:
                    self._make_leaders(leaders, errors)
                if followers:
                    self._make_followers(followers, errors)
        finally:
            self._configs = None
        if self.alter_log_dirs is not None:   # Kafka's maybeAddLogDirFetchers
            self.alter_log_dirs.maybe_add_partitions(
                [k for k, code in errors.items() if code == ErrorCode.NO_ERROR])
        _log.info("handled LeaderAndIsr", controller_id=controller_id,
                  controller_epoch=controller_epoch, partitions=len(changes),
                  leaders=len(leaders), followers=len(followers))
        return errors

    def _check(self, change: PartitionChange, key: TopicPartition, leaders: list,
               followers: list) -> int:
        """Kafka's per-partition checks: offline log, topic id, leader epoch, assignment."""
        partition = self.partitions.get(key)
        if partition is None and (invalid_topic_reason(change.topic) or key[1] < 0):
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION    # no controller sends these
        if partition is not None and partition.log.offline:
            return ErrorCode.KAFKA_STORAGE_ERROR
        log = partition.log if partition is not None else self._logs.get_log(*key)
        log_id = _parse_id(log.topic_id) if log is not None else None
        if change.topic_id is not None and log_id is not None and log_id != change.topic_id:
            _log.error("inconsistent topic id", partition=key, log_topic_id=str(log_id),
                       request_topic_id=str(change.topic_id))
            return ErrorCode.INCONSISTENT_TOPIC_ID
        current = partition.leader_epoch if partition is not None else -1
        state = change.state
        if state.leader_epoch > current:
            if self._node_id not in state.replicas:
                return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            (leaders if state.leader == self._node_id else followers).append((change, partition))
            return ErrorCode.NO_ERROR
        if state.leader_epoch < current:
            return ErrorCode.STALE_CONTROLLER_EPOCH
        if change.topic_id is not None and log is not None and log_id is None:
            # The controller assigns an id to an old topic without bumping the epoch.
            log.record_topic_id(topic_id_text(change.topic_id))
            return ErrorCode.NO_ERROR
        if change.topic_id is None and log_id is not None and state.leader != self._node_id:
            return ErrorCode.NO_ERROR
        return ErrorCode.STALE_CONTROLLER_EPOCH

    def _make_leaders(self, leaders: list, errors: dict[TopicPartition, int]) -> None:
        self._remove_fetchers([(c.topic, c.state.partition) for c, _ in leaders])
        for change, partition in self._online(leaders, errors):
            partition.make_leader(change.state)
            self._wake((change.topic, change.state.partition))

    def _make_followers(self, followers: list, errors: dict[TopicPartition, int]) -> None:
        moved: list[Partition] = []
        for change, partition in self._online(followers, errors):
            if self.cache is not None and not self.cache.is_alive(change.state.leader):
                # Kafka keeps the log (its high watermark checkpointed) but changes nothing
                # until a LeaderAndIsr names a live leader.
                _log.warning("cannot become follower: leader unavailable",
                             partition=(change.topic, change.state.partition),
                             leader=change.state.leader)
                continue
            # False: same leader and epoch, the running fetcher carries on (Kafka).
            if partition.make_follower(change.state):
                moved.append(partition)
        self._remove_fetchers([(p.topic, p.index) for p in moved])
        for partition in moved:
            self._wake((partition.topic, partition.index))
        if moved and self.fetchers is not None:
            self.fetchers.add_partitions({
                (p.topic, p.index): (p.state.leader, p.log.log_end_offset) for p in moved})

    def _online(self, changes: list, errors: dict[TopicPartition, int]):
        """(change, partition) for each change whose partition exists or can be created
        and whose log is online; the others get their error code."""
        for change, partition in changes:
            partition = partition or self._create(change, errors)
            if partition is None:
                continue
            if partition.log.offline:
                errors[(change.topic, change.state.partition)] = ErrorCode.KAFKA_STORAGE_ERROR
                continue
            yield change, partition

    def _topic_config(self, name: str) -> dict:
        configs = self._configs
        if configs is None:
            return self._topic_config_of(name)
        config = configs.get(name)
        if config is None:
            config = configs[name] = self._topic_config_of(name)
        return config

    def _create(self, change: PartitionChange, errors: dict) -> Partition | None:
        """The partition's object and log; an existing partition's log found in no live
        dir while a dir is offline is that dir's (offline) log, unless the controller says
        the replica is new (Kafka's getOrCreateLog with isNew).  None (its error noted)
        when the log cannot be had."""
        name, index = change.topic, change.state.partition
        key = (name, index)
        topic_id = topic_id_text(change.topic_id) if change.topic_id is not None else None
        try:
            config = self._topic_config(name)
            if change.is_new or self._logs.get_log(name, index) is not None:
                log = self._logs.get_or_create_log(name, index, config, topic_id)
            else:
                with self._logs.placing_existing_partitions():
                    log = self._logs.get_or_create_log(name, index, config, topic_id)
        except KafkaError as err:      # a log on disk of another topic id
            errors[key] = err.code
            return None
        except (OSError, ValueError) as err:
            _log.error("cannot create log", partition=key, error=str(err))
            errors[key] = ErrorCode.KAFKA_STORAGE_ERROR
            return None
        # Not yet leader nor follower: epoch -1, so the request's state is applied next.
        placeholder = PartitionState(index, list(change.state.replicas), -1, -1, [],
                                     change.state.controller_epoch)
        partition = Partition(name, index, log, placeholder, self._node_id,
                              lambda err, key=key: self._logs.fail_dir_of(*key, err),
                              isr_manager=self.alter_partition)
        if log.offline:
            partition.state = change.state   # kept for Metadata, which shows it offline
        self.partitions[key] = partition
        return partition

    # -- StopReplica ---------------------------------------------------------------------
    def stop_replicas(self, controller_id: int, controller_epoch: int,
                      partitions: dict[TopicPartition, tuple[int, bool]]) -> dict[TopicPartition, int]:
        """Kafka's stopReplicas after the request-level fencing: ``partitions`` maps each
        partition to (leader epoch, delete); answers an error code per partition."""
        errors: dict[TopicPartition, int] = {}
        stopped: list[tuple[TopicPartition, bool]] = []
        for key, (leader_epoch, delete) in partitions.items():
            partition = self.partitions.get(key)
            if partition is not None and partition.log.offline:
                errors[key] = ErrorCode.KAFKA_STORAGE_ERROR
            elif (partition is None or leader_epoch in (EPOCH_DURING_DELETE, NO_EPOCH)
                  or leader_epoch >= partition.leader_epoch):
                stopped.append((key, delete))
                errors[key] = ErrorCode.NO_ERROR
            else:
                errors[key] = ErrorCode.FENCED_LEADER_EPOCH
        self._remove_fetchers([key for key, _ in stopped])
        if self.alter_log_dirs is not None:   # a future log stays unless deleted with it
            self.alter_log_dirs.remove_partitions([key for key, _ in stopped])
        for key, delete in stopped:
            if delete:
                self.partitions.pop(key, None)
                self._drop_pending_writes(key)
                try:
                    self._logs.delete_log(*key)
                except OSError as err:
                    _log.error("deleting a stopped replica failed", partition=key, error=str(err))
                    errors[key] = ErrorCode.KAFKA_STORAGE_ERROR
            self._wake(key)
        _log.info("handled StopReplica", controller_id=controller_id,
                  controller_epoch=controller_epoch, partitions=len(partitions),
                  stopped=len(stopped))
        return errors

    def _drop_pending_writes(self, key: TopicPartition) -> None:
        log = self._logs.get_log(*key)
        cache = getattr(log, "leader_epoch_cache", None)
        if cache is not None:
            cache.drop_pending()

    def _remove_fetchers(self, keys: list[TopicPartition]) -> None:
        if keys and self.fetchers is not None:
            self.fetchers.remove_partitions(keys)

    # -- requests -------------------------------------------------------------------
    def leader_partition(self, topic: str, index: int, current_leader_epoch: int = -1) -> Partition:
        partition = self.partitions.get((topic, index))
        if partition is None:
            if self.cache is not None and self.cache.partition(topic, index) is not None:
                raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        partition.check_leader(current_leader_epoch)
        return partition

    def readable_partition(self, topic: str, index: int, current_leader_epoch: int = -1,
                           leader_only: bool = True) -> Partition:
        """The partition a fetch reads: the leader's, or (a consumer's Fetch v11+, Kafka's
        KIP-392 fetch from follower) any replica here, at the epoch the client knows."""
        partition = self.partitions.get((topic, index))
        if partition is None:
            return self.leader_partition(topic, index, current_leader_epoch)  # raises
        return check_readable(partition, current_leader_epoch, leader_only)

    def is_leader(self, topic: str, index: int) -> bool:
        """Whether this broker hosts the partition as its leader (coordinators load then)."""
        partition = self.partitions.get((topic, index))
        return partition is not None and partition.is_leader and not partition.log.offline

    def appended(self, key: TopicPartition) -> None:
        self._wake(key)

    def high_watermark_moved(self, key: TopicPartition) -> None:
        """Wake what waits on the high watermark (acks=-1 produces, consumer fetches);
        the followers' fetches, which read to the log end, are left parked."""
        self._tell_listeners(key)

    # -- Produce (Kafka's appendRecords) -------------------------------------------------
    def append_records(self, entries: Sequence[tuple[str, Any]],
                       refused: Sequence[AppendResult | None], *, required_acks: int,
                       timeout_ms: int, produce_version: int, internal_topics_allowed: bool,
                       transactional_id: str | None,
                       respond: Callable[[list[tuple[str, int, AppendResult]]], Any],
                       origin: str = CLIENT):
        """Append a request's records to the partitions this broker leads.

        ``entries`` are (topic, partition data with ``index`` and ``records``) in request
        order; ``refused[i]`` is the answer the request checks already gave entry ``i``
        (not appended, answered in its place), or None.  ``respond`` gets (topic, index,
        AppendResult) per entry: at once (its value is returned), or with acks=-1 once
        the high watermark covers the appends, as one entry per partition (while that
        waits a future of its value is returned, a LateAnswer for a client's request;
        REQUEST_TIMED_OUT at ``timeout_ms``).
        ``internal_topics_allowed``: the request may write internal topics (Kafka lets
        the __admin_client client id).  ``transactional_id`` (with
        transaction.partition.verification.enable): transactional batches are verified
        against their transaction first.  ``origin`` COORDINATOR appends the broker's own
        batches without the client checks.
        """
        adding = (transactional_id is not None
                  and produce_version >= txn_verification.FIRST_ADDING_VERSION)
        verify = adding or (transactional_id is not None
                            and bool(self.config.get(_VERIFICATION_KEY, True)))
        if verify:
            refused = [r if r is not None else self._verify_transaction(
                transactional_id, topic, data, produce_version, adding)
                for (topic, data), r in zip(entries, refused)]
            if any(acks.is_pending(r) for r in refused):
                # Kafka appends once the coordinator answered (its verification callback).
                gathered = asyncio.gather(*(acks.settled(r) for r in refused))
                return acks.then(gathered, lambda done: self._append_checked(
                    entries, done, required_acks, timeout_ms, produce_version,
                    internal_topics_allowed, respond, origin))
        return self._append_checked(entries, refused, required_acks, timeout_ms,
                                    produce_version, internal_topics_allowed, respond, origin)

    def _append_checked(self, entries, refused, required_acks: int, timeout_ms: int,
                        produce_version: int, internal_topics_allowed: bool, respond,
                        origin: str):
        """``append_records`` once every transactional batch is verified."""
        results = []
        for (topic, data), result in zip(entries, refused):
            if result is None:
                started = stage_trace.now() if stage_trace.ENABLED else 0
                result = self._append_to_leader(topic, data.index, data.records,
                                                required_acks, produce_version,
                                                internal_topics_allowed, origin)
                if stage_trace.ENABLED and not result.error_code:
                    stage_trace.event("A", topic, data.index, result.last_offset + 1, started,
                                      stage_trace.now())
            results.append((topic, data.index, result))
        if required_acks == -1 and results:
            # a client's answer is sent from where the high watermark moves (LateAnswer)
            return self.await_replication(results, timeout_ms, respond, late=origin == CLIENT)
        return respond(results)

    def await_replication(self, results: list[tuple[str, int, AppendResult]],
                          timeout_ms: int, respond: Callable[[list], Any], late: bool = False):
        """acks=-1: ``respond`` once every appended partition's high watermark covers its
        append (``acks.wait_for_replication``): its value at once, else a future of it (a
        LateAnswer with ``late``)."""
        return acks.wait_for_replication(self.partitions, self.produce_purgatory, self._loop,
                                         results, timeout_ms, respond, late)

    def _append_to_leader(self, topic: str, index: int, records, required_acks: int,
                          produce_version: int, internal_topics_allowed: bool,
                          origin: str) -> AppendResult:
        """Kafka's appendToLocalLog for one partition."""
        if not internal_topics_allowed and is_internal(topic):
            return AppendResult(ErrorCode.INVALID_TOPIC_EXCEPTION)
        try:
            partition = self.leader_partition(topic, index)
        except KafkaError as err:
            return AppendResult(err.code)
        if required_acks == -1:
            refused = acks.min_isr_error(partition, topic, index)
            if refused is not None:
                _log.error("Error processing append operation on partition",
                           partition=f"{topic}-{index}", error=refused.error_message)
                return refused
        if origin == CLIENT:
            result = partition.append_as_leader(records, produce_version)
        else:
            result = partition.append_internal(records)
        if result.error_code == 0 and result.last_offset >= 0:
            self._wake((topic, index))
        return result

    def _verify_transaction(self, transactional_id: str, topic: str, data,
                            produce_version: int, adding: bool):
        """Kafka's verification of a transactional batch before it is appended: None
        when the batch may go on (it is not transactional, its producer already has an
        open transaction on the partition, or the coordinator says it is in the
        transaction), else the AppendResult that refuses it (a future of the answer
        while another broker's coordinator is asked).  ``adding`` (Produce v12): the
        coordinator adds the partition unless the producer's open transaction here is of
        the batch's epoch; a future of the answer while it does."""
        records = data.records
        if len(records) < _BATCH_HEADER_SIZE or records[MAGIC_OFFSET] != 2:
            return None
        header = read_header(records)
        if not header.is_transactional:
            return None
        try:
            partition = self.leader_partition(topic, data.index)
        except KafkaError as err:
            return AppendResult(err.code)
        if adding:
            if partition.has_ongoing_transaction(header.producer_id, header.producer_epoch):
                return None
            verdict = txn_verification.add_verdict(
                self._txn_coordinator(), transactional_id, header.producer_id,
                header.producer_epoch, (topic, data.index))
            return acks.then(verdict, lambda error: None if error is None
                             else txn_verification.failure(error, produce_version))
        if partition.has_ongoing_transaction(header.producer_id):
            return None
        verdict = txn_verification.coordinator_verdict(
            self._txn_coordinator(), transactional_id, header.producer_id,
            header.producer_epoch, (topic, data.index))
        return acks.then(verdict, lambda error: None if error is None
                         else txn_verification.failure(error, produce_version))

    # -- Fetch (Kafka's fetchMessages) -------------------------------------------------
    def fetch_messages(self, params: FetchParams, partitions: list,
                       respond: Callable[[list[LogReadResult]], Any],
                       unchanged: Callable[[Any], Any] | None = None):
        """Read ``partitions`` ((TopicIdPartition, PartitionRequest) of partitions known
        to the cluster, in the session's order) for ``params``; ``respond`` gets a
        LogReadResult per partition read.  At once (its value is returned) when the wait
        is 0, ``min_bytes`` are there, or a read failed or diverged; else the fetch waits
        in the fetch purgatory and reads again when it completes (a ``LateAnswer`` of
        ``respond``'s value is returned; an exception ``respond`` raises then fails it).

        ``unchanged`` (a follower's incremental fetch: its context's ``unchanged``) gives
        the session's entry of a partition the fetch did not name; such a partition with
        nothing to send and nothing the session would answer is not read (see
        ``_FetchRead._still_at_end``), so a follower's quiet partitions cost less."""
        if not partitions:
            return respond([])
        fetch = _FetchRead(self, params, partitions, unchanged)
        results = fetch.read()
        if fetch.can_answer_now(results):
            return respond(results)
        return fetch.delay(respond)

    def leader_and_epoch(self, topic: str, index: int) -> tuple[int, int]:
        """The partition's leader and leader epoch as this broker knows them ((-1, -1)
        when it knows nothing), for the current_leader hints of errors."""
        local = self.partitions.get((topic, index))
        if local is not None:
            state = local.state
        else:
            state = self.cache.partition(topic, index) if self.cache is not None else None
        return (state.leader, state.leader_epoch) if state is not None else (-1, -1)

    def record_leader_throttled(self, results: Iterable[LogReadResult]) -> None:
        """Kafka's quotas.leader.record(sizeOfThrottledPartitions): the bytes answered to
        a follower for throttled partitions (in-sync followers' too, their record bytes),
        zero included (every follower fetch answered keeps the quota's samples alive)."""
        quota = self.leader_quota
        size = 0
        for result in results:
            if result.size:
                partition = self.partitions.get((result.tip.topic, result.tip.partition))
                if partition is not None and quota.is_throttled(partition):
                    size += result.size
        quota.record(size)

    # -- ISR (Kafka's isr-expiration task and UnderReplicatedPartitions) -----------------
    def maybe_shrink_isr(self, now_ms: int | None = None) -> int:
        """Every replica.lag.time.max.ms / 2: each led partition proposes its ISR
        without the followers out of sync; returns how many proposed a change."""
        changed = 0
        for partition in list(self.partitions.values()):
            if partition.is_leader and partition.maybe_shrink_isr(now_ms):
                changed += 1
        return changed

    def under_replicated_count(self) -> int:
        return sum(1 for p in self.partitions.values() if p.is_under_replicated)

    def _wake(self, key: TopicPartition) -> None:
        """An append, or a change of the partition: whatever is parked on it."""
        self._wakes += 1
        self._tell_listeners(key)
        if self.fetch_purgatory is not None:
            self.fetch_purgatory.check_and_complete(replica_fetch_key(key))

    def _tell_listeners(self, key: TopicPartition) -> None:
        for listener in self._append_listeners:
            listener(key)


class _FetchRead:
    """One Fetch request's reads (Kafka's readFromLog) and, when it waits, its delayed
    operation: a consumer's DelayedFetch (positions compared on each try, then a read), a
    follower's DelayedFollowerFetch (each try a read; a throttled partition's bytes, which
    its read leaves out, do not end the wait, as in Kafka's DelayedFetch)."""

    __slots__ = ("_replicas", "_params", "_partitions", "_entries", "_follower",
                 "_leader_only", "_read_committed", "_throttling", "_wakes_at_read")

    def __init__(self, replicas: ReplicaManager, params: FetchParams, partitions: list,
                 unchanged: Callable[[Any], Any] | None = None) -> None:
        self._replicas = replicas
        self._params = params
        self._partitions = partitions
        # The session entry of each partition the fetch did not name (else None).
        self._entries = (None if unchanged is None
                         else [unchanged(tip) for tip, _ in partitions])
        self._follower = params.replica_id >= 0
        # Kafka's fetchOnlyFromLeader: followers, and consumers before v11 (no client
        # metadata); a v11+ consumer may read a follower up to its high watermark (KIP-392).
        self._leader_only = self._follower or params.version < _FETCH_FROM_FOLLOWER_FROM
        # (Kafka's FetchIsolation: a follower reads to the log end whatever it asks.)
        self._read_committed = (params.isolation_level == READ_COMMITTED
                                and not self._follower)
        self._throttling = False    # set by each read: _leader_throttle_set()
        self._wakes_at_read = -1    # the replica manager's wakes when the last read began

    # -- reading ----------------------------------------------------------------------
    def read(self, record_follower: bool = True) -> list[LogReadResult]:
        """Read every partition (but a follower's unnamed ones with nothing new, see
        _still_at_end); a follower's fetch offsets are recorded on the first read only
        (Kafka's readFromPurgatory: the offsets are the same when a wait ends)."""
        limit = self._params.max_bytes
        min_one = self._params.version >= _HARD_LIMIT_BELOW
        results = []
        self._wakes_at_read = self._replicas._wakes
        self._throttling = self._leader_throttle_set()
        # A leader throttle set: every partition is read (its bytes may be left out).
        entries = None if self._throttling else self._entries
        now = self._replicas.clock.time_ms() if entries is not None and record_follower else None
        for index, (tip, req) in enumerate(self._partitions):
            if entries is not None:
                cached = entries[index]
                if cached is not None and self._still_at_end(tip, req, cached, now):
                    continue
            result = self._read_one(tip, req, min(req.max_bytes, limit), min_one)
            if result.size:
                min_one = False  # only the first non-empty partition may exceed the limits
            limit = max(0, limit - result.size)
            results.append(result)
        if self._follower and record_follower:
            self._record_follower_fetches(results)
        if self._follower and stage_trace.ENABLED:
            self._trace_reads(results)
        return results

    def _still_at_end(self, tip, req, cached, now: int | None) -> bool:
        """Whether a partition the follower's fetch did not name (``cached``: its session
        entry) can be left unread, with the high watermark and log start last answered
        (the session would leave it out).  When the fetch comes (``now``): Partition.
        follower_still_at_end -- Kafka reads it and records the fetch all the same; the
        record's only effect, the follower's fetch and caught-up times, is made there.
        When a wait ends (``now`` None): Partition.still_at_end -- nothing is recorded
        then (Kafka's readFromPurgatory), so only what the read would find matters."""
        partition = self._replicas.partitions.get((tip.topic, tip.partition))
        if partition is None:
            return False
        if now is None:
            return partition.still_at_end(req, cached.high_watermark,
                                          cached.local_log_start_offset)
        params = self._params
        if not partition.follower_still_at_end(
                params.replica_id, params.replica_epoch, req, cached.high_watermark,
                cached.local_log_start_offset, now):
            return False
        if stage_trace.ENABLED:     # recorded, as a read one's is
            stage_trace.event("F", tip.topic, tip.partition, params.replica_id,
                              req.fetch_offset, stage_trace.now())
        return True

    def _read_again(self) -> list[LogReadResult]:
        """The read when a wait ends (the fetch offsets were recorded by the first)."""
        return self.read(record_follower=False)

    def _trace_reads(self, results: list[LogReadResult]) -> None:
        now = stage_trace.now()
        for result in results:
            partition = self._replicas.partitions.get((result.tip.topic, result.tip.partition))
            if result.size and partition is not None:
                stage_trace.event("R", result.tip.topic, result.tip.partition,
                                  self._params.replica_id, result.request.fetch_offset,
                                  partition.log.log_end_offset, now)

    def _record_follower_fetches(self, results: list[LogReadResult]) -> None:
        """Kafka's updateFollowerFetchState: each partition read for a follower records its
        fetch offset as the follower's log end; where that moves the high watermark, the
        delayed produces (acks=all) and consumer fetches watching the partition may now
        complete.  (The answer carries the HW as read, as Kafka's: the follower learns a
        new HW with its next fetch.)"""
        replicas = self._replicas
        replica = self._params.replica_id
        replica_epoch = self._params.replica_epoch
        now = replicas.clock.time_ms()
        moved = []
        for result in results:
            if result.error_code or result.diverging is not None:
                continue
            key = (result.tip.topic, result.tip.partition)
            partition = replicas.partitions.get(key)
            req = result.request
            if stage_trace.ENABLED:
                stage_trace.event("F", key[0], key[1], replica, req.fetch_offset,
                                  stage_trace.now())
            if partition is not None and partition.update_follower_fetch(
                    replica, req.fetch_offset, now, req.log_start_offset, replica_epoch):
                moved.append(key)
                if stage_trace.ENABLED:
                    stage_trace.event("H", key[0], key[1], partition.high_watermark,
                                      stage_trace.now())
        for key in moved:
            replicas.high_watermark_moved(key)

    def _read_one(self, tip, req, max_bytes: int, min_one: bool) -> LogReadResult:
        replicas = self._replicas
        local = replicas.partitions.get((tip.topic, tip.partition))
        config = local.log.config.values if local is not None else None
        try:
            if local is None:
                # Known to the cluster but not hosted here.
                raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
            partition = check_readable(local, req.current_leader_epoch, self._leader_only)
            if self._follower:
                self._check_follower(partition, req)
            log = partition.log
            result = LogReadResult(tip, req, 0, partition.high_watermark,
                                   partition.last_stable_offset, log.log_start_offset,
                                   config=config)
            if req.last_fetched_epoch >= 0 and _diverging(log, req, result):
                return result
            result.found, result.aborted = log.read_for_fetch(
                req.fetch_offset, max_bytes, self._upper(partition), min_one,
                self._read_committed)
            if self._throttling and result.found and self._throttled(partition):
                result.found = []   # Kafka: the throttled partition answers no records
        except KafkaError as err:
            return LogReadResult(tip, req, err.code, config=config)
        result.size = sum(s.size for s in result.found)
        return result

    def _leader_throttle_set(self) -> bool:
        """A follower's fetch on a broker with a leader throttle rate set: only then can a
        partition be throttled (replication.quota), so only then are partitions checked."""
        return self._follower and self._replicas.leader_quota.bounded()

    def _throttled(self, partition) -> bool:
        """Kafka's shouldLeaderThrottle for this follower (see replication.quota)."""
        return self._replicas.leader_quota.should_leader_throttle(partition,
                                                                  self._params.replica_id)

    def _upper(self, partition) -> int:
        """Where this fetcher's read stops: log end (followers), LSO or high watermark."""
        if self._follower:
            return partition.log.log_end_offset
        return partition.last_stable_offset if self._read_committed else partition.high_watermark

    def _check_follower(self, partition, req) -> None:
        """Kafka's followerReplicaOrThrow: the fetcher must be another assigned replica."""
        replica = self._params.replica_id
        if replica == self._replicas._node_id or replica not in partition.state.replicas:
            raise KafkaError(ErrorCode.UNKNOWN_LEADER_EPOCH if req.current_leader_epoch >= 0
                             else ErrorCode.NOT_LEADER_OR_FOLLOWER)

    def can_answer_now(self, results: list[LogReadResult]) -> bool:
        return (self._params.max_wait_ms <= 0
                or sum(r.size for r in results) >= self._params.min_bytes
                or any(r.error_code or r.diverging for r in results))

    # -- waiting ----------------------------------------------------------------------
    def delay(self, respond: Callable[[list[LogReadResult]], Any]) -> LateAnswer:
        """Park the fetch in the fetch purgatory; the answer is ``respond``'s value for the
        read made when the wait ends, given there and then (``LateAnswer``: the listener
        sends it inside the append that ended the wait, not on a later turn of the loop)."""
        replicas = self._replicas
        future = LateAnswer()

        def deliver(results):
            try:
                value = respond(results)
            except Exception as exc:   # e.g. the handler closes the connection instead
                if not future.done():
                    future.set_exception(exc)
                return
            if not future.done():
                future.set_result(value)

        if self._follower:
            keys = [replica_fetch_key((tip.topic, tip.partition)) for tip, _ in self._partitions]
            operation = DelayedFollowerFetch(self._params.max_wait_ms, self._read_again,
                                             self.can_answer_now, deliver)
        else:
            keys = [(tip.topic, tip.partition) for tip, _ in self._partitions]
            operation = self._delayed_consumer_fetch(deliver)
        # A follower's read just made found nothing past its fetch offset (the log end):
        # unless an append or a change of a partition came since (its fetch offset moved
        # the high watermark, and what that completed appended), trying again could only
        # say the same.  (A consumer's first try can differ from its read: past the high
        # watermark it answers at once.)
        tried = self._follower and replicas._wakes == self._wakes_at_read
        replicas.fetch_purgatory.try_complete_else_watch(operation, keys, tried=tried)
        return future

    def _delayed_consumer_fetch(self, deliver) -> DelayedFetch:
        """Kafka's DelayedFetch: the positions each partition was read from, compared on
        each try with where the consumer may now read to."""
        replicas = self._replicas
        statuses, requests = [], {}
        for tip, req in self._partitions:
            statuses.append(FetchPartitionStatus(tip.topic, tip.partition, req.fetch_offset,
                                                 req.max_bytes,
                                                 _start_metadata(replicas, tip, req)))
            requests[(tip.topic, tip.partition)] = req

        def state(topic, index):
            return _end_metadata(replicas, topic, index, requests[(topic, index)], self._upper,
                                 self._leader_only)

        return DelayedFetch(self._params.max_wait_ms, self._params.min_bytes, statuses,
                            self._read_again, deliver, state)


def check_readable(partition: Partition, current_leader_epoch: int,
                   leader_only: bool) -> Partition:
    """``partition``, hosted here, when a fetch may read it (``readable_partition``'s
    checks once the partition is found): it leads at the epoch the client knows, or, for
    a fetch that may read a follower, it is online at that epoch."""
    if leader_only or partition.is_leader:
        partition.check_leader(current_leader_epoch)
        return partition
    if partition.log.offline:
        raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR)
    if current_leader_epoch >= 0 and current_leader_epoch != partition.leader_epoch:
        raise KafkaError(ErrorCode.FENCED_LEADER_EPOCH
                         if current_leader_epoch < partition.leader_epoch
                         else ErrorCode.UNKNOWN_LEADER_EPOCH)
    return partition


def replica_fetch_key(key: TopicPartition) -> tuple:
    """The fetch purgatory's key for followers' fetches of a partition (its consumers'
    fetches wait on the partition's own key)."""
    return ("replica", *key)


def _start_metadata(replicas: ReplicaManager, tip, req):
    partition = replicas.partitions.get((tip.topic, tip.partition))
    return partition.offset_metadata(req.fetch_offset) if partition is not None else None


def _end_metadata(replicas: ReplicaManager, topic: str, index: int, req, upper,
                  leader_only: bool = True):
    """Where a waiting fetch may read to, or an error code when it must answer now."""
    try:
        partition = replicas.readable_partition(topic, index, req.current_leader_epoch,
                                                leader_only)
    except KafkaError as err:
        return err.code
    if req.last_fetched_epoch >= 0:
        # Kafka's case H: the fetcher's log diverged meanwhile (or cannot be placed).
        epoch, end = _epoch_end(partition.log, req)
        if epoch < 0 or end < 0 or epoch < req.last_fetched_epoch or end < req.fetch_offset:
            return ErrorCode.OFFSET_OUT_OF_RANGE
    return partition.offset_metadata(upper(partition))


def _epoch_end(log, req) -> tuple[int, int]:
    """The largest epoch <= the fetcher's last one and where it ends (-1s if unknown)."""
    return log.leader_epoch_cache.end_offset_for(req.last_fetched_epoch, log.log_end_offset)


def _diverging(log, req, result: LogReadResult) -> bool:
    """Kafka's check of ``last_fetched_epoch`` (Fetch v12+): True when the fetcher's log
    diverged.  The answer then carries the end of the largest epoch at or below the
    fetcher's, and no records."""
    epoch, end = _epoch_end(log, req)
    if epoch < 0 or end < 0 or req.fetch_offset < log.log_start_offset:
        raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE)
    if epoch < req.last_fetched_epoch or end < req.fetch_offset:
        result.diverging = (epoch, end)
        return True
    return False


def _parse_id(text: str | None) -> uuid.UUID | None:
    """A log's stored topic id (text), None when it has none or it cannot be read."""
    if text is None:
        return None
    try:
        return parse_topic_id(text)
    except (ValueError, TypeError):
        return None
