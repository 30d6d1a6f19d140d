"""The leader-epoch-checkpoint files of one LeaderAndIsr are written after it, by
one background task (``leader_epoch.write_behind``), in Kafka's format; truncations stay
synchronous, flush() makes a pending file durable, a deleted log's pending write is dropped."""
from __future__ import annotations

import os

from kafkapy.log import leader_epoch
from kafkapy.log.checkpoint import LEADER_EPOCH_CHECKPOINT, read_leader_epoch_checkpoint
from kafkapy.log.leader_epoch import LeaderEpochCache, wait_for_writes, write_behind


def _dirs(tmp_path, n):
    out = []
    for i in range(n):
        d = tmp_path / f"t-{i}"
        d.mkdir()
        out.append(str(d))
    return out


def _file(d):
    return os.path.join(d, LEADER_EPOCH_CHECKPOINT)


def test_assigns_in_a_batch_are_written_after_it(tmp_path):
    dirs = _dirs(tmp_path, 200)
    caches = [LeaderEpochCache(d) for d in dirs]
    with write_behind():
        for c in caches:
            assert c.assign(3, 0)
        assert not any(os.path.exists(_file(d)) for d in dirs)   # nothing on the loop
        assert all(c.entries == [(3, 0)] for c in caches)
    wait_for_writes()
    for d in dirs:
        assert open(_file(d)).read() == "0\n1\n3 0\n"            # Kafka's format
        assert read_leader_epoch_checkpoint(_file(d)) == [(3, 0)]


def test_the_task_writes_the_entries_current_when_it_runs(tmp_path):
    (d,) = _dirs(tmp_path, 1)
    c = LeaderEpochCache(d)
    with write_behind():
        c.assign(1, 0)
        c.assign(2, 5)          # a second assign in the batch queues no second write
    wait_for_writes()
    assert read_leader_epoch_checkpoint(_file(d)) == [(1, 0), (2, 5)]
    assert LeaderEpochCache(d).entries == [(1, 0), (2, 5)]


def test_truncating_assign_is_written_at_once_and_fsynced(tmp_path, monkeypatch):
    (d,) = _dirs(tmp_path, 1)
    c = LeaderEpochCache(d)
    c.assign(1, 0)
    c.assign(2, 10)
    fsyncs: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (fsyncs.append(fd), real(fd)))
    with write_behind():
        c.assign(3, 4)          # drops (2, 10): not re-derivable, so durable now
        assert read_leader_epoch_checkpoint(_file(d)) == [(1, 0), (3, 4)]
        assert fsyncs
    wait_for_writes()
    assert read_leader_epoch_checkpoint(_file(d)) == [(1, 0), (3, 4)]


def test_flush_writes_a_pending_file_durably(tmp_path, monkeypatch):
    (d,) = _dirs(tmp_path, 1)
    c = LeaderEpochCache(d)
    submitted = []
    monkeypatch.setattr(leader_epoch, "_submit", submitted.append)   # the task never runs
    with write_behind():
        c.assign(7, 0)
    assert submitted == [[c]] and not os.path.exists(_file(d))
    c.flush()
    assert read_leader_epoch_checkpoint(_file(d)) == [(7, 0)]
    c._write_behind()           # the late task finds nothing left to do
    assert read_leader_epoch_checkpoint(_file(d)) == [(7, 0)]


def test_a_dropped_pending_write_does_not_recreate_the_file(tmp_path, monkeypatch):
    (d,) = _dirs(tmp_path, 1)
    c = LeaderEpochCache(d)
    submitted = []
    monkeypatch.setattr(leader_epoch, "_submit", submitted.append)
    with write_behind():
        c.assign(1, 0)
    c.drop_pending()            # the log is being deleted
    leader_epoch._write_all(submitted[0])
    assert not os.path.exists(_file(d))


def test_a_failed_write_is_left_to_flush(tmp_path):
    (d,) = _dirs(tmp_path, 1)
    c = LeaderEpochCache(d)
    with write_behind():
        c.assign(1, 0)
        os.rename(d, d + ".moved")              # the dir went away meanwhile
    wait_for_writes()
    os.rename(d + ".moved", d)
    assert not os.path.exists(_file(d))
    c.flush()
    assert read_leader_epoch_checkpoint(_file(d)) == [(1, 0)]


def test_outside_a_batch_assign_writes_at_once(tmp_path):
    (d,) = _dirs(tmp_path, 1)
    c = LeaderEpochCache(d)
    c.assign(0, 0)
    assert read_leader_epoch_checkpoint(_file(d)) == [(0, 0)]
