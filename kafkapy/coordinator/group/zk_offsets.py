"""Offsets of OffsetCommit v0 / OffsetFetch v0, kept in the metadata store as Kafka keeps them
in ZooKeeper (its ZkData ``ConsumerOffset``).

Znode ``/consumers/<group>/offsets/<topic>/<partition>``; payload: the offset as decimal
ASCII, nothing else (no metadata, no leader epoch, no timestamps).  These offsets are
separate from the group coordinator's ``__consumer_offsets``: a v0 fetch never sees an
offset committed at v1+, and the reverse, exactly as in Kafka 3.9 in ZooKeeper mode.
"""
from __future__ import annotations

from kazoo.exceptions import NoNodeError

from kafkapy.metadata.paths import CONSUMERS


def consumer_offset_path(group_id: str, topic: str, partition: int) -> str:
    return f"{CONSUMERS}/{group_id}/offsets/{topic}/{partition}"


def store_offset(store, group_id: str, topic: str, partition: int, offset: int) -> None:
    """Kafka's setOrCreateConsumerOffset: overwrite, creating parents when missing."""
    path = consumer_offset_path(group_id, topic, partition)
    data = str(offset).encode("ascii")
    if store.exists(path):
        store.set(path, data)
    else:
        store.create(path, data, makepath=True)


def read_offset(store, group_id: str, topic: str, partition: int) -> int | None:
    try:
        data, _ = store.get(consumer_offset_path(group_id, topic, partition))
    except NoNodeError:
        return None
    return int(data.decode("ascii"))
