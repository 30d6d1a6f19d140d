"""Znodes kafkapy writes are Kafka 3.9's byte for byte.

1. Against Kafka's own encoders (``ZnodeOracle.java`` runs ``kafka.zk.TopicZNode``,
   ``TopicPartitionStateZNode``, ``FeatureZNode``, ``BrokerIdZNode`` and
   ``ConfigEntityZNode`` from Kafka 3.9's jars): registrations with up to 7 listeners,
   entity configs of 1 to all topic keys, many
   assignments (partition counts across the Scala hash maps' resizes, topic ids,
   adding/removing replicas), partition states (with and without leader recovery) and
   feature znodes; every payload equal.
2. Against a real Kafka 3.9 on the same ZooKeeper: a Kafka-only and a kafkapy-only
   single-broker cluster (two chroots) do the same things; ``/feature`` (bytes and zk
   version), ``/brokers/topics/<t>`` (topic ids masked), ``/config/topics/<t>`` (six
   configs) and every partition state equal.
3. ``/feature`` across kinds: a Kafka broker joins kafkapy's controller (and the
   reverse); both kinds answer ApiVersions with the same finalized-features epoch; when
   a Kafka broker takes over from kafkapy's controller it finds kafkapy's ``/feature``
   as it would have written it and does not rewrite it (its zk version stays 0).
Skips without Java or Kafka 3.9.
"""
from __future__ import annotations

import json
import random
import re
import subprocess
from pathlib import Path

import pytest

from kafkapy.metadata import paths
from kafkapy.metadata.membership import kafka_ordered_registration
from kafkapy.metadata.topics import new_topic_id, topic_id_text
from tests.support.cluster_clients import create_topic, request
from tests.support.mixed import (KAFKA_BIN, SINGLE_BROKER_SETTINGS, _require_kafka, kafka_tool,
                                 wait_for)

ORACLE = Path(__file__).with_name("ZnodeOracle.java")
TIMEOUT = 90
KAFKAPY_FEATURES = ("group.version", "share.version")


# --------------------------------------------------------------------------- 1. oracle

@pytest.fixture(scope="module")
def kafka_encode():
    """``encode(lines) -> [bytes]`` through Kafka 3.9's own encoders."""
    _require_kafka()

    def encode(lines: list[str]) -> list[bytes]:
        done = subprocess.run(["java", "-cp", str(KAFKA_BIN.parent / "libs" / "*"), str(ORACLE)],
                              input="\n".join(lines) + "\n", capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        out = [line.encode("utf-8") for line in done.stdout.splitlines()]
        assert len(out) == len(lines), done.stderr[-3000:]
        return out
    return encode


def _pmap_text(m: dict[int, list[int]]) -> str:
    return "/".join(f"{p}={','.join(map(str, r))}" for p, r in m.items()) or "-"


def _assignments(rng: random.Random):
    counts = list(range(1, 41)) + [47, 48, 95, 96, 97, 191, 192, 193, 385, 1000]
    for i, n in enumerate(counts):
        numbers = list(range(n)) if i % 3 else rng.sample(range(5000), n)
        parts = {p: rng.sample(range(3000), rng.randint(1, 4)) for p in numbers}
        adding = {p: parts[p][:1] for p in numbers if rng.random() < 0.2}
        removing = {p: [rng.randint(0, 3000)] for p in numbers if rng.random() < 0.1}
        tid = None if i % 5 == 0 else topic_id_text(new_topic_id())
        yield parts, tid, adding, removing


def test_assignments_match_kafkas_encoder(kafka_encode):
    cases = list(_assignments(random.Random(16)))
    lines = [f"T {tid or '-'} {_pmap_text(parts)} {_pmap_text(adding)} {_pmap_text(removing)}"
             for parts, tid, adding, removing in cases]
    expected = kafka_encode(lines)
    for (parts, tid, adding, removing), want in zip(cases, expected):
        assert paths.encode_topic_assignment(parts, tid, adding, removing) == want


def test_partition_states_match_kafkas_encoder(kafka_encode):
    rng = random.Random(17)
    cases = [(rng.randint(-1, 3000), rng.randint(0, 10**6),
              rng.sample(range(3000), rng.randint(0, 5)), rng.randint(0, 10**4), rng.randint(0, 1))
             for _ in range(300)]
    lines = [f"S {l} {e} {','.join(map(str, isr)) or '-'} {c} {r}" for l, e, isr, c, r in cases]
    for (l, e, isr, c, r), want in zip(cases, kafka_encode(lines)):
        assert paths.encode_partition_state(l, e, isr, c, r) == want


def test_registrations_match_kafkas_encoder(kafka_encode):
    """``/brokers/ids/<id>`` (membership.py's order over paths' payload), timestamps masked;
    up to 7 listeners (Kafka's listener map is a CHAMP map beyond 4), with and without rack."""
    protocols = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
    cases = []
    for n in range(1, 8):
        for rack in (None, "rack-a"):
            eps = [paths.EndPoint(f"LISTENER_{chr(65 + i)}" if i else "PLAINTEXT", "127.0.0.1",
                                  9092 + i, protocols[i % 4] if i else "PLAINTEXT")
                   for i in range(n)]
            cases.append((eps, rack))
    def endpoints(eps) -> str:
        return ",".join(f"{e.listener_name}:{e.security_protocol}:{e.host}:{e.port}" for e in eps)
    lines = [f"B 127.0.0.1 9092 {endpoints(eps)} {rack or '-'}" for eps, rack in cases]

    def masked(data: bytes) -> bytes:
        return re.sub(rb'"timestamp":"\d+"', b'"timestamp":"0"', data)
    for (eps, rack), want in zip(cases, kafka_encode(lines)):
        ours = kafka_ordered_registration(paths.encode_broker_registration(eps, 0, rack=rack))
        assert masked(ours) == masked(want)


def test_entity_configs_match_kafkas_encoder(kafka_encode):
    """``/config/<type>/<name>`` (a ``Properties``): every topic config key, in random
    subsets and orders of 1 to all keys (across the table's resizes)."""
    from kafkapy.config.definitions import TOPIC_CONFIGS
    import kafkapy.config.topic_keys  # noqa: F401  (defines the topic keys)
    names = sorted(TOPIC_CONFIGS.names())
    assert len(names) > 30
    rng = random.Random(18)
    cases = []
    for n in list(range(1, 30)) + [len(names)] * 5:
        keys = rng.sample(names, min(n, len(names)))
        cases.append({k: str(rng.randint(0, 10**6)) for k in keys})
    lines = ["C " + ",".join(f"{k}={v}" for k, v in c.items()) for c in cases]
    for config, want in zip(cases, kafka_encode(lines)):
        assert paths.encode_entity_config(config) == want


def test_feature_znodes_match_kafkas_encoder(kafka_encode):
    cases = [(2, 1, {}), (2, 0, {}), (1, 1, {}), (1, 0, {}), (2, 1, {"metadata.version": 21}),
             (1, 1, {"a": 1, "b": 2}), (2, 1, {"a": 1, "b": 2, "c": 3, "d": 4}),
             (2, 1, {f"feature.{i}": i for i in range(9)})]
    lines = [f"F {v} {s} {','.join(f'{k}={x}' for k, x in f.items()) or '-'}"
             for v, s, f in cases]
    for (v, s, f), want in zip(cases, kafka_encode(lines)):
        assert paths.encode_feature_znode(v, s, f) == want


# --------------------------------------------------------------------------- 2. real Kafka

ASSIGNMENTS = {"fmt-a": {p: [1] for p in range(13)}, "fmt-b": {0: [1], 1: [1], 2: [1]}}
CONFIGS = {"fmt-a": {"retention.ms": "1000000", "cleanup.policy": "compact",
                     "min.insync.replicas": "1", "segment.bytes": "1048576",
                     "max.message.bytes": "100000", "min.cleanable.dirty.ratio": "0.2"},
           "fmt-b": {}}


def _dump(m) -> dict[str, object]:
    """The znodes that differ between kinds only if the format does (ids masked)."""
    out: dict[str, object] = {}
    data, stat = m.zk.get(paths.FEATURE)
    out[paths.FEATURE] = (data, stat.version)
    for topic in ASSIGNMENTS:
        data, _ = m.zk.get(paths.topic_path(topic))
        tid = json.loads(data)["topic_id"]
        out[paths.topic_path(topic)] = data.replace(tid.encode(), b"<id>")
        out[paths.topic_config_path(topic)] = m.zk.get(paths.topic_config_path(topic))[0]
        for p in ASSIGNMENTS[topic]:
            data, stat = m.zk.get(paths.partition_state_path(topic, p))
            out[paths.partition_state_path(topic, p)] = (data, stat.version)
    return out


def _single(mixed_factory, kind: str, name: str):
    m = mixed_factory(SINGLE_BROKER_SETTINGS, name=name)
    m.add(1, kind)
    m.launch_all(timeout=120)
    m.wait_ready([1], timeout=120)
    return m


def _create_topics(m) -> None:
    for topic, assignment in ASSIGNMENTS.items():
        create_topic(m.bootstrap(1), topic, assignment=assignment, configs=CONFIGS[topic])

    def all_there():
        try:
            return all(m.zk.exists(paths.partition_state_path(t, p))
                       for t, a in ASSIGNMENTS.items() for p in a)
        except Exception:  # noqa: BLE001
            return False
    wait_for(all_there, TIMEOUT, "every partition state written")


def _finalized_epoch(m, node_id: int) -> int:
    r = request(m, node_id, 18, 3, client_software_name="test", client_software_version="1")
    # /feature finalizes nothing; a kafkapy broker adds its own group.version (KIP-848) and
    # share.version (KIP-932)
    assert r.error_code == 0 and [f for f in r.finalized_features
                                  if f.name not in KAFKAPY_FEATURES] == []
    return r.finalized_features_epoch


def test_kafkapy_controller_writes_kafkas_znodes(mixed_factory):
    dumps = {}
    for kind in ("kafka", "kafkapy"):
        m = _single(mixed_factory, kind, f"fmt-{kind}")
        _create_topics(m)
        dumps[kind] = _dump(m)
        assert _finalized_epoch(m, 1) == 0
        m.stop()
    assert dumps["kafkapy"] == dumps["kafka"]
    assert dumps["kafkapy"][paths.FEATURE] == (b'{"features":{},"version":2,"status":1}', 0)


# --------------------------------------------------------------------------- 3. across kinds

# What kafka-features.sh prints when the controller refuses transaction.version=2: kafkapy's
# controller because the Kafka broker registered no features (Kafka's ZooKeeper-mode
# BrokerFeatures.createEmpty), Kafka's because it supports none itself.
REFUSED_UPGRADE = {
    "kafkapy": "Could not apply finalized feature update because brokers were found to have "
               "incompatible versions for the feature.",
    "kafka": "Could not apply finalized feature update because the provided feature is not "
             "supported.",
}


def _upgrade_refused(m, controller_kind: str) -> None:
    """Kafka's kafka-features.sh cannot finalize transaction.version with a Kafka broker in
    the cluster; /feature stays as created."""
    registered = {kind: json.loads(m.zk.get(paths.broker_path(i))[0])["features"]
                  for i, kind in m.kinds.items()}
    assert registered["kafka"] == {}
    assert sorted(registered["kafkapy"]) == ["group.version", "share.version",
                                             "transaction.version"]
    done = kafka_tool("kafka-features.sh", "--bootstrap-server", m.bootstrap(1), "upgrade",
                      "--feature", "transaction.version=2")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout == ("Could not upgrade transaction.version to 2. "
                           f"{REFUSED_UPGRADE[controller_kind]}\n")
    data, stat = m.zk.get(paths.FEATURE)
    assert (data, stat.version) == (b'{"features":{},"version":2,"status":1}', 0)


@pytest.mark.parametrize("first", ["kafkapy", "kafka"])
def test_feature_znode_across_kinds(mixed_factory, first):
    """``first`` creates /feature as controller; the other kind joins and reads it; then
    the first is killed and the other becomes controller without rewriting it."""
    other = "kafka" if first == "kafkapy" else "kafkapy"
    m = _single(mixed_factory, first, f"feat-{first}")
    feature = m.zk.get(paths.FEATURE)
    assert (feature[0], feature[1].version) == (b'{"features":{},"version":2,"status":1}', 0)
    m.add(2, other)
    m.launch_all(timeout=120)
    m.wait_ready([1, 2], timeout=120)
    assert m.controller_id() == 1
    assert [_finalized_epoch(m, i) for i in (1, 2)] == [0, 0]
    _upgrade_refused(m, controller_kind=first)
    m.kill(1)
    wait_for(lambda: m.controller_id() == 2, TIMEOUT, lambda: "broker 2 controller\n" + m.summary())
    m.wait_ready([2], timeout=120)
    data, stat = m.zk.get(paths.FEATURE)
    assert (data, stat.version) == (feature[0], 0), "the new controller rewrote /feature"
    assert _finalized_epoch(m, 2) == 0
    if other == "kafka":
        # Kafka's broker cached kafkapy's /feature; its controller found nothing to change
        logs = m.nodes[2].base / "kafka-app-logs"

        def kafka_logs() -> str:
            return "\n".join(p.read_text(errors="replace") for p in sorted(logs.glob("*.log")))
        text = wait_for(lambda: "Registering handlers" in kafka_logs() and kafka_logs(),
                        TIMEOUT, "Kafka's failover logged")
        assert "finalizedFeatures={}, finalizedFeaturesEpoch=0" in text
        assert not re.search(r"Creating FeatureZNode|Updating FeatureZNode|"
                             r"FeatureCacheUpdateException|Failed to parse feature", text)
