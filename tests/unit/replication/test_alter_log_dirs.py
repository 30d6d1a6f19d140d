"""Moves between the log dirs of one broker, in process over real files: LogManager's future
logs (create, load at start-up, replace, delete) and the copier of
kafkapy.replication.alter_log_dirs (throttle, reconciliation, re-targeting, failures)."""
from __future__ import annotations

import asyncio
import os
import time
import uuid
from dataclasses import dataclass, field

import pytest

from kafkapy.clock import SYSTEM_CLOCK
from kafkapy.log.manager import LogManager
from kafkapy.metadata.cache import MetadataCache, PartitionState, TopicMetadata
from kafkapy.protocol.errors import ErrorCode
from kafkapy.records.batch import iter_headers, read_header
from kafkapy.records.record import build_batch
from kafkapy.replication.alter_log_dirs import AlterLogDirsManager
from kafkapy.replication.partition import Partition

KEY = ("t", 0)


def _manager(tmp_path) -> LogManager:
    m = LogManager([str(tmp_path / "a"), str(tmp_path / "b")])
    m.load("cluster", 0)
    return m


def _append(log, n: int, size: int = 5000, epoch: int = 0) -> None:
    for _ in range(n):
        batch = bytearray(build_batch([(None, b"x" * size, [], int(time.time() * 1000))]))
        log.append_as_leader(batch, read_header(batch, 0), epoch)


def _copy(current, future) -> None:
    data = current.read_bytes(future.log_end_offset, 1 << 24)
    for header in iter_headers(memoryview(data)):
        future.append_as_follower(data, header)


@dataclass
class _Broker:
    """Broker 0's parts an AlterLogDirsManager is given: its logs, config (a dict, changed
    by tests as a dynamic config would be), metadata cache, and the partitions it hosts
    (the replica manager's); ``swapped``: the partitions whose log was swapped."""
    log_manager: LogManager
    config: dict
    cache: MetadataCache = field(default_factory=lambda: MetadataCache("cluster", 0))
    partitions: dict = field(default_factory=dict)
    swapped: list = field(default_factory=list)

    def mover(self) -> AlterLogDirsManager:
        return AlterLogDirsManager(config=self.config, clock=SYSTEM_CLOCK,
                                   log_manager=self.log_manager, node_id=0, cache=self.cache,
                                   partition_of=self.partitions.get,
                                   log_swapped=self.swapped.append)


def _broker(logs: LogManager, **config) -> _Broker:
    return _Broker(logs, {"replica.fetch.backoff.ms": 20, **config})


def _host(broker: _Broker, topic="t", index=0, config=None):
    """A partition this broker leads (single replica), on a new log."""
    log = broker.log_manager.get_or_create_log(topic, index, config or {"segment.bytes": 65536})
    state = PartitionState(index, [0], 0, 0, [0])
    broker.partitions[(topic, index)] = Partition(topic, index, log, state, 0)
    return log


async def _until_moved(mover, key=KEY, timeout=20.0):
    deadline = time.monotonic() + timeout
    while mover.is_moving(key) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert not mover.is_moving(key)


def _dirs(logs):
    return [sorted(n for n in os.listdir(d) if n.startswith("t-")) for d in logs.log_dirs]


# ---------------------------------------------------------------- LogManager


def test_future_log_is_loaded_at_start_up_and_replaced(tmp_path):
    logs = _manager(tmp_path)
    current = logs.get_or_create_log("t", 0)
    src = logs.log_dir_of("t", 0)
    dst = next(d for d in logs.log_dirs if d != src)
    _append(current, 3)
    future = logs.create_future_log("t", 0, dst)
    assert future.is_future and future.parent_dir == dst
    assert os.path.basename(future.dir).startswith("t-0.") and future.dir.endswith("-future")
    _copy(current, future)
    logs.shutdown()

    logs = _manager(tmp_path)
    future = logs.get_future_log("t", 0)
    assert future is not None and future.log_end_offset == 3
    assert logs.future_log_dir_of("t", 0) == dst and logs.log_dir_of("t", 0) == src
    new = logs.replace_current_with_future("t", 0)
    assert logs.get_log("t", 0) is new and logs.log_dir_of("t", 0) == dst
    assert logs.get_future_log("t", 0) is None
    assert os.path.basename(new.dir) == "t-0" and os.path.isdir(os.path.join(dst, "t-0"))
    assert not os.path.exists(os.path.join(src, "t-0"))
    logs.purge_deleted_logs(force=True)
    assert _dirs(logs) == ([[], ["t-0"]] if dst == logs.log_dirs[1] else [["t-0"], []])
    _append(new, 1)          # the renamed log takes writes at its new path
    logs.shutdown()
    logs = _manager(tmp_path)
    assert logs.get_log("t", 0).log_end_offset == 4 and logs.log_dir_of("t", 0) == dst
    logs.shutdown()


def test_preferred_dir_and_delete(tmp_path):
    logs = _manager(tmp_path)
    other = logs.log_dirs[1]
    logs.maybe_update_preferred_log_dir("t", 0, other)
    assert logs.get_or_create_log("t", 0) is not None and logs.log_dir_of("t", 0) == other
    assert ("t", 0) not in logs.preferred_log_dirs
    logs.create_future_log("t", 0, logs.log_dirs[0])
    logs.get_or_create_log("u", 0)
    with pytest.raises(ValueError):     # never in the current log's own dir
        logs.create_future_log("u", 0, logs.log_dir_of("u", 0))
    assert logs.delete_log("t", 0)
    assert logs.get_future_log("t", 0) is None
    logs.purge_deleted_logs(force=True)
    assert _dirs(logs) == [[], []]
    logs.shutdown()


def test_failed_dir_drops_its_future_logs(tmp_path):
    logs = _manager(tmp_path)
    logs.get_or_create_log("t", 0)
    dst = [d for d in logs.log_dirs if d != logs.log_dir_of("t", 0)][0]
    future = logs.create_future_log("t", 0, dst)
    logs.fail_dir(dst, OSError(5, "EIO"))
    assert logs.get_future_log("t", 0) is None and future.offline
    assert not logs.get_log("t", 0).offline
    logs.shutdown()


# ---------------------------------------------------------------- the copier


def test_throttled_move_while_writing(tmp_path):
    async def run():
        logs = _manager(tmp_path)
        broker = _broker(logs, **{"replica.alter.log.dirs.io.max.bytes.per.second": 200_000})
        current = _host(broker)
        _append(current, 100)                       # ~500 KB in ~8 segments
        src = logs.log_dir_of(*KEY)
        dst = [d for d in logs.log_dirs if d != src][0]
        mover = broker.mover()
        assert mover.alter({KEY: dst}) == {KEY: ErrorCode.NO_ERROR}
        await asyncio.sleep(0.3)
        assert mover.is_moving(KEY) and 0 < mover.offset_lag(KEY) <= 100   # throttled
        _append(current, 10)                        # writes go on meanwhile
        broker.config["replica.alter.log.dirs.io.max.bytes.per.second"] = 2**63 - 1
        await _until_moved(mover)
        moved = broker.partitions[KEY].log
        assert moved is logs.get_log(*KEY) and logs.log_dir_of(*KEY) == dst
        assert moved.log_end_offset == 110 and len(moved.segments) > 4
        assert mover.quota.rate() > 0 and mover.moves_completed == 1
        assert broker.swapped == [KEY], "waiting fetches woken once, after the swap"
        assert mover.alter({KEY: dst}) == {KEY: ErrorCode.NO_ERROR}   # already there
        assert not mover.is_moving(KEY)
        await mover.shutdown()
        logs.shutdown()
    asyncio.run(run())


def test_retarget_to_the_current_dir_abandons_the_move(tmp_path):
    async def run():
        logs = _manager(tmp_path)
        broker = _broker(logs, **{"replica.alter.log.dirs.io.max.bytes.per.second": 1000})
        current = _host(broker)
        _append(current, 40)
        src = logs.log_dir_of(*KEY)
        dst = [d for d in logs.log_dirs if d != src][0]
        mover = broker.mover()
        assert mover.alter({KEY: dst}) == {KEY: ErrorCode.NO_ERROR}
        await asyncio.sleep(0.1)
        assert mover.alter({KEY: src}) == {KEY: ErrorCode.NO_ERROR}
        assert not mover.is_moving(KEY) and logs.get_future_log(*KEY) is None
        assert logs.log_dir_of(*KEY) == src
        assert mover.alter({KEY: "/not/a/log/dir"}) == {KEY: ErrorCode.LOG_DIR_NOT_FOUND}
        broker.cache.put_topic(TopicMetadata("gone", uuid.uuid4(), {
            0: PartitionState(0, [1], 1, 0, [1])}))     # known, hosted elsewhere
        assert mover.alter({("gone", 0): dst}) == {("gone", 0): ErrorCode.REPLICA_NOT_AVAILABLE}
        assert logs.preferred_log_dirs[("gone", 0)] == dst
        assert mover.alter({("unknown", 0): dst}) == {
            ("unknown", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        long_topic = "x" * 220
        assert mover.alter({(long_topic, 0): dst}) == {
            (long_topic, 0): ErrorCode.INVALID_TOPIC_EXCEPTION}
        await mover.shutdown()
        logs.shutdown()
    asyncio.run(run())


def test_future_ahead_of_a_truncated_current_log_is_truncated(tmp_path):
    async def run():
        logs = _manager(tmp_path)
        broker = _broker(logs, **{"replica.alter.log.dirs.io.max.bytes.per.second": 1})
        current = _host(broker)
        _append(current, 20, size=100, epoch=1)
        logs.shutdown()

        logs = _manager(tmp_path)
        broker = _broker(logs, **{"replica.alter.log.dirs.io.max.bytes.per.second": 1})
        current = _host(broker)
        dst2 = [d for d in logs.log_dirs if d != logs.log_dir_of(*KEY)][0]
        future = logs.create_future_log("t", 0, dst2)
        _copy(current, future)
        current.truncate_to(15)                     # a follower truncated by its leader
        _append(current, 3, size=100, epoch=2)      # then took different records
        mover = broker.mover()
        mover.maybe_add_partitions([KEY])
        await _until_moved(mover)
        moved = logs.get_log(*KEY)
        assert logs.log_dir_of(*KEY) == dst2 and moved.log_end_offset == 18
        assert moved.leader_epoch_cache.entries == [(1, 0), (2, 15)]
        await mover.shutdown()
        logs.shutdown()
    asyncio.run(run())


def test_several_partitions_move_on_one_copier_per_log_dir(tmp_path):
    async def run():
        logs = _manager(tmp_path)
        broker = _broker(logs)
        keys = [("t", i) for i in range(6)]
        for key in keys:
            _append(_host(broker, *key), 30, size=2000)
        mover = broker.mover()
        assert len(mover._workers) == 2          # Kafka's default: one per log dir
        targets = {key: next(d for d in logs.log_dirs if d != logs.log_dir_of(*key))
                   for key in keys}
        assert set(mover.alter(targets).values()) == {ErrorCode.NO_ERROR}
        for key in keys:
            await _until_moved(mover, key)
        assert {key: logs.log_dir_of(*key) for key in keys} == targets
        assert all(logs.get_log(*key).log_end_offset == 30 for key in keys)
        assert not logs.future_logs and mover.moves_completed == 6
        await mover.shutdown()
        logs.shutdown()
    asyncio.run(run())


def test_diverging_end_by_leader_epochs(tmp_path):
    from kafkapy.replication.alter_log_dirs import _diverging_end
    logs = _manager(tmp_path)
    current = logs.get_or_create_log("t", 0)
    _append(current, 20, size=10, epoch=1)
    future = logs.create_future_log("t", 0, [d for d in logs.log_dirs
                                             if d != logs.log_dir_of("t", 0)][0])
    _copy(current, future)
    assert _diverging_end(current, future) == 20          # a prefix: nothing to cut
    _append(future, 5, size=10, epoch=3)                  # an epoch the current never had
    _append(current, 2, size=10, epoch=2)
    assert _diverging_end(current, future) == 20
    current.truncate_to(12)                               # the current log lost its tail
    assert _diverging_end(current, future) == 12
    logs.shutdown()


def test_truncation_during_a_read_is_not_swapped_in(tmp_path, monkeypatch):
    """The current log (a follower) is truncated and refilled with another epoch's records
    to the same log end while the copier reads off the loop: the bytes read are stale,
    and the future log must be cut back before any swap (it would serve them)."""
    from kafkapy.replication import alter_log_dirs as module

    async def run():
        logs = _manager(tmp_path)
        broker = _broker(logs)
        current = _host(broker, config={"segment.bytes": 1 << 20})
        _append(current, 20, size=100, epoch=1)
        loop = asyncio.get_running_loop()
        read = module._read_slices
        calls = []

        def refill() -> None:
            current.truncate_to(15)                  # the new leader's log diverged at 15
            _append(current, 5, size=100, epoch=2)   # same log end, other records

        def read_then_refill(slices):
            data = read(slices)
            if not calls:
                calls.append(1)
                loop.call_soon_threadsafe(refill)    # runs before the copier resumes
            return data

        monkeypatch.setattr(module, "_read_slices", read_then_refill)
        mover = broker.mover()
        dst = next(d for d in logs.log_dirs if d != logs.log_dir_of(*KEY))
        assert mover.alter({KEY: dst}) == {KEY: ErrorCode.NO_ERROR}
        await _until_moved(mover)
        moved = logs.get_log(*KEY)
        assert calls and logs.log_dir_of(*KEY) == dst and moved.log_end_offset == 20
        assert moved.leader_epoch_cache.entries == [(1, 0), (2, 15)]
        assert [h.partition_leader_epoch for h in
                iter_headers(memoryview(moved.read_bytes(0, 1 << 24)))] == [1] * 15 + [2] * 5
        await mover.shutdown()
        logs.shutdown()
    asyncio.run(run())


def test_abandoned_move_during_a_flush_fails_no_dir(tmp_path):
    """The flush thread is writing the future log's files (by path) when the loop
    abandons the move (the future log renamed ``-delete``): no write may land in a dir
    that moved, and no log dir goes offline for it."""
    import threading
    logs = _manager(tmp_path)
    current = logs.get_or_create_log("t", 0)
    _append(current, 3, epoch=1)
    dst = next(d for d in logs.log_dirs if d != logs.log_dir_of("t", 0))
    future = logs.create_future_log("t", 0, dst)
    _copy(current, future)                       # epochs assigned, not yet fsynced
    in_flush, proceed = threading.Event(), threading.Event()
    epoch_flush = future.leader_epoch_cache.flush

    def slow_flush():
        in_flush.set()
        proceed.wait(5)
        epoch_flush()
    future.leader_epoch_cache.flush = slow_flush
    flusher = threading.Thread(target=logs.flush_dirty, args=(2 ** 64,))
    flusher.start()
    try:
        assert in_flush.wait(5)
        threading.Timer(0.2, proceed.set).start()
        assert logs.delete_future_log("t", 0)     # the loop's side, mid-flush
    finally:
        proceed.set()
        flusher.join(10)
    assert not flusher.is_alive()
    assert logs.offline_dirs == set() and not current.offline
    logs.purge_deleted_logs(force=True)
    assert _dirs(logs) == [["t-0"], []] if dst == logs.log_dirs[1] else [[], ["t-0"]]
    logs.shutdown()
