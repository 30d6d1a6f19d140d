"""LogManager: every partition log of the broker, across its log dirs.

On disk, per log dir (as Kafka 3.9's LogManager): ``meta.properties``,
``recovery-point-offset-checkpoint``, ``replication-offset-checkpoint`` (high
watermarks), ``log-start-offset-checkpoint``, ``.kafka_cleanshutdown`` (JSON
``{"version":0,"brokerEpoch":N}``, present only between a clean shutdown and
the next load) and one ``<topic>-<partition>`` dir per log.

Invariants:
- a partition lives in exactly one log dir; a new one goes to the dir holding
  the fewest partitions (counted as logs come and go, ``_CountingDirMap``: placing
  one is O(dirs));
- all dirs carry the same cluster.id / broker.id (``load`` refuses otherwise);
- without the clean-shutdown marker, segments from each log's recovery point
  on are recovered at load (the logs of a dir are loaded on
  num.recovery.threads.per.data.dir threads); the marker is deleted once the dir
  is loaded and written again by ``shutdown`` only after every log was closed
  (without a sync per file) and the dir synced in one pass (syncfs), then the
  recovery points moved to the log ends and the checkpoints written.
- a log dir whose I/O failed (``fail_dir``: ENOSPC, EIO, EFBIG...) is
  offline for the rest of the process, as with Kafka's LogDirFailureChannel:
  its logs are marked ``offline`` (their partitions answer
  KAFKA_STORAGE_ERROR), nothing more is written there (no checkpoint, no
  clean-shutdown marker, so the next start recovers it), new logs go to live
  dirs only, and ``on_dir_failure(dir, live_dirs)`` is told, once per dir.
- every live dir is held with an exclusive ``flock`` on its ``.lock`` file
  from ``open_dirs`` (called by ``load`` if not before) until ``shutdown`` (which deletes
  the file, as Kafka's FileLock.destroy), so a
  second broker on the same dir is refused (``LogDirLockedError``), as Kafka's
  FileLock does; the lock dies with the process.
- a dir that cannot be created, read or locked when opened starts offline (its
  reason logged), as with Kafka's createAndValidateLogDirs; with none usable,
  ``open_dirs`` raises ``NoLiveLogDirError`` naming each dir and its reason.
- a partition the broker had before (``placing_existing_partitions``, at start-up)
  whose log is in no live dir while some dir is offline may be in that dir: it is not
  created afresh elsewhere (that would fork it, and trip the duplicate check once the
  dir is back) but gets an offline, empty, in-memory log in the first offline dir, as
  Kafka's getOrCreateLog(isNew=false) refuses it; nothing on an offline dir is touched.
- ``shutdown`` before a completed ``load`` only lets go of what was opened: it
  writes no checkpoint and no clean-shutdown marker (a dir whose load did not
  finish may still need recovery).
- a replica being moved to another log dir of this broker (AlterReplicaLogDirs) has a
  *future* log there, ``<topic>-<p>.<uuid hex>-future`` (``future_logs``; at most one per
  partition, never in the current log's dir); ``replace_current_with_future`` renames it
  to ``<topic>-<p>`` and sends the current one the way of a deleted log, as Kafka's
  replaceCurrentWithFutureLog.  Future logs are loaded at start-up (the move resumes
  once the partition is hosted again), flushed and checkpointed like current ones, left
  out of retention, and deleted with their partition.  ``preferred_log_dirs`` holds the
  dir asked for a partition not hosted yet: its log is created there (Kafka's
  maybeUpdatePreferredLogDir).
``load``, ``shutdown``, ``flush_dirty`` and ``periodic`` block on disk I/O:
run them off the event loop (executor) when logs are large.
"""
from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import itertools
import json
import logging
import os
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, NamedTuple

from kafkapy.clock import SYSTEM_CLOCK, Clock
from kafkapy.log.checkpoint import (LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT,
                                    REPLICATION_OFFSET_CHECKPOINT, CheckpointError,
                                    atomic_write, read_offset_checkpoint,
                                    write_offset_checkpoint)
from kafkapy.log.log import (DELETE_DIR_SUFFIX, FUTURE_DIR_SUFFIX, STRAY_DIR_SUFFIX, Log,
                             future_dir_name, parse_log_dir_name, parse_partition_dir_name,
                             partition_dir_name)
from kafkapy.log.log_config import LogConfig
from kafkapy.log.meta_properties import ensure_meta_properties
from kafkapy.log.partition_metadata import PartitionMetadataError
from kafkapy.log.producer_state import ProducerStateManagerConfig
from kafkapy.protocol.topic_partition import TopicPartition

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
LOCK_FILE = ".lock"

_log = logging.getLogger(__name__)

TopicConfigs = dict[str, dict[str, Any]] | Callable[[str], dict[str, Any] | None] | None


class CheckpointWrite(NamedTuple):
    """One offset checkpoint file's contents, taken when ``seq`` was drawn: written later,
    off the event loop (``write_checkpoint_files``)."""

    log_dir: str
    path: str
    offsets: dict
    seq: int


_checkpoint_seq = itertools.count(1)
_checkpoint_lock = threading.Lock()
_last_written: dict[str, int] = {}    # path -> seq of the contents on disk


def write_checkpoint_files(writes: list[CheckpointWrite]) -> list[tuple[str, OSError]]:
    """Write checkpoint files; returns (log dir, error) of those that failed.  Safe from
    any thread.  A file never goes back to older contents: a write whose contents were
    taken before those already written (a periodic write finishing after the shutdown's
    final checkpoint) is skipped."""
    failed = []
    for write in writes:
        with _checkpoint_lock:
            if _last_written.get(write.path, 0) > write.seq:
                continue
            try:
                write_offset_checkpoint(write.path, write.offsets)
            except OSError as err:
                failed.append((write.log_dir, err))
                continue
            _last_written[write.path] = write.seq
    return failed


class LogDirError(Exception):
    """Log dirs are inconsistent (e.g. the same partition in two dirs)."""


class LogDirLockedError(LogDirError):
    """Another process (or another LogManager) holds a log dir's ``.lock``."""


class NoLiveLogDirError(LogDirError):
    """None of the configured log dirs can be created, read or locked."""


class LogManager:
    def __init__(self, log_dirs: list[str], clock: Clock = SYSTEM_CLOCK,
                 default_topic_config: dict[str, Any] | Callable[[], dict[str, Any]]
                 | None = None, *,
                 flush_check_interval_ms: int = 1000,
                 recovery_point_checkpoint_interval_ms: int = 60000,
                 log_start_offset_checkpoint_interval_ms: int = 60000,
                 high_watermark_checkpoint_interval_ms: int = 5000,
                 producer_expiration_check_interval_ms: int = 600000,
                 retention_check_interval_ms: int = 300000,
                 on_dir_failure: Callable[[str, list[str]], None] | None = None,
                 producer_state_config: ProducerStateManagerConfig | None = None,
                 recovery_threads_per_data_dir: int | Callable[[], int] = 1) -> None:
        if not log_dirs:
            raise ValueError("at least one log dir is required")
        self.log_dirs = [os.path.abspath(d) for d in log_dirs]
        self.clock = clock
        # the broker's topic defaults (dynamic: a callable is read at each use)
        if callable(default_topic_config):
            self._topic_defaults = default_topic_config
        else:
            fixed = dict(default_topic_config or {})
            self._topic_defaults = lambda: fixed
        # producer.id.expiration.ms, shared by every log's producer state (read at use time)
        self.producer_state_config = producer_state_config or ProducerStateManagerConfig()
        self.logs: dict[TopicPartition, Log] = {}
        # Logs per dir (current and future), kept by the two maps below, so that placing a
        # new log is O(dirs), not O(logs) (a 10,000-partition create was O(N^2)).
        self._dir_counts: dict[str, int] = {}
        self._dir_of: dict[TopicPartition, str] = _CountingDirMap(self._dir_counts)
        # Intra-broker moves: the future log of a partition and the dir it is in.
        self.future_logs: dict[TopicPartition, Log] = {}
        self._future_dir_of: dict[TopicPartition, str] = _CountingDirMap(self._dir_counts)
        self.preferred_log_dirs: dict[TopicPartition, str] = {}
        self.had_clean_shutdown: dict[str, bool] = {}
        self._intervals = {
            "flush": flush_check_interval_ms,
            "recovery": recovery_point_checkpoint_interval_ms,
            "start": log_start_offset_checkpoint_interval_ms,
            "hw": high_watermark_checkpoint_interval_ms,
            "expire": producer_expiration_check_interval_ms,
            "retention": retention_check_interval_ms,
        }
        self._last_run: dict[str, int] = {}
        self._pending_log_deletes: list[tuple[int, Log]] = []
        self._loaded = False
        self._opened = False
        self._lock_fds: dict[str, int] = {}
        self._placing_existing = False
        self.offline_dirs: set[str] = set()
        self._on_dir_failure = on_dir_failure
        # num.recovery.threads.per.data.dir (dynamic: a callable is read at each load)
        threads = recovery_threads_per_data_dir
        self._recovery_threads = threads if callable(threads) else (lambda: threads)

    # ---------------------------------------------------------------- config

    @property
    def default_topic_config(self) -> dict[str, Any]:
        """The topic config a log gets where its topic sets nothing."""
        return self._topic_defaults()

    def config_for(self, topic: str, topic_config: dict[str, Any] | None = None) -> LogConfig:
        return LogConfig(topic_config, self.default_topic_config)

    # ---------------------------------------------------------------- loading

    def open_dirs(self) -> None:
        """Create, check and lock every log dir; an unusable one starts offline.

        Raises ``LogDirLockedError`` when another process holds a dir (nothing
        stays locked then) and ``NoLiveLogDirError`` when no dir is usable.
        """
        if self._opened:
            return
        if len(set(self.log_dirs)) < len(self.log_dirs):
            raise LogDirError("Duplicate log directory found: " + ", ".join(self.log_dirs))
        failures: dict[str, str] = {}
        try:
            for d in self.log_dirs:
                reason = self._open_dir(d)
                if reason is not None:
                    failures[d] = reason
        except LogDirLockedError:
            self._release_locks()
            raise
        if len(failures) == len(self.log_dirs):
            raise NoLiveLogDirError(
                "Shutdown broker because none of the specified log dirs from "
                f"{', '.join(self.log_dirs)} can be created or validated: "
                + "; ".join(failures.values()))
        for d, reason in failures.items():
            # Kafka's LogDirFailureChannel at start-up: the dir is offline, the rest serve.
            self.offline_dirs.add(d)
            _log.error("Failed to create or validate data directory %s (now offline): %s",
                       d, reason)
        self._opened = True

    def _open_dir(self, d: str) -> str | None:
        """Create, check and lock one dir; the reason it cannot be used, or None."""
        if not os.path.isdir(d):
            if os.path.lexists(d):
                return f"{d} is not a readable log directory."
            try:
                os.makedirs(d)
            except OSError as err:
                return f"Failed to create data directory {d}: {err.strerror}"
        if not os.access(d, os.R_OK | os.W_OK | os.X_OK):
            return f"{d} is not a readable log directory."
        try:
            fd = os.open(os.path.join(d, LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            return f"Disk error while locking directory {d}: {err.strerror}"
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            os.close(fd)
            if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise LogDirLockedError(
                    f"Failed to acquire lock on file {LOCK_FILE} in {d}. A Kafka instance in "
                    "another process or thread is using this directory.") from None
            return f"Disk error while locking directory {d}: {err.strerror}"
        self._lock_fds[d] = fd
        return None

    def _release_locks(self, delete: bool = False) -> None:
        for d, fd in self._lock_fds.items():
            if delete:
                # Kafka's FileLock.destroy at shutdown: the file goes too (still held, so
                # no other process can be holding it), and a dir handed to Kafka next
                # looks exactly as Kafka leaves its own.
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(d, LOCK_FILE))
            os.close(fd)   # closing the descriptor drops the flock
        self._lock_fds.clear()

    def load(self, cluster_id: str, node_id: int, topic_configs: TopicConfigs = None) -> None:
        """Open the dirs (if not yet), check meta.properties, open (and if needed
        recover) every log of the live dirs."""
        self.open_dirs()
        try:
            self._load_dirs(cluster_id, node_id, topic_configs)
        except BaseException:
            self.shutdown()   # lets go of the logs opened so far and of the locks
            raise

    def _load_dirs(self, cluster_id: str, node_id: int, topic_configs: TopicConfigs) -> None:
        ensure_meta_properties(self.live_log_dirs, cluster_id, node_id)
        for d in self.live_log_dirs:
            try:
                self._load_dir(d, topic_configs)
            except (CheckpointError, PartitionMetadataError, OSError) as err:
                # Kafka's LogManager.loadLogs: a dir whose files cannot be read goes
                # offline and the others serve; the file is named in the error.
                self._fail_dir_at_load(d, err)
        if not self.live_log_dirs:
            raise NoLiveLogDirError("Shutdown broker because all log dirs in "
                                    f"{', '.join(self.log_dirs)} have failed")
        self._loaded = True
        now = self.clock.time_ms()
        for k in self._intervals:
            self._last_run[k] = now

    def _load_dir(self, d: str, topic_configs: TopicConfigs) -> None:
        marker = os.path.join(d, CLEAN_SHUTDOWN_FILE)
        clean = os.path.exists(marker)
        self.had_clean_shutdown[d] = clean
        recovery = self._read_checkpoint(d, RECOVERY_POINT_CHECKPOINT)
        starts = self._read_checkpoint(d, LOG_START_OFFSET_CHECKPOINT)
        hws = self._read_checkpoint(d, REPLICATION_OFFSET_CHECKPOINT)
        todo: list[tuple[str, str, TopicPartition]] = []
        for name in sorted(os.listdir(d)):
            path = os.path.join(d, name)
            if not os.path.isdir(path):
                continue
            if name.endswith(DELETE_DIR_SUFFIX):
                # Kafka's loadLog: a deleted log found at start-up goes file.delete.delay.ms
                # after the load (kafka-delete-logs), not at once.
                self._pending_log_deletes.append(
                    (self.clock.time_ms() + self._default_delete_delay_ms(), _DeletedDir(path)))
                continue
            if name.endswith(FUTURE_DIR_SUFFIX):
                self._load_future(d, path, name, recovery, starts, hws, clean, topic_configs)
                continue
            if name.endswith(STRAY_DIR_SUFFIX):
                _log.warning("ignoring %s", path)
                continue
            key = parse_partition_dir_name(name)
            if key is None:
                continue
            if key in self.logs:
                raise LogDirError(f"Duplicate log directories for {name} are found in "
                                  f"{self._dir_of[key]} and {d}")
            todo.append((name, path, key))
        load = lambda item: self._load_log(item[1], item[2], recovery, starts, hws, clean,
                                           topic_configs)
        for (name, _path, key), log in self._load_logs(todo, load):
            if log.recovered_bytes_truncated:
                _log.warning("recovered %s: truncated %d bytes", name,
                             log.recovered_bytes_truncated)
            self.logs[key] = log
            self._dir_of[key] = d
        if clean:
            os.unlink(marker)

    def _load_logs(self, todo: list, load: Callable) -> list:
        """``(item, load(item))`` for each item, on num.recovery.threads.per.data.dir
        threads (Kafka's pool per dir).  With more than one, every load is let finish
        before the first error is raised, and the logs loaded meanwhile are let go."""
        threads = max(1, int(self._recovery_threads()))
        if threads == 1 or len(todo) < 2:
            return [(item, load(item)) for item in todo]
        with ThreadPoolExecutor(threads, thread_name_prefix="log-recovery") as pool:
            futures = [(item, pool.submit(load, item)) for item in todo]
        done, error = [], None
        for item, fut in futures:
            err = fut.exception()
            if err is None:
                done.append((item, fut.result()))
            elif error is None:
                error = err
        if error is not None:
            for _item, log in done:
                log.release()
            raise error
        return done

    def _load_future(self, d: str, path: str, name: str, recovery, starts, hws, clean: bool,
                     topic_configs: TopicConfigs) -> None:
        """A future log left by a move that was under way (Kafka's loadLog isFuture)."""
        key = parse_log_dir_name(name)
        if key is None:
            return
        if key in self.future_logs:
            raise LogDirError(f"Duplicate log directories found: {path}, "
                              f"{self.future_logs[key].dir}")
        log = self._load_log(path, key, recovery, starts, hws, clean, topic_configs)
        self.future_logs[key] = log
        self._future_dir_of[key] = d
        _log.info("loaded future log %s (a move to %s in progress)", path, d)

    def _load_log(self, path: str, key: TopicPartition, recovery, starts, hws, clean: bool,
                  topic_configs: TopicConfigs) -> Log:
        """A current or future log of ``key`` at ``path``, as its dir's checkpoints say."""
        cfg = self.config_for(key[0], _topic_config(topic_configs, key[0]))
        return Log.load(path, cfg, self.clock, recovery_point=recovery.get(key, 0),
                        log_start_offset=starts.get(key, 0), high_watermark=hws.get(key, 0),
                        had_clean_shutdown=clean, producer_state_config=self.producer_state_config)

    def _fail_dir_at_load(self, d: str, err: BaseException) -> None:
        """Let go of what was loaded from ``d`` and keep it offline."""
        for key in [k for k, where in self._dir_of.items() if where == d]:
            self.logs.pop(key).release()
            del self._dir_of[key]
        for key in [k for k, where in self._future_dir_of.items() if where == d]:
            self.future_logs.pop(key).release()
            del self._future_dir_of[key]
        self.offline_dirs.add(d)
        _log.error("Error while loading log dir %s (now offline): %s", d, err)

    async def load_async(self, cluster_id: str, node_id: int,
                         topic_configs: TopicConfigs = None) -> None:
        """``load`` in a worker thread, so recovery does not block the event loop."""
        await asyncio.to_thread(self.load, cluster_id, node_id, topic_configs)

    def _read_checkpoint(self, d: str, name: str) -> dict[TopicPartition, int]:
        path = os.path.join(d, name)
        try:
            return read_offset_checkpoint(path)
        except (CheckpointError, OSError, UnicodeDecodeError) as e:
            # Kafka warns and resets to no entries (recovery then starts at 0).
            _log.warning("error reading %s, resetting it: %s", path, e)
            return {}

    # ---------------------------------------------------------------- logs

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self.logs.get((topic, partition))

    def all_logs(self) -> list[Log]:
        return list(self.logs.values())

    def log_dir_of(self, topic: str, partition: int) -> str | None:
        return self._dir_of.get((topic, partition))

    @property
    def live_log_dirs(self) -> list[str]:
        return [d for d in self.log_dirs if d not in self.offline_dirs]

    def _next_log_dir(self) -> str:
        live = self.live_log_dirs
        if not live:
            raise OSError(f"no live log dir: every one of {self.log_dirs} has failed")
        if len(live) == 1:
            return live[0]
        counts = self._dir_counts
        return min(live, key=lambda d: (counts.get(d, 0), self.log_dirs.index(d)))

    # ---------------------------------------------------------------- dir failure

    def fail_dir(self, d: str, error: BaseException) -> None:
        """Take log dir ``d`` offline after an I/O error there (once; later calls are no-ops).

        Running out of descriptors (EMFILE, ENFILE) says nothing about the disk: the
        request that hit it fails, the dir stays online and a restart works."""
        if d in self.offline_dirs:
            return
        if getattr(error, "errno", None) in (errno.EMFILE, errno.ENFILE):
            _log.warning("Out of file descriptors in log dir %s: %s; the dir stays online", d, error)
            return
        self.offline_dirs.add(d)
        # The flush thread calls this too, while the loop may add or drop logs: iterate
        # over snapshots (one C-level copy each, atomic under the GIL).
        for key, log in list(self.logs.items()):
            if self._dir_of.get(key) == d:
                log.offline = True
        # Kafka drops the future logs of a failed dir (their moves stop; the current
        # replicas elsewhere carry on); their files stay for the next start.
        for key, where in list(self._future_dir_of.items()):
            if where != d:
                continue
            future = self.future_logs.pop(key, None)
            self._future_dir_of.pop(key, None)
            if future is not None:
                future.offline = True
                future.release()
        _log.error("Error while writing to log dir %s: %s; stopped serving its replicas", d, error)
        if self._on_dir_failure is not None:
            self._on_dir_failure(d, self.live_log_dirs)

    def fail_dir_of(self, topic: str, partition: int, error: BaseException) -> None:
        d = self._dir_of.get((topic, partition))
        if d is not None:
            self.fail_dir(d, error)

    def get_or_create_log(self, topic: str, partition: int,
                          topic_config: dict[str, Any] | None = None,
                          topic_id: str | None = None) -> Log:
        key = (topic, partition)
        log = self.logs.get(key)
        if log is not None:
            if topic_id is not None and log.topic_id is None:
                log.record_topic_id(topic_id)
            return log
        if self._placing_existing and self.offline_dirs:
            return self._offline_log(topic, partition, topic_config, topic_id)
        preferred = self.preferred_log_dirs.get(key)
        if preferred is not None and preferred in self.offline_dirs:
            raise OSError(errno.EIO, f"Can not create log for {topic}-{partition} because "
                                     f"its preferred log dir {preferred} is offline")
        d = preferred if preferred is not None else self._next_log_dir()
        path = os.path.join(d, partition_dir_name(topic, partition))
        log = Log.load(path, self.config_for(topic, topic_config), self.clock,
                       topic_id=topic_id, producer_state_config=self.producer_state_config)
        self.logs[key] = log
        self._dir_of[key] = d
        self.preferred_log_dirs.pop(key, None)   # satisfied
        return log

    # ---------------------------------------------------------------- moves between dirs

    def has_log_dir(self, d: str) -> bool:
        """Whether ``d`` is one of the configured log dirs (Kafka compares absolute paths)."""
        return d in self.log_dirs

    def get_future_log(self, topic: str, partition: int) -> Log | None:
        return self.future_logs.get((topic, partition))

    def future_log_dir_of(self, topic: str, partition: int) -> str | None:
        return self._future_dir_of.get((topic, partition))

    def maybe_update_preferred_log_dir(self, topic: str, partition: int, d: str) -> None:
        """Kafka's maybeUpdatePreferredLogDir: remember ``d`` unless the current or the
        future log is already there."""
        key = (topic, partition)
        if self._dir_of.get(key) != d and self._future_dir_of.get(key) != d:
            self.preferred_log_dirs[key] = d

    def create_future_log(self, topic: str, partition: int, d: str,
                          topic_config: dict[str, Any] | None = None) -> Log:
        """The partition's (empty) future log in live dir ``d`` (Kafka's getOrCreateLog
        with isFuture): blocking but short, a dir and empty segment files."""
        key = (topic, partition)
        current = self.logs.get(key)
        if current is None:
            raise KeyError(f"no current log for {topic}-{partition}")
        existing = self.future_logs.get(key)
        if existing is not None:
            return existing
        if self._dir_of[key] == d:
            raise ValueError(f"Can not create the future log for {topic}-{partition} in the "
                             "current log directory of this partition")
        if d in self.offline_dirs or d not in self.log_dirs:
            raise OSError(errno.EIO, f"Log directory {d} is offline")
        path = os.path.join(d, future_dir_name(topic, partition))
        cfg = current.config if topic_config is None else self.config_for(topic, topic_config)
        log = Log.load(path, cfg, self.clock, topic_id=current.topic_id,
                       producer_state_config=self.producer_state_config)
        self.future_logs[key] = log
        self._future_dir_of[key] = d
        self.preferred_log_dirs.pop(key, None)
        _log.info("created future log %s", path)
        return log

    def delete_future_log(self, topic: str, partition: int) -> bool:
        """Abandon a move: the future log goes the way of a deleted log."""
        key = (topic, partition)
        log = self.future_logs.pop(key, None)
        self._future_dir_of.pop(key, None)
        if log is None:
            return False
        self._schedule_log_delete(log)
        return True

    def replace_current_with_future(self, topic: str, partition: int) -> Log | None:
        """Kafka's replaceCurrentWithFutureLog: the future log becomes ``<topic>-<p>`` in
        its dir, takes the current one's high watermark, and the current one is renamed
        ``-delete`` (removed after file.delete.delay.ms); the old dir's checkpoints are
        rewritten without it.  Renames only: cheap enough for the event loop.  None
        (nothing done) while a flush thread is busy with either log: try again later."""
        key = (topic, partition)
        source, dest = self.logs.get(key), self.future_logs.get(key)
        if source is None or dest is None:
            raise OSError(errno.EIO, f"The {'current' if source is None else 'future'} "
                                     f"replica for {topic}-{partition} is offline")
        if not source.io_lock.acquire(blocking=False):
            return None
        try:
            if not dest.io_lock.acquire(blocking=False):
                return None
            try:
                return self._replace(key, source, dest)
            finally:
                dest.io_lock.release()
        finally:
            source.io_lock.release()

    def _replace(self, key: TopicPartition, source: Log, dest: Log) -> Log:
        topic, partition = key
        dest_dir, source_dir = self._future_dir_of[key], self._dir_of[key]
        try:
            dest.rename_dir(partition_dir_name(topic, partition))
        except OSError as err:
            self.fail_dir(dest_dir, err)
            raise
        dest.high_watermark = source.high_watermark
        # Topic config changes reach the partition's (current) log only: adopt its config.
        dest.config = source.config
        for seg in dest.segments:
            seg.index_interval_bytes = source.config.index_interval_bytes
        del self.future_logs[key], self._future_dir_of[key]
        self.logs[key] = dest
        self._dir_of[key] = dest_dir
        try:
            self._schedule_log_delete(source)
            self._checkpoint_dir(source_dir)
        except OSError as err:
            source.release()
            self.fail_dir(source_dir, err)
            raise
        _log.info("The current replica is successfully replaced with the future replica "
                  "for %s-%d", topic, partition)
        return dest

    def _default_delete_delay_ms(self) -> int:
        return LogConfig(None, self.default_topic_config).file_delete_delay_ms

    def _schedule_log_delete(self, log: Log) -> None:
        if log.offline:
            log.release()
            return
        # The flush thread writes into the dir by path (epoch checkpoint, partition.metadata):
        # wait for its flush of this log (at most one), so no write lands in a renamed dir.
        with log.io_lock:
            log.rename_for_delete(close=False)
        # Kafka's kafka-delete-logs waits the broker's default file.delete.delay.ms
        # (log.segment.delete.delay.ms, currentDefaultConfig), not the topic's.
        self._pending_log_deletes.append((self.clock.time_ms() + self._default_delete_delay_ms(),
                                          log))

    def _checkpoint_dir(self, d: str) -> None:
        """Rewrite ``d``'s recovery-point and log-start checkpoints (a log left it)."""
        items = self._by_dir().get(d, [])
        for name, offsets_of in ((RECOVERY_POINT_CHECKPOINT, _recovery_points),
                                 (LOG_START_OFFSET_CHECKPOINT, _log_start_offsets)):
            write_offset_checkpoint(os.path.join(d, name), offsets_of(items))

    @contextlib.contextmanager
    def placing_existing_partitions(self):
        """While the broker opens the partitions it had before: a log found in no live
        dir may be in an offline one (module docstring)."""
        self._placing_existing = True
        try:
            yield
        finally:
            self._placing_existing = False

    def _offline_log(self, topic: str, partition: int, topic_config: dict[str, Any] | None,
                     topic_id: str | None) -> Log:
        offline = [d for d in self.log_dirs if d in self.offline_dirs]
        d = offline[0]
        _log.error("Can not create log for %s-%d because log directories %s are offline",
                   topic, partition, ",".join(offline))
        log = Log(os.path.join(d, partition_dir_name(topic, partition)), topic, partition,
                  self.config_for(topic, topic_config), self.clock,
                  producer_state_config=self.producer_state_config)
        log.offline = True
        log.topic_id = topic_id
        self.logs[(topic, partition)] = log
        self._dir_of[(topic, partition)] = d
        return log

    def update_topic_config(self, topic: str, topic_config: dict[str, Any]) -> None:
        """Apply a topic's new full config to its logs."""
        cfg = self.config_for(topic, topic_config)
        for (t, _), log in list(self.logs.items()) + list(self.future_logs.items()):
            if t == topic:
                log.config = cfg
                for seg in log.segments:
                    seg.index_interval_bytes = cfg.index_interval_bytes

    def delete_log(self, topic: str, partition: int) -> bool:
        """Remove a partition's log now: its dir is renamed ``<tp>.<uuid>-delete``.

        Descriptors stay open (in-flight sendfiles finish) and the dir is
        removed by ``cleanup_logs`` after the broker's default file.delete.delay.ms (or at
        shutdown; a leftover ``-delete`` dir is removed at the next load).
        """
        key = (topic, partition)
        self.delete_future_log(topic, partition)   # Kafka's Partition.delete: both go
        self.preferred_log_dirs.pop(key, None)
        log = self.logs.pop(key, None)
        self._dir_of.pop(key, None)
        if log is None:
            return False
        self._schedule_log_delete(log)   # an offline one is only let go: its files stay
        return True

    def purge_deleted_logs(self, now_ms: int | None = None, force: bool = False) -> int:
        now = self.clock.time_ms() if now_ms is None else now_ms
        keep, n = [], 0
        for due, log in self._pending_log_deletes:
            if force or now >= due:
                log.release()
                shutil.rmtree(log.dir, ignore_errors=True)
                n += 1
            else:
                keep.append((due, log))
        self._pending_log_deletes = keep
        return n

    # ---------------------------------------------------------------- checkpoints

    def _by_dir(self) -> dict[str, list[tuple[TopicPartition, Log]]]:
        """Live dirs and their logs (an offline dir is never written again)."""
        out: dict[str, list[tuple[TopicPartition, Log]]] = {d: [] for d in self.live_log_dirs}
        for key, log in list(self.logs.items()):
            d = self._dir_of[key]
            if d in out:
                out[d].append((key, log))
        for key, log in list(self.future_logs.items()):   # checkpointed in their own dir
            d = self._future_dir_of.get(key)
            if d in out:
                out[d].append((key, log))
        return out

    def _write_checkpoints(self, name: str, offsets_of,
                           queue: list[CheckpointWrite] | None = None) -> None:
        """Each live dir's ``name`` file with ``offsets_of`` its logs, written now, or
        appended to ``queue`` for the caller to write (``write_checkpoint_files``)."""
        writes = [CheckpointWrite(d, os.path.join(d, name), offsets_of(items),
                                  next(_checkpoint_seq))
                  for d, items in self._by_dir().items()]
        if queue is not None:
            queue.extend(writes)
            return
        for d, err in write_checkpoint_files(writes):
            self.fail_dir(d, err)

    def checkpoint_recovery_points(self, queue: list[CheckpointWrite] | None = None) -> None:
        self._write_checkpoints(RECOVERY_POINT_CHECKPOINT, _recovery_points, queue)

    def checkpoint_log_start_offsets(self, queue: list[CheckpointWrite] | None = None) -> None:
        self._write_checkpoints(LOG_START_OFFSET_CHECKPOINT, _log_start_offsets, queue)

    def checkpoint_high_watermarks(self, queue: list[CheckpointWrite] | None = None) -> None:
        self._write_checkpoints(REPLICATION_OFFSET_CHECKPOINT,
                                lambda items: {k: log.high_watermark for k, log in items},
                                queue)

    def checkpoint(self) -> None:
        """Write recovery points, log start offsets and high watermarks."""
        self.checkpoint_recovery_points()
        self.checkpoint_log_start_offsets()
        self.checkpoint_high_watermarks()

    # ---------------------------------------------------------------- periodic work

    def flush_dirty(self, now_ms: int | None = None) -> int:
        """flush.ms policy, plus segments rolled since their last flush; returns flushes."""
        now = self.clock.time_ms() if now_ms is None else now_ms
        n = 0
        for key, log in list(self.logs.items()) + list(self.future_logs.items()):
            if log.offline:
                continue
            try:
                with log.io_lock:
                    if log.offline or log.is_closed:   # deleted or failed meanwhile
                        continue
                    if log.flush_if_due(now):
                        n += 1
                        continue
                    rolled = log.active_segment.base_offset
                    if rolled > log.recovery_point:
                        log.flush(rolled)  # Kafka flushes a rolled segment after the roll
                        n += 1
            except OSError as err:
                if log.is_future:
                    self.fail_dir(self._future_dir_of.get(key, log.parent_dir), err)
                else:
                    self.fail_dir_of(*key, err)
        return n

    def periodic(self, now_ms: int | None = None,
                 checkpoint_queue: list[CheckpointWrite] | None = None) -> list[str]:
        """Run whichever periodic tasks are due; returns their names.  With
        ``checkpoint_queue`` the due checkpoints' contents are taken now and appended to
        it instead of written: the caller writes them off the event loop (their fsyncs
        would stall it) and hands failures to ``fail_dir``."""
        now = self.clock.time_ms() if now_ms is None else now_ms
        done = []
        tasks = [("flush", self.flush_dirty),
                 ("hw", lambda: self.checkpoint_high_watermarks(checkpoint_queue)),
                 ("recovery", lambda: self.checkpoint_recovery_points(checkpoint_queue)),
                 ("start", lambda: self.checkpoint_log_start_offsets(checkpoint_queue)),
                 ("expire", self._expire_producers),
                 ("retention", self.cleanup_logs)]
        for name, fn in tasks:
            if now - self._last_run.get(name, 0) >= self._intervals[name]:
                if name == "flush":
                    fn(now)  # type: ignore[call-arg]
                else:
                    fn()
                self._last_run[name] = now
                done.append(name)
        # Deleted logs go once their file.delete.delay.ms is over, not at the next retention
        # pass (Kafka's kafka-delete-logs task); the pending list is short.
        if self._pending_log_deletes and self.purge_deleted_logs(now):
            done.append("delete-logs")
        return done

    def cleanup_logs(self) -> int:
        """Retention pass over every log plus removal of due ``.deleted`` files."""
        now = self.clock.time_ms()
        n = 0
        for key, log in list(self.logs.items()):
            if log.offline:
                continue
            try:
                n += log.delete_old_segments(now)
                log.purge_deleted_segments(now)
            except OSError as err:
                self.fail_dir_of(*key, err)
        self.purge_deleted_logs(now)
        return n

    def _expire_producers(self) -> None:
        now = self.clock.time_ms()
        for log in list(self.logs.values()):
            log.producer_state.remove_expired(now)

    # ---------------------------------------------------------------- shutdown

    def shutdown(self, broker_epoch: int = -1) -> None:
        """Flush and close every log, write checkpoints and the clean-shutdown marker
        (live dirs only: an offline dir is left to recovery at the next start), then
        unlock the dirs.  Before a completed ``load``: only let go (module docstring)."""
        try:
            if self._loaded:
                self._close_all(broker_epoch)
            else:
                for log in list(self.logs.values()) + list(self.future_logs.values()):
                    log.release()
                self.logs.clear()
                self._dir_of.clear()
                self.future_logs.clear()
                self._future_dir_of.clear()
        finally:
            self._release_locks(delete=True)
            self._opened = self._loaded = False

    def _close_all(self, broker_epoch: int) -> None:
        """Close every log without a sync per file (snapshots, trimmed indexes, data
        appended since the last flush), then make each live dir durable in one pass
        (``_sync_dir``: syncfs), and only then move the recovery points to the log ends
        and write the checkpoints and the clean-shutdown marker: the marker still
        promises that everything before it is on disk."""
        for key, log in list(self.logs.items()) + list(self.future_logs.items()):
            # An offline log is only let go: trimming its mmap'd indexes on a full
            # disk would be SIGBUS, and recovery rebuilds them at the next start.
            if log.offline:
                log.release()
                continue
            try:
                log.close(sync=False)
            except OSError as err:
                log.release()
                self.fail_dir(log.parent_dir, err)
        for d, items in self._by_dir().items():
            try:
                _sync_dir(d)
            except OSError as err:
                self.fail_dir(d, err)
                continue
            for _key, log in items:
                log.recovery_point = log.log_end_offset
        self.checkpoint()
        for d in self.live_log_dirs:
            if os.path.isdir(d):
                atomic_write(os.path.join(d, CLEAN_SHUTDOWN_FILE),
                             json.dumps({"version": 0, "brokerEpoch": broker_epoch},
                                        separators=(",", ":")).encode())
        # Logs still waiting for file.delete.delay.ms stay on disk as ``-delete`` dirs for
        # the next start (Kafka's shutdown leaves logsToBeDeleted alone); due ones go.
        self.purge_deleted_logs()
        for _due, log in self._pending_log_deletes:
            log.release()
        self._pending_log_deletes = []
        self.logs.clear()
        self._dir_of.clear()
        self.future_logs.clear()
        self._future_dir_of.clear()


def _sync_dir(d: str) -> None:
    """Make everything written under ``d`` durable: syncfs(2) on Linux (one call for the
    file system holding the dir: file data, mapped index pages, renames and new
    entries of every partition dir), else sync(2)."""
    fd = os.open(d, os.O_RDONLY)
    try:
        if _libc_syncfs is not None:
            if _libc_syncfs(fd) != 0:
                err = ctypes.get_errno()
                raise OSError(err, f"syncfs of {d}: {os.strerror(err)}")
        else:
            os.sync()
    finally:
        os.close(fd)


def _load_syncfs():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        fn = libc.syncfs
    except (OSError, AttributeError, TypeError):
        return None
    fn.argtypes = (ctypes.c_int,)
    fn.restype = ctypes.c_int
    return fn


_libc_syncfs = _load_syncfs()


class _CountingDirMap(dict):
    """A key -> log dir map that keeps ``counts[dir]`` (shared by several maps) equal to
    the number of its keys in each dir; only the mutators LogManager uses are counted."""

    def __init__(self, counts: dict[str, int]) -> None:
        super().__init__()
        self._counts = counts

    def _add(self, d: str, n: int) -> None:
        self._counts[d] = self._counts.get(d, 0) + n

    def __setitem__(self, key, d: str) -> None:
        old = super().get(key)
        if old is not None:
            self._add(old, -1)
        super().__setitem__(key, d)
        self._add(d, 1)

    def __delitem__(self, key) -> None:
        d = super().pop(key)
        self._add(d, -1)

    def pop(self, key, *default):
        if key in self:
            d = super().pop(key)
            self._add(d, -1)
            return d
        if default:
            return default[0]
        raise KeyError(key)

    def clear(self) -> None:
        for d in self.values():
            self._add(d, -1)
        super().clear()

    def update(self, *args, **kwargs) -> None:   # type: ignore[override]
        for k, v in dict(*args, **kwargs).items():
            self[k] = v

    def setdefault(self, key, default=None):   # type: ignore[override]
        if key not in self:
            self[key] = default
        return self[key]

    def popitem(self):
        key, d = super().popitem()
        self._add(d, -1)
        return key, d


class _DeletedDir:
    """A ``-delete`` dir found at start-up: nothing open, removed when due."""

    def __init__(self, path: str) -> None:
        self.dir = path

    def release(self) -> None:
        pass


def _topic_config(topic_configs: TopicConfigs, topic: str) -> dict[str, Any] | None:
    if topic_configs is None:
        return None
    if callable(topic_configs):
        return topic_configs(topic)
    return topic_configs.get(topic)


def _recovery_points(items) -> dict[TopicPartition, int]:
    return {k: log.recovery_point for k, log in items}


def _log_start_offsets(items) -> dict[TopicPartition, int]:
    """Only the log starts a checkpoint must keep: those past the first segment's base."""
    return {k: log.log_start_offset for k, log in items
            if log.log_start_offset > log.segments[0].base_offset}
