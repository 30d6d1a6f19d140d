"""``partition.metadata`` in each partition dir: the topic id.

On disk, exactly two lines::

    version: 0
    topic_id: <22-char URL-safe base64 topic id, no padding>

Written atomically.  Invariant: the id never changes for the life of the dir;
a dir whose stored id differs from the topic's current id belongs to an older
incarnation of the topic (the caller decides what to do).
"""
from __future__ import annotations

import os

from kafkapy.log.checkpoint import atomic_write

PARTITION_METADATA = "partition.metadata"


class PartitionMetadataError(Exception):
    pass


def read_partition_metadata(dir_path: str) -> str | None:
    """The stored topic id, or None when the file is absent."""
    path = os.path.join(dir_path, PARTITION_METADATA)
    try:
        with open(path, "r", encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as err:
        raise PartitionMetadataError(f"malformed {path}: not UTF-8 text ({err.reason})") from None
    fields = {}
    for line in lines:
        if not line.strip():
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise PartitionMetadataError(f"malformed {path}: {line!r}")
        fields[key.strip()] = value.strip()
    if fields.get("version") != "0":
        raise PartitionMetadataError(f"unrecognised version in {path}: {fields.get('version')}")
    if "topic_id" not in fields:
        raise PartitionMetadataError(f"no topic_id in {path}")
    return fields["topic_id"]


def write_partition_metadata(dir_path: str, topic_id: str) -> None:
    atomic_write(os.path.join(dir_path, PARTITION_METADATA),
                 f"version: 0\ntopic_id: {topic_id}\n".encode())
