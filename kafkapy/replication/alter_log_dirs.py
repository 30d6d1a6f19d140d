"""Moving a replica between the log dirs of this broker (JBOD), as Kafka 3.9.

Kafka's ReplicaManager.alterReplicaLogDirs, maybeAddLogDirFetchers and its
ReplicaAlterLogDirsManager / ReplicaAlterLogDirsThread, in one object per broker
(``AlterLogDirsManager``, given to the replica manager when it is made, so it reaches
the replica manager's partitions only through the callables it is given:
``partition_of(key)`` and ``log_swapped(key)``, which wakes waiting fetches):

- ``alter(assignment)`` answers AlterReplicaLogDirs per partition: a dir that is not
  configured -> LOG_DIR_NOT_FOUND; an offline dir, an offline replica, or a new future
  log while any dir is offline -> KAFKA_STORAGE_ERROR; a topic too long for a
  ``-future`` dir name -> INVALID_TOPIC_EXCEPTION; a partition not hosted here ->
  REPLICA_NOT_AVAILABLE (UNKNOWN_TOPIC_OR_PARTITION when no metadata knows it) *after*
  remembering the dir, so the log is created there when LeaderAndIsr comes; else NONE:
  nothing to do when the replica is already there or already moving there, else a
  move to another dir first abandons the running one and an empty future log
  ``<topic>-<p>.<uuid>-future`` is created in the dir and the copier is told.
- the copiers (``num.replica.alter.log.dirs.threads`` tasks, by default one per log dir,
  a partition going to the one Kafka's fetcher id picks; each moves one partition at a
  time, in (topic, partition) order, sticking with the one it started) copy the current log's
  batches as they are into the future log, ``replica.fetch.max.bytes`` per round and
  never past the end of a segment (a Kafka log read stays in one segment): the
  byte ranges are found on the loop (index lookups), read off the loop (``pread`` in a
  worker thread), then appended on the loop (a page-cache write; the future log
  changes only on the loop, like every log).  Before a round the future log is brought
  back in line with the current one: truncated to the current log end or to the end
  of its latest leader epoch there (the current replica, a follower, may have been
  truncated), or restarted at the current log start when it fell below it.  The
  future's high watermark and log start follow the current's.
- when the future log has caught up (same log end offset), the two are swapped on the
  loop (``LogManager.replace_current_with_future``: renames only) and the partition
  serves from the new dir (``Partition.swap_in_future_log``); the old log goes the way
  of a deleted log.
- throttle: ``replica.alter.log.dirs.io.max.bytes.per.second`` (dynamic broker config)
  through Kafka's ReplicationQuotaManager (``AlterLogDirs`` quota, windows
  ``alter.log.dirs.replication.quota.window.num`` x ``...window.size.seconds``): no
  round while the measured rate is above it (the copier backs off
  ``replica.fetch.backoff.ms``), every copied byte recorded.
- future logs found at start-up resume copying once their partition is hosted again
  (``maybe_add_partitions`` after each LeaderAndIsr, Kafka's maybeAddLogDirFetchers).
- a partition stopped (StopReplica), gone offline or whose future log's dir failed is
  dropped from the copier; its future log stays (or was deleted with the partition).

Invariant: the future log's content is always a prefix of the current log's (after
the reconciliation at the start of each round, and again right before a swap: the
bytes of a round were read off the loop, from a log that may have been truncated and
refilled since), so the swap loses nothing and serves nothing stale.
"""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Callable

import structlog

from kafkapy.log.log import FUTURE_DIR_SUFFIX, partition_dir_name
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.protocol.topic_partition import TopicPartition
from kafkapy.records.batch import is_crc_valid, iter_headers
from kafkapy.replication import quota as _quota
from kafkapy.replication.fetcher import fetcher_id
from kafkapy.replication.quota import FOLLOWER, ReplicationQuota

if TYPE_CHECKING:
    from kafkapy.clock import Clock
    from kafkapy.config.broker import BrokerConfig
    from kafkapy.log.manager import LogManager
    from kafkapy.metadata.cache import MetadataCache
    from kafkapy.replication.partition import Partition

_log = structlog.get_logger("kafkapy.replication.alter_log_dirs")

ALTER_LOG_DIRS = "AlterLogDirs"
RATE_KEY = "replica.alter.log.dirs.io.max.bytes.per.second"
_SAMPLES_KEY = "alter.log.dirs.replication.quota.window.num"
_WINDOW_KEY = "alter.log.dirs.replication.quota.window.size.seconds"
_UUID_SUFFIX_LEN = 1 + 32 + len(FUTURE_DIR_SUFFIX)   # ".<uuid hex>-future"
INVALID_OFFSET_LAG = -1


class AlterLogDirsQuota(ReplicationQuota):
    """Kafka's quotas.alterLogDirs: every move is throttled (no replica lists)."""

    def __init__(self, node_id: int, *, config: BrokerConfig, clock: Clock) -> None:
        super().__init__(FOLLOWER, node_id, config=config, clock=clock)
        self.kind = ALTER_LOG_DIRS
        self._rate_key = RATE_KEY
        self._window_keys = (_SAMPLES_KEY, _WINDOW_KEY)
        self._gauge = _quota._BYTE_RATE.labels(type=ALTER_LOG_DIRS)
        self._counter = _quota._THROTTLED_BYTES.labels(type=ALTER_LOG_DIRS)

    def is_throttled(self, partition) -> bool:
        return True


class AlterLogDirsManager:
    """AlterReplicaLogDirs and the copier of future logs (module docstring)."""

    def __init__(self, *, config: BrokerConfig, clock: Clock, log_manager: LogManager,
                 node_id: int, cache: MetadataCache,
                 partition_of: Callable[[TopicPartition], Partition | None],
                 log_swapped: Callable[[TopicPartition], None]) -> None:
        self._config = config
        self._logs = log_manager
        self._cache = cache     # tells a partition not hosted here from an unknown one
        self._partition = partition_of
        self._log_swapped = log_swapped
        self.quota = AlterLogDirsQuota(node_id, config=config, clock=clock)
        # Kafka's num.replica.alter.log.dirs.threads (default: one per log dir), each
        # moving one partition at a time; a partition goes to the one its hash picks.
        threads = _config(config, "num.replica.alter.log.dirs.threads", None)
        count = int(threads) if threads else len(log_manager.log_dirs)
        self._workers = [_Worker(i) for i in range(max(1, count))]
        self._closed = False
        self.moves_completed = 0

    # -- AlterReplicaLogDirs -----------------------------------------------------------
    def alter(self, assignment: dict[TopicPartition, str]) -> dict[TopicPartition, int]:
        return {key: self._alter_one(key, d) for key, d in assignment.items()}

    def _alter_one(self, key: TopicPartition, d: str) -> int:
        topic, index = key
        logs = self._logs
        if len(partition_dir_name(topic, index)) + _UUID_SUFFIX_LEN > 255:
            return ErrorCode.INVALID_TOPIC_EXCEPTION
        if not logs.has_log_dir(d):
            return ErrorCode.LOG_DIR_NOT_FOUND
        if d in logs.offline_dirs:
            return ErrorCode.KAFKA_STORAGE_ERROR
        partition = self._partition(key)
        if partition is not None:
            if partition.log.offline:
                return ErrorCode.KAFKA_STORAGE_ERROR
            future_dir = logs.future_log_dir_of(topic, index)
            if future_dir is not None and future_dir != d:
                # Another destination: the running move is abandoned (Kafka's
                # futureReplicaDirChanged -> removeFutureLocalReplica).
                self.remove_partitions([key])
                logs.delete_future_log(topic, index)
        logs.maybe_update_preferred_log_dir(topic, index, d)
        if partition is None:
            if self._cache.partition(topic, index) is None:
                return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            return ErrorCode.REPLICA_NOT_AVAILABLE
        if logs.log_dir_of(topic, index) == d or logs.get_future_log(topic, index) is not None:
            return ErrorCode.NO_ERROR
        if logs.offline_dirs:
            # Kafka creates no future log while a dir is offline (it could be a second one).
            return ErrorCode.KAFKA_STORAGE_ERROR
        try:
            logs.create_future_log(topic, index, d)
        except OSError as err:
            logs.fail_dir(d, err)
            return ErrorCode.KAFKA_STORAGE_ERROR
        _log.info("moving replica", partition=f"{topic}-{index}", to=d,
                  source=logs.log_dir_of(topic, index))
        self.add_partitions([key])
        return ErrorCode.NO_ERROR

    # -- which partitions ----------------------------------------------------------------
    def maybe_add_partitions(self, keys) -> None:
        """Kafka's maybeAddLogDirFetchers: hosted, online partitions with a future log."""
        found = []
        for key in keys:
            partition = self._partition(key)
            if (partition is not None and not partition.log.offline
                    and self._logs.get_future_log(*key) is not None):
                found.append(key)
        self.add_partitions(found)

    def add_partitions(self, keys) -> None:
        if self._closed:
            return
        for key in keys:
            worker = self._worker_of(key)
            if key not in worker.pending:
                worker.pending[key] = None
                self._ensure_task(worker)
                worker.wake.set()

    def remove_partitions(self, keys) -> None:
        for key in keys:
            worker = self._worker_of(key)
            worker.pending.pop(key, None)
            if worker.moving == key:
                worker.moving = None

    def is_moving(self, key: TopicPartition) -> bool:
        return key in self._worker_of(key).pending

    def _worker_of(self, key: TopicPartition) -> "_Worker":
        """Kafka's AbstractFetcherManager.getFetcherId, as the replica fetchers'."""
        return self._workers[fetcher_id(key[0], key[1], len(self._workers))]

    def offset_lag(self, key: TopicPartition) -> int:
        """DescribeLogDirs' lag of a future replica: current log end minus its own."""
        logs = self._logs
        current, future = logs.get_log(*key), logs.get_future_log(*key)
        if current is None or current.offline or future is None:
            return INVALID_OFFSET_LAG
        return current.log_end_offset - future.log_end_offset

    # -- the copier --------------------------------------------------------------------------
    def _ensure_task(self, worker: "_Worker") -> None:
        if worker.task is None or worker.task.done():
            worker.wake = worker.wake or asyncio.Event()
            worker.task = asyncio.get_running_loop().create_task(
                self._run(worker), name=f"ReplicaAlterLogDirsThread-{worker.index}")

    async def shutdown(self) -> None:
        """Stop copying (before the logs are closed); future logs stay for the next start."""
        self._closed = True
        for worker in self._workers:
            worker.pending.clear()
            if worker.task is not None:
                worker.task.cancel()
                try:
                    await worker.task
                except (asyncio.CancelledError, Exception):
                    pass
                worker.task = None

    async def _run(self, worker: "_Worker") -> None:
        while not self._closed:
            if not worker.pending:
                worker.wake.clear()
                await worker.wake.wait()
                continue
            key = worker.select()
            try:
                progressed = await self._round(key)
            except asyncio.CancelledError:
                raise
            except Exception:
                _log.exception("moving a replica failed; retrying after the back-off",
                               partition=f"{key[0]}-{key[1]}")
                progressed = False
            if not progressed:
                await asyncio.sleep(self._backoff_s())
            else:
                await asyncio.sleep(0)   # let requests in between rounds

    def _backoff_s(self) -> float:
        return max(10, int(_config(self._config, "replica.fetch.backoff.ms", 1000))) / 1000

    async def _round(self, key: TopicPartition) -> bool:
        """One copy step of ``key``; False to back off (throttled, nothing to do)."""
        logs = self._logs
        partition = self._partition(key)
        future = logs.get_future_log(*key)
        if partition is None or future is None or partition.log.offline or future.offline:
            self.remove_partitions([key])
            return True
        current = partition.log
        if self.quota.is_exceeded():
            return False
        if not self._reconcile(key, current, future):
            return True
        if future.log_end_offset == current.log_end_offset:
            return self._swap(key, partition)
        fetch_size = int(_config(self._config, "replica.fetch.max.bytes", 1048576))
        start = future.log_end_offset
        # One segment's worth at most, as Kafka's log reads never span segments.
        slices = current.read(start, max(fetch_size, 1), None, True)[:1]
        try:
            data = await asyncio.to_thread(_read_slices, slices)
        except (OSError, EOFError) as err:   # the current log changed under the read
            _log.debug("re-reading after a changed source", partition=key, error=str(err))
            return True
        # Back on the loop: anything may have changed during the read.
        if (not self.is_moving(key) or partition.log is not current
                or logs.get_future_log(*key) is not future or future.log_end_offset != start
                or current.log_end_offset < start or current.offline or future.offline):
            return True
        copied = self._append(key, current, future, data)
        self.quota.record(copied)
        future.high_watermark = min(current.high_watermark, future.log_end_offset)
        if future.log_start_offset < current.log_start_offset <= future.log_end_offset:
            future.maybe_increment_log_start_offset(current.log_start_offset)
        # Kafka swaps right after the append that catches up.  The bytes were read before
        # the current log could be truncated and refilled (a follower) to the same end:
        # reconciled again first, so stale records are cut, never swapped in.
        if (future.log_end_offset == current.log_end_offset
                and self._reconcile(key, current, future)
                and future.log_end_offset == current.log_end_offset):
            self._swap(key, partition)
        return True

    def _reconcile(self, key: TopicPartition, current, future) -> bool:
        """Keep the future log a prefix of the current one; False if its dir failed."""
        try:
            end = min(future.log_end_offset, _diverging_end(current, future))
            if end < future.log_end_offset:
                _log.info("truncating the future log", partition=f"{key[0]}-{key[1]}", to=end)
                future.truncate_to(end)
            if future.log_end_offset < current.log_start_offset:
                future.truncate_fully_and_start_at(current.log_start_offset)
        except OSError as err:
            self._future_failed(key, future, err)
            return False
        return True

    def _append(self, key: TopicPartition, current, future, data: bytes) -> int:
        mv = memoryview(data)
        copied = 0
        try:
            for header in iter_headers(mv):
                if header.last_offset < future.log_end_offset:
                    continue
                if header.base_offset < future.log_end_offset:
                    if future.size:   # cannot happen: the future log ends on a batch
                        break
                    # The current log starts inside this batch: so does the copy.
                    future.truncate_fully_and_start_at(header.base_offset)
                if header.last_offset >= current.log_end_offset:
                    break     # appended to the current log after the read... or truncated
                if header.magic != 2 or not is_crc_valid(mv, header):
                    raise KafkaError(ErrorCode.CORRUPT_MESSAGE,
                                     f"corrupt batch at {header.base_offset} in the current "
                                     f"log of {key[0]}-{key[1]}")
                future.append_as_follower(mv, header)
                copied += header.size
        except OSError as err:
            self._future_failed(key, future, err)
        return copied

    def _future_failed(self, key: TopicPartition, future, err: OSError) -> None:
        logs = self._logs
        d = logs.future_log_dir_of(*key) or future.parent_dir
        self.remove_partitions([key])
        logs.fail_dir(d, err)

    def _swap(self, key: TopicPartition, partition: Partition) -> bool:
        """Replace the current log with the future one; False when it must wait."""
        logs = self._logs
        source = logs.log_dir_of(*key)
        try:
            new_log = logs.replace_current_with_future(*key)
        except OSError as err:
            _log.error("replacing the current replica with the future one failed",
                       partition=f"{key[0]}-{key[1]}", error=str(err))
            self.remove_partitions([key])
            return True
        if new_log is None:   # a flush is busy with one of the logs: a later round swaps
            return False
        partition.swap_in_future_log(new_log)
        self.remove_partitions([key])
        self.moves_completed += 1
        _log.info("moved replica", partition=f"{key[0]}-{key[1]}", source=source,
                  destination=logs.log_dir_of(*key), log_end_offset=new_log.log_end_offset)
        self._log_swapped(key)   # waiting fetches see the new log
        return True


def _diverging_end(current, future) -> int:
    """Where the future log stops being a prefix of the current one, by leader epochs (the
    follower's truncation rule): the end, in the current log, of the future's latest
    epoch the current log knows; a later epoch it does not know is cut at its start."""
    end = current.log_end_offset
    if not current.leader_epoch_cache.entries:
        return end
    for epoch, start in reversed(future.leader_epoch_cache.entries):
        if epoch < 0:
            break
        known, epoch_end = current.leader_epoch_cache.end_offset_for(epoch,
                                                                    current.log_end_offset)
        if known == epoch and epoch_end >= 0:
            return min(end, epoch_end)
        end = min(end, start)
    return end


class _Worker:
    """One of Kafka's ReplicaAlterLogDirsThreads: its partitions, one moved at a time."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.pending: dict[TopicPartition, None] = {}   # partitions whose future log to fill
        self.moving: TopicPartition | None = None
        self.wake: asyncio.Event | None = None
        self.task: asyncio.Task | None = None

    def select(self) -> TopicPartition:
        """Kafka: the first ready partition by (topic, partition), kept until it is done."""
        if self.moving not in self.pending:
            self.moving = min(self.pending)
        return self.moving


def _read_slices(slices) -> bytes:
    """The bytes of the slices (worker thread: cold segments come from the disk here)."""
    return b"".join(s.read_bytes() for s in slices)


def _config(config, key: str, default):
    value = config.get(key, default)
    return default if value is None else value
