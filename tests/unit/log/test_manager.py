"""LogManager: load, placement, checkpoints, clean/unclean restart, delete."""
from __future__ import annotations

import json
import os

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkapy.clock import MockClock
from kafkapy.log.checkpoint import read_offset_checkpoint
from kafkapy.log.manager import CLEAN_SHUTDOWN_FILE, LogManager, write_checkpoint_files
from kafkapy.log.meta_properties import InconsistentMetaPropertiesError
from kafkapy.records.batch import validate_for_append

TS = 1_700_000_000_000


def batch(n=3):
    b = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    for i in range(n):
        b.append(i, timestamp=TS + i, key=None, value=b"x" * 50, headers=[])
    buf = bytearray(b.build())
    return buf, validate_for_append(buf, 1 << 20, 9)[0]


@pytest.fixture
def dirs(tmp_path):
    return [str(tmp_path / "d1"), str(tmp_path / "d2")]


def new_manager(dirs, clock=None):
    m = LogManager(dirs, clock or MockClock(TS), {"segment.bytes": 600})
    m.load("cluster-A", 1)
    return m


def test_placement_and_checkpoints(dirs):
    m = new_manager(dirs)
    logs = [m.get_or_create_log("t", p, None, "AAAAAAAAAAAAAAAAAAAAAQ") for p in range(4)]
    assert sorted(m.log_dir_of("t", p) for p in range(4)) == sorted(dirs * 2)
    assert m.get_or_create_log("t", 0) is logs[0]
    metadata_file = os.path.join(logs[0].dir, "partition.metadata")
    assert not os.path.exists(metadata_file)    # written off the request path, by the flush
    logs[0].flush()
    assert open(metadata_file).read().endswith(
        "topic_id: AAAAAAAAAAAAAAAAAAAAAQ\n")
    for _ in range(5):
        logs[0].append_as_leader(*batch(), 0)
    logs[0].high_watermark = logs[0].log_end_offset
    logs[0].flush()
    m.checkpoint()
    d0 = m.log_dir_of("t", 0)
    assert read_offset_checkpoint(os.path.join(d0, "replication-offset-checkpoint"))[
        ("t", 0)] == 15
    assert read_offset_checkpoint(os.path.join(d0, "recovery-point-offset-checkpoint"))[
        ("t", 0)] == 15
    assert read_offset_checkpoint(os.path.join(d0, "log-start-offset-checkpoint")) == {}
    m.shutdown()


def test_clean_restart_keeps_leo_and_hw(dirs):
    m = new_manager(dirs)
    log = m.get_or_create_log("orders", 2)
    for _ in range(6):
        log.append_as_leader(*batch(), 0)
    log.high_watermark = 12
    nseg = len(log.segments)
    assert nseg > 1
    m.shutdown()
    for d in dirs:
        marker = os.path.join(d, CLEAN_SHUTDOWN_FILE)
        assert json.load(open(marker)) == {"version": 0, "brokerEpoch": -1}
    m2 = new_manager(dirs)
    assert all(m2.had_clean_shutdown.values())
    assert not any(os.path.exists(os.path.join(d, CLEAN_SHUTDOWN_FILE)) for d in dirs)
    log2 = m2.get_log("orders", 2)
    assert log2.log_end_offset == 18 and log2.high_watermark == 12
    assert len(log2.segments) == nseg
    assert log2.append_as_leader(*batch(1), 0).first_offset == 18
    m2.shutdown()


def test_unclean_restart_recovers(dirs):
    m = new_manager(dirs)
    log = m.get_or_create_log("orders", 0)
    for _ in range(4):
        log.append_as_leader(*batch(), 0)
    path = log.segments[-1].log_path
    m.checkpoint()
    # crash: no shutdown, torn last write; the dir locks die with the process
    for s in log.segments:
        s.release()
    m._release_locks()
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) - 3)
    m2 = new_manager(dirs)
    assert not any(m2.had_clean_shutdown.values())
    log2 = m2.get_log("orders", 0)
    assert log2.log_end_offset == 9
    # Kafka's LogLoader: recovery does not fsync, the checkpointed point (0) stays
    assert log2.recovery_point == 0
    m2.shutdown()
    m3 = new_manager(dirs)   # the clean shutdown synced the dir and moved it
    assert all(m3.had_clean_shutdown.values())
    assert m3.get_log("orders", 0).recovery_point == 9
    m3.shutdown()


def test_wrong_cluster_refused(dirs):
    m = new_manager(dirs)
    m.shutdown()
    m2 = LogManager(dirs, MockClock(TS), {})
    with pytest.raises(InconsistentMetaPropertiesError):
        m2.load("cluster-B", 1)
    with pytest.raises(InconsistentMetaPropertiesError):
        LogManager(dirs, MockClock(TS), {}).load("cluster-A", 2)


def test_delete_log_and_leftover_delete_dirs(dirs):
    m = new_manager(dirs)
    log = m.get_or_create_log("gone", 0)
    log.append_as_leader(*batch(), 0)
    d = m.log_dir_of("gone", 0)
    sl = log.read(0, 1000)[0]
    assert m.delete_log("gone", 0)
    assert m.get_log("gone", 0) is None
    [renamed] = [n for n in os.listdir(d) if n.startswith("gone-0")]
    assert renamed.endswith("-delete") and len(renamed) == len("gone-0.") + 32 + 7
    assert sl.read_bytes()  # descriptor still valid for an in-flight fetch
    assert m.cleanup_logs() == 0 and os.path.exists(os.path.join(d, renamed))
    m.clock.advance(60_000)
    m.cleanup_logs()
    assert not [n for n in os.listdir(d) if n.startswith("gone-0")]
    os.makedirs(os.path.join(d, "x-1.0123456789abcdef0123456789abcdef-delete"))
    m.shutdown()
    m2 = new_manager(dirs)
    # Kafka's loadLog: a leftover -delete dir goes file.delete.delay.ms after the load (a
    # shutdown before that leaves it for the next start).
    assert [n for n in os.listdir(d) if n.endswith("-delete")]
    assert m2.all_logs() == []
    m2.clock.advance(60_000)
    m2.cleanup_logs()
    assert not [n for n in os.listdir(d) if n.endswith("-delete")]
    m2.shutdown()


def periodic_manager(dirs, batches: int):
    """A manager checkpointing high watermarks every 5 s, with log p-0 holding ``batches``
    batches of 3 records."""
    clock = MockClock(TS)
    m = LogManager(dirs, clock, {"segment.bytes": 600}, high_watermark_checkpoint_interval_ms=5000)
    m.load("cluster-A", 1)
    log = m.get_or_create_log("p", 0)
    for _ in range(batches):
        log.append_as_leader(*batch(), 0)
    return clock, m, log


def test_periodic_flushes_rolled_segments_and_checkpoints(dirs):
    clock, m, log = periodic_manager(dirs, batches=5)
    assert log.recovery_point == 0
    clock.advance(5000)
    done = m.periodic()
    assert "flush" in done and "hw" in done and "recovery" not in done
    assert log.recovery_point == log.active_segment.base_offset > 0
    assert os.path.exists(os.path.join(m.log_dir_of("p", 0), "replication-offset-checkpoint"))
    m.shutdown()


def test_periodic_can_hand_its_checkpoints_to_the_caller_to_write(dirs):
    clock, m, log = periodic_manager(dirs, batches=2)
    log.high_watermark = 6
    path = os.path.join(m.log_dir_of("p", 0), "replication-offset-checkpoint")
    clock.advance(5000)
    queue = []
    assert "hw" in m.periodic(checkpoint_queue=queue)
    assert not os.path.exists(path)     # taken, not written
    assert {w.path for w in queue} == {os.path.join(d, "replication-offset-checkpoint")
                                       for d in dirs}
    log.high_watermark = 3              # contents were taken when periodic ran
    assert write_checkpoint_files(queue) == []
    assert read_offset_checkpoint(path) == {("p", 0): 6}
    m.shutdown()


def test_a_checkpoint_file_never_goes_back_to_older_contents(dirs):
    clock, m, log = periodic_manager(dirs, batches=3)
    log.high_watermark = 3
    clock.advance(5000)
    older = []
    m.periodic(checkpoint_queue=older)
    log.high_watermark = 9
    m.checkpoint_high_watermarks()      # written at once, with contents taken later
    path = os.path.join(m.log_dir_of("p", 0), "replication-offset-checkpoint")
    assert write_checkpoint_files(older) == []      # finishing late: skipped
    assert read_offset_checkpoint(path) == {("p", 0): 9}
    m.shutdown()


def test_a_checkpoint_that_cannot_be_written_names_its_dir(dirs, tmp_path):
    m = new_manager(dirs)
    m.get_or_create_log("p", 0)
    queue = []
    m.checkpoint_high_watermarks(queue)
    gone = tmp_path / "gone"
    bad = queue[0]._replace(log_dir=str(gone), path=str(gone / "replication-offset-checkpoint"))
    failed = write_checkpoint_files([bad, *queue[1:]])
    assert [d for d, _ in failed] == [str(gone)] and isinstance(failed[0][1], OSError)
    m.shutdown()


def _disk_full(log) -> None:
    """Point the active segment's descriptor at /dev/full: the next write fails
    with ENOSPC from the kernel, as on a full disk."""
    full = os.open("/dev/full", os.O_WRONLY)
    os.dup2(full, log.active_segment._fd)
    os.close(full)


def test_a_failed_write_takes_its_dir_offline_and_spares_the_other(dirs):
    from kafkapy.metadata.cache import PartitionState
    from kafkapy.protocol.errors import ErrorCode, KafkaError
    from kafkapy.replication.partition import Partition

    failures = []
    m = LogManager(dirs, MockClock(TS), {"segment.bytes": 600},
                   on_dir_failure=lambda d, live: failures.append((d, live)))
    m.load("cluster-A", 1)
    parts = []
    for p in range(2):
        log = m.get_or_create_log("t", p)
        parts.append(Partition("t", p, log, PartitionState(p, [1], 1, 0, [1]), 1,
                               lambda err, p=p: m.fail_dir_of("t", p, err)))
    broken, healthy = parts
    assert m.log_dir_of("t", 0) != m.log_dir_of("t", 1)
    assert broken.append_as_leader(bytes(batch()[0]), 9).error_code == 0
    bad_dir, good_dir = m.log_dir_of("t", 0), m.log_dir_of("t", 1)
    m.checkpoint()
    before = open(os.path.join(bad_dir, "recovery-point-offset-checkpoint")).read()

    _disk_full(broken.log)
    result = broken.append_as_leader(bytes(batch()[0]), 9)
    assert result.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert "No space left on device" in result.error_message
    assert failures == [(bad_dir, [good_dir])] and m.offline_dirs == {bad_dir}
    assert broken.log.log_end_offset == 3          # the failed batch got no offsets
    # Offline for good: later requests are refused before touching the file.
    with pytest.raises(KafkaError) as e:
        broken.check_leader()
    assert e.value.code == ErrorCode.KAFKA_STORAGE_ERROR
    assert broken.append_as_leader(bytes(batch()[0]), 9).error_code == ErrorCode.KAFKA_STORAGE_ERROR

    assert healthy.append_as_leader(bytes(batch()[0]), 9).error_code == 0
    assert m.get_or_create_log("t", 2).dir.startswith(good_dir)   # new logs: live dirs only
    broken.log.recovery_point = 3
    m.checkpoint()
    m.flush_dirty(TS + 10**9)
    assert open(os.path.join(bad_dir, "recovery-point-offset-checkpoint")).read() == before
    m.shutdown()
    assert not os.path.exists(os.path.join(bad_dir, CLEAN_SHUTDOWN_FILE))
    assert os.path.exists(os.path.join(good_dir, CLEAN_SHUTDOWN_FILE))
    assert failures == [(bad_dir, [good_dir])]      # told once

    # The next start recovers the failed dir; everything appended before the failure is there.
    m2 = new_manager(dirs)
    assert m2.get_log("t", 0).log_end_offset == 3
    assert m2.get_log("t", 1).log_end_offset == 3
    m2.shutdown()
