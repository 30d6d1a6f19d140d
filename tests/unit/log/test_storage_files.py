"""Garbage in a storage file is an error naming the file, never a silent reset."""
from __future__ import annotations

import os

import pytest

from kafkapy.log.checkpoint import CheckpointError, read_leader_epoch_checkpoint
from kafkapy.log.meta_properties import (InconsistentMetaPropertiesError, ensure_meta_properties,
                                         read_meta_properties)
from kafkapy.log.partition_metadata import PartitionMetadataError, read_partition_metadata

GARBAGE = bytes(range(128, 256)) + os.urandom(32)


def test_garbage_leader_epoch_checkpoint_names_the_file(tmp_path):
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_bytes(GARBAGE)
    with pytest.raises(CheckpointError, match=str(path)):
        read_leader_epoch_checkpoint(str(path))


def test_garbage_partition_metadata_names_the_file(tmp_path):
    (tmp_path / "partition.metadata").write_bytes(GARBAGE)
    with pytest.raises(PartitionMetadataError, match="partition.metadata"):
        read_partition_metadata(str(tmp_path))


def test_garbage_meta_properties_is_never_adopted(tmp_path):
    path = tmp_path / "meta.properties"
    path.write_bytes(b"garbage\x00\xff line\nnot=a meta file\n")
    with pytest.raises(InconsistentMetaPropertiesError, match="meta.properties"):
        read_meta_properties(str(tmp_path))
    with pytest.raises(InconsistentMetaPropertiesError):
        ensure_meta_properties([str(tmp_path)], "cluster-a", 1)
    assert path.read_bytes().startswith(b"garbage")     # left as it was
