"""The comparison itself: normalisation keeps sentinels, maps ids per broker, and the diff
names the field path of every difference (no broker needed: real kafka-python messages)."""
from __future__ import annotations

import uuid

from kafkapy.protocol.messages import RESPONSES
from tests.conformance.compare import ZERO_UUID, diff, to_tree

Metadata = RESPONSES[3]


def _metadata(topic_id, partitions=(0,), throttle=0):
    return Metadata(version=12, throttle_time_ms=throttle, brokers=[], cluster_id="c",
                    controller_id=1, topics=[Metadata.MetadataResponseTopic(
                        version=12, error_code=0, name="t", topic_id=topic_id,
                        is_internal=False, authorized_operations=-2147483648,
                        partitions=[Metadata.MetadataResponseTopic.MetadataResponsePartition(
                            version=12, error_code=0, partition_index=p, leader_id=1,
                            leader_epoch=0, replica_nodes=[1], isr_nodes=[1],
                            offline_replicas=[]) for p in partitions])])


def test_topic_ids_map_through_each_brokers_own_ids():
    a, b = uuid.uuid4(), uuid.uuid4()
    ids_a = {_b64(a): "t"}
    ids_b = {_b64(b): "t"}
    assert not list(diff(to_tree(_metadata(a), 12, ids_a), to_tree(_metadata(b), 12, ids_b)))
    zero = to_tree(_metadata(uuid.UUID(int=0)), 12, ids_a)
    assert zero["topics"][0]["topic_id"] == ZERO_UUID
    assert list(diff(zero, to_tree(_metadata(b), 12, ids_b)))


def test_partition_order_is_normalised_but_content_is_not():
    x = to_tree(_metadata(None, (0, 1, 2)), 12, {})
    y = to_tree(_metadata(None, (2, 0, 1)), 12, {})
    assert not list(diff(x, y))
    z = to_tree(_metadata(None, (0, 1)), 12, {})
    (d,) = diff(x, z)
    assert (d.path, d.ours) == ("topics[name='t'].partitions[partition_index=2]", "<absent>")


def test_throttle_differs_freely_cluster_id_null_does_not():
    x = to_tree(_metadata(None, throttle=0), 12, {})
    y = to_tree(_metadata(None, throttle=50), 12, {})
    assert not list(diff(x, y))
    y["cluster_id"] = None
    (d,) = diff(x, y)
    assert (d.path, d.kafka, d.ours) == ("cluster_id", "<cluster id>", None)


def _b64(u: uuid.UUID) -> str:
    import base64
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")
