"""Producer ids stay unique across the brokers of a cluster.

Each broker hands out producer ids (InitProducerId without a transactional id) from blocks
of 1000 it claims in ``/latest_producer_id_block`` by a conditional write, so two brokers
never hand out the same id: every broker's ids lie in blocks of its own, and the znode's
``block_end`` covers every id handed out.
"""
from __future__ import annotations

import json

from tests.support import cluster_clients as clients
from tests.support.cluster import wait_for

BLOCK = 1000
COORDINATOR_LOAD_IN_PROGRESS = 14


def _init_producer_id(c, node: int) -> int:
    """InitProducerId v4 without a transactional id; retried while the broker answers a
    retriable error (Kafka says COORDINATOR_LOAD_IN_PROGRESS just after start-up)."""
    def attempt():
        r = clients.request(c, node, 22, 4, transactional_id=None, transaction_timeout_ms=60000,
                            producer_id=-1, producer_epoch=-1)
        assert r.error_code in (0, COORDINATOR_LOAD_IN_PROGRESS), r
        return r.producer_id if r.error_code == 0 else None
    return wait_for(attempt, 30, f"a producer id from broker {node}")


def test_producer_ids_are_unique_across_brokers(shared_cluster):
    c = shared_cluster
    ids = {node: [_init_producer_id(c, node) for _ in range(5)] for node in (1, 2, 3)}
    every = [i for got in ids.values() for i in got]
    assert len(set(every)) == len(every), ids
    blocks = {node: {i // BLOCK for i in got} for node, got in ids.items()}
    for a in (1, 2, 3):
        for b in (1, 2, 3):
            if a < b:
                assert not blocks[a] & blocks[b], f"brokers {a} and {b} share a block: {ids}"
    block = json.loads(c.zk.get("/latest_producer_id_block")[0])
    assert block["version"] == 1 and int(block["block_end"]) >= max(every), (block, ids)
