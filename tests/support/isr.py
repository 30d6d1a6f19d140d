"""What the ISR tests share (test_isr_min, test_alter_partition): a cluster whose ISR moves
by the leader's lag rule, Produce v9 straight to one broker, and waiting for an ISR.

``LAG_SETTINGS``: ``replica.lag.time.max.ms=2000`` (``replica.fetch.wait.max.ms=500`` below
it) and a ZooKeeper session of 20 s, so a SIGSTOPped broker stays registered for a whole
pause: what takes it out of the ISR is the lag rule, not a session expiry.
"""
from __future__ import annotations

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkapy.protocol.messages import REQUESTS
from tests.support import cluster_clients as clients
from tests.support.cluster import Cluster, running_cluster, wait_for

NONE = 0
REJOIN_S = 45
LAG_SETTINGS = {
    "replica.lag.time.max.ms": "2000",
    "replica.fetch.wait.max.ms": "500",
    "zookeeper.session.timeout.ms": "20000",
}
_Produce = REQUESTS[0]


@pytest.fixture(scope="module")
def lag_cluster(tmp_path_factory, zookeeper_server):
    """One ``LAG_SETTINGS`` cluster for the importing module (import it as a fixture)."""
    yield from running_cluster(tmp_path_factory.mktemp("lag-cluster"), zookeeper_server,
                               extra_settings=LAG_SETTINGS)


def _batch(values: list[bytes]) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    for i, v in enumerate(values):
        builder.append(i, 1_700_000_000_000 + i, None, v, [])
    return bytes(builder.build())


def produce(c: Cluster, node: int, topic: str, values: list[bytes], acks: int = -1,
            timeout_ms: int = 5000) -> tuple[int, int]:
    """Produce v9 of ``values`` to partition 0 at ``node``: (error code, base offset)."""
    r = clients.request(c, node, 0, 9, timeout=timeout_ms / 1000 + 30,
                        transactional_id=None, acks=acks, timeout_ms=timeout_ms,
                        topic_data=[_Produce.TopicProduceData(name=topic, partition_data=[
                            _Produce.TopicProduceData.PartitionProduceData(
                                index=0, records=_batch(values))])])
    p = r.responses[0].partition_responses[0]
    return p.error_code, p.base_offset


def feeder(c: Cluster, topic: str, written: list[bytes]):
    """A ``feed`` for ``wait_isr``: one acks=1 record to the leader (kept in ``written``).
    A follower only falls out of sync when the leader's log end moves past it (Kafka's
    isFollowerOutOfSync: not caught up AND lagging for replica.lag.time.max.ms), so an idle
    partition keeps even a stopped follower in its ISR."""
    def feed() -> None:
        value = f"filler-{len(written)}".encode()
        leader = c.partition_state(topic, 0)["leader"]
        assert produce(c, leader, topic, [value], acks=1)[0] == NONE
        written.append(value)
    return feed


def wait_isr(c: Cluster, topic: str, expected: list[int], timeout: float, why: str,
             feed=None) -> None:
    """Until the state znode AND every running, unpaused broker's Metadata show ``expected``
    as the ISR of ``topic``-0; ``feed()`` runs before each look (to keep records coming)."""
    def settled():
        if feed is not None:
            feed()
        if sorted(c.partition_state(topic, 0)["isr"]) != sorted(expected):
            return False
        return all(sorted(c.metadata(i, [topic]).topics[topic][0].isr) == sorted(expected)
                   for i in c.running_ids() if i not in c.paused)
    wait_for(settled, timeout, lambda: f"{why}: ISR of {topic}-0 to be {sorted(expected)}, "
                                       f"znode says {c.partition_state(topic, 0)}\n{c.summary()}")
