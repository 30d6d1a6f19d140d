"""Checkpoint files, meta.properties and partition.metadata."""
from __future__ import annotations

import os

import pytest

from kafkapy.log.checkpoint import (CheckpointError, read_leader_epoch_checkpoint,
                                    read_offset_checkpoint, write_leader_epoch_checkpoint,
                                    write_offset_checkpoint)
from kafkapy.log.meta_properties import (InconsistentMetaPropertiesError, MetaProperties,
                                         ensure_meta_properties, read_meta_properties)
from kafkapy.log.partition_metadata import read_partition_metadata, write_partition_metadata


def test_offset_checkpoint_roundtrip_and_bytes(tmp_path):
    p = str(tmp_path / "replication-offset-checkpoint")
    write_offset_checkpoint(p, {("orders", 1): 1432, ("orders", 0): 1500})
    assert open(p).read() == "0\n2\norders 0 1500\norders 1 1432\n"
    assert read_offset_checkpoint(p) == {("orders", 0): 1500, ("orders", 1): 1432}
    assert not os.path.exists(p + ".tmp")


def test_missing_and_empty_checkpoints(tmp_path):
    assert read_offset_checkpoint(str(tmp_path / "nope")) == {}
    p = tmp_path / "empty"
    p.write_text("")
    assert read_offset_checkpoint(str(p)) == {}


@pytest.mark.parametrize("text", ["1\n0\n", "0\n2\na 0 1\n", "0\n1\na b 1\n", "0\n1\na 0\n",
                                  "x\n"])
def test_malformed_checkpoint_is_an_error(tmp_path, text):
    p = tmp_path / "cp"
    p.write_text(text)
    with pytest.raises(CheckpointError) as e:
        read_offset_checkpoint(str(p))
    assert str(p) in str(e.value)


def test_leader_epoch_checkpoint(tmp_path):
    p = str(tmp_path / "leader-epoch-checkpoint")
    write_leader_epoch_checkpoint(p, [(0, 0), (4, 120)])
    assert open(p).read() == "0\n2\n0 0\n4 120\n"
    assert read_leader_epoch_checkpoint(p) == [(0, 0), (4, 120)]


def test_meta_properties(tmp_path):
    d1, d2 = str(tmp_path / "a"), str(tmp_path / "b")
    os.makedirs(d1)
    os.makedirs(d2)
    ensure_meta_properties([d1, d2], "clu-1", 3)
    text = open(os.path.join(d1, "meta.properties")).read()
    lines = [x for x in text.splitlines() if not x.startswith("#")]
    assert sorted(lines) == ["broker.id=3", "cluster.id=clu-1", "version=0"]
    assert read_meta_properties(d2) == MetaProperties(0, 3, "clu-1")
    ensure_meta_properties([d1, d2], "clu-1", 3)  # idempotent
    with pytest.raises(InconsistentMetaPropertiesError, match="Cluster ID"):
        ensure_meta_properties([d1], "other", 3)
    with pytest.raises(InconsistentMetaPropertiesError, match="node id"):
        ensure_meta_properties([d1], "clu-1", 4)


def test_meta_properties_java_written(tmp_path):
    (tmp_path / "meta.properties").write_text(
        "#\n#Sun Nov 22 04:00:00 UTC 2026\ncluster.id=AbC\\=x\nversion=0\nbroker.id=1\n")
    assert read_meta_properties(str(tmp_path)) == MetaProperties(0, 1, "AbC=x")


def test_partition_metadata(tmp_path):
    write_partition_metadata(str(tmp_path), "AAAAAAAAAAAAAAAAAAAAAQ")
    assert open(tmp_path / "partition.metadata").read() == \
        "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n"
    assert read_partition_metadata(str(tmp_path)) == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert read_partition_metadata(str(tmp_path / "none")) is None


def test_one_checkpoint_written_from_two_threads(tmp_path):
    """Two cleaner threads (log.cleaner.threads > 1) write a dir's cleaner-offset-checkpoint
    at once: both go through ``<name>.tmp``, so unserialized one rename finds it gone or
    renames the other's half-written file into place."""
    import threading
    from kafkapy.log.checkpoint import read_offset_checkpoint, write_offset_checkpoint
    path = str(tmp_path / "cleaner-offset-checkpoint")
    errors: list[BaseException] = []
    entries = [{("t", p): p * 10 for p in range(200)}, {("u", p): p for p in range(300)}]

    def writer(which: int) -> None:
        try:
            for _ in range(300):
                write_offset_checkpoint(path, entries[which], fsync=False)
        except BaseException as err:     # noqa: BLE001 (asserted below)
            errors.append(err)
    threads = [threading.Thread(target=writer, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert read_offset_checkpoint(path) in entries
