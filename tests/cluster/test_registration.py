"""Every broker of the cluster registers as a Kafka 3.9 broker does.

``/brokers/ids/N`` is ephemeral (owned by the broker's session) with Kafka 3.9's version-5
JSON: host and port of the PLAINTEXT endpoint, the endpoints, the listener map, jmx_port -1,
a timestamp and the supported features, no ``rack`` when none is configured.  Each
registration's czxid (the broker epoch) is its own; every broker's ``meta.properties`` names
the cluster id of ``/cluster/id`` and its broker id.  (Generated ids: test_membership.py.)
"""
from __future__ import annotations


def test_registrations_are_kafkas(shared_cluster):
    c = shared_cluster
    epochs = {}
    for i in (1, 2, 3):
        reg = c.znode_json(f"/brokers/ids/{i}")
        port = c.nodes[i].port
        assert reg["version"] == 5, reg
        assert (reg["host"], reg["port"], reg["jmx_port"]) == ("127.0.0.1", port, -1), reg
        assert reg["endpoints"] == [f"PLAINTEXT://127.0.0.1:{port}"], reg
        assert reg["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT"}, reg
        assert int(reg["timestamp"]) > 1_600_000_000_000, reg
        assert isinstance(reg.get("features"), dict), reg
        assert "rack" not in reg, reg
        _, stat = c.zk.get(f"/brokers/ids/{i}")
        assert stat.ephemeralOwner != 0
        epochs[i] = stat.czxid
    assert len(set(epochs.values())) == 3
    cluster_id = c.znode_json("/cluster/id")["id"]
    for i in (1, 2, 3):
        meta = (c.nodes[i].log_dir / "meta.properties").read_text()
        assert f"cluster.id={cluster_id}" in meta and f"broker.id={i}" in meta, meta
