"""Metadata's kept partition arrays are invalidated when the cache changes.

``handlers/metadata.py`` keeps each topic's encoded partition array per (topic, layout,
listener) while the metadata cache's generation is unchanged.  Each check here asks a
real in-process broker over a socket, at every version, then forgets every kept array and
asks again: both answers must be the same bytes (the kept one is what a fresh build
gives), and the answer must show the change just made (leader change, ISR change, new
partitions, deleted topic, topic-level errors).  The listener check runs the handler on
a broker whose cache lists a leader without the client's listener.
"""
from __future__ import annotations

import time
import uuid

import pytest

from kafkapy.handlers import metadata
from kafkapy.metadata.cache import MetadataCache
from kafkapy.protocol import inter_broker  # noqa: F401  (registers UpdateMetadata)
from kafkapy.protocol.messages import REQUESTS, RESPONSES
from kafkapy.testing import cluster
from tests.support.wire import WireClient
from tests.support.services import context, services

VERSIONS = range(0, 13)
TOPIC = "kept"
_WAIT_S = 30.0


def _request(version: int, names: list[str] | None) -> dict:
    if names is None and version == 0:
        names = []          # v0: an empty list means every topic
    topic = REQUESTS[3].MetadataRequestTopic
    topics = None if names is None else [
        topic(name=n, topic_id=uuid.UUID(int=0)) if version >= 10 else topic(name=n)
        for n in names]
    fields = {"topics": topics}
    if version >= 4:
        fields["allow_auto_topic_creation"] = False
    if version >= 8:
        fields["include_topic_authorized_operations"] = False
    if 8 <= version <= 10:
        fields["include_cluster_authorized_operations"] = False
    return fields


def _raw(client: WireClient, version: int, names: list[str] | None) -> bytes:
    correlation, data = client.encode(3, version, **_request(version, names))
    client.send_raw(data)
    frame = client.recv_frame()
    assert int.from_bytes(frame[:4], "big") == correlation
    return frame


def _kept_equals_fresh(bootstrap: str, names: list[str] | None = None) -> dict:
    """Per version: ask twice (second time with nothing kept), require the same bytes,
    return the decoded answers."""
    answers = {}
    client = WireClient(bootstrap)
    try:
        for version in VERSIONS:
            _raw(client, version, names)                  # builds and keeps
            kept = _raw(client, version, names)           # answered from what is kept
            metadata._KEPT.clear()
            fresh = _raw(client, version, names)
            # Byte for byte after the correlation id (which differs between two asks).
            assert kept[4:] == fresh[4:], f"v{version}: kept answer differs from a fresh one"
            answers[version] = RESPONSES[3].decode(kept, version=version, header=True)
    finally:
        client.close()
    return answers


def _partitions(answer, name: str) -> dict[int, tuple]:
    topic = next(t for t in answer.topics if t.name == name)
    return {p.partition_index: (p.error_code, p.leader_id, sorted(p.isr_nodes))
            for p in topic.partitions}


def _until(what: str, condition) -> None:
    deadline = time.monotonic() + _WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached in {_WAIT_S} s: {what}")
        time.sleep(0.05)


def _admin(c, api_key: int, version: int, **fields):
    client = WireClient(c.controller.bootstrap)
    try:
        return client.request(api_key, version, **fields)
    finally:
        client.close()


@pytest.fixture
def two_brokers(tmp_path):
    # No auto-creation: v0-3 requests always allow it, and would re-create deleted topics.
    with cluster(brokers=2, auto_create_topics_enable=False) as c:
        c.create_topic(TOPIC, partitions=4, replication_factor=2)
        yield c


def _asked(c):
    """The broker the checks ask (broker 1; broker 2 is the one failed and restarted)."""
    return c.broker(1).bootstrap


def test_kept_answer_follows_leader_and_isr_changes(two_brokers):
    c = two_brokers
    before = _kept_equals_fresh(_asked(c))
    assert all(len(_partitions(a, TOPIC)) == 4 for a in before.values())
    led_by_2 = [i for i, (_, leader, _) in _partitions(before[1], TOPIC).items() if leader == 2]
    assert led_by_2, "replica assignment puts some leaders on broker 2"

    c.fail(2)
    _until("broker 1 leads every partition with ISR [1]", lambda: all(
        (leader, isr) == (1, [1]) for _, leader, isr in
        _partitions(_kept_equals_fresh(_asked(c), [TOPIC])[1], TOPIC).values()))
    after = _kept_equals_fresh(_asked(c))
    for version, answer in after.items():
        assert {i: p[1:] for i, p in _partitions(answer, TOPIC).items()} == {
            i: (1, [1]) for i in range(4)}, f"v{version}"

    c.restart(2)
    _until("broker 2 back in every ISR", lambda: all(
        isr == [1, 2] for _, _, isr in
        _partitions(_kept_equals_fresh(_asked(c), [TOPIC])[1], TOPIC).values()))
    back = _kept_equals_fresh(_asked(c))
    assert all(len(a.brokers) == 2 for a in back.values())


def test_kept_answer_follows_new_partitions_and_deletion(two_brokers):
    c = two_brokers
    _kept_equals_fresh(_asked(c))
    more = REQUESTS[37].CreatePartitionsTopic(name=TOPIC, count=7, assignments=None)
    response = _admin(c, 37, 3, topics=[more],
                      timeout_ms=30000, validate_only=False)
    assert response.results[0].error_code == 0
    _until("7 partitions with leaders", lambda: sorted(
        (i, leader >= 0) for i, (_, leader, _) in
        _partitions(_kept_equals_fresh(_asked(c), [TOPIC])[12], TOPIC).items())
        == [(i, True) for i in range(7)])
    for version, answer in _kept_equals_fresh(_asked(c)).items():
        assert sorted(_partitions(answer, TOPIC)) == list(range(7)), f"v{version}"

    delete = REQUESTS[20].DeleteTopicState(name=TOPIC, topic_id=uuid.UUID(int=0))
    response = _admin(c, 20, 6, topics=[delete],
                      topic_names=None, timeout_ms=30000)
    assert response.responses[0].error_code == 0

    def gone() -> bool:
        answers = _kept_equals_fresh(_asked(c), [TOPIC])
        return all(a.topics[0].error_code == 3 and not a.topics[0].partitions
                   for v, a in answers.items() if v >= 1)
    _until("the deleted topic answered UNKNOWN_TOPIC_OR_PARTITION", gone)
    for answer in _kept_equals_fresh(_asked(c)).values():
        assert TOPIC not in [t.name for t in answer.topics]


def test_kept_partitions_beside_topic_level_errors(two_brokers):
    c = two_brokers
    c.create_topic("other", partitions=3, replication_factor=1)
    names = ["missing-topic", TOPIC, "bad name!", "other", TOPIC]
    for version, answer in _kept_equals_fresh(_asked(c), names).items():
        by_name = {t.name: t for t in answer.topics}
        assert list(by_name) == [TOPIC, "other", "missing-topic", "bad name!"], f"v{version}"
        assert by_name["missing-topic"].error_code == 3 and not by_name["missing-topic"].partitions
        assert by_name["bad name!"].error_code == 17
        assert len(by_name[TOPIC].partitions) == 4 and len(by_name["other"].partitions) == 3


# -- listeners (handler level: a leader without the client's listener) ----------------------
class _Logs:
    offline_dirs: set = set()


class _Broker:
    """What Metadata reads of a broker: its cache, replicas, logs and config."""

    def __init__(self) -> None:
        self.node_id = 1
        self.cache = MetadataCache("cluster", 1, "INTERNAL")
        self.log_manager = _Logs()
        self.replica_manager = type("RM", (), {"partitions": {}})()
        self.config = {"auto.create.topics.enable": False}
        self.authorizer = None


def _update(broker: _Broker, leaders: list[int]) -> None:
    """UpdateMetadata v8: broker 1 on INTERNAL and EXTERNAL, broker 2 on INTERNAL only."""
    um = REQUESTS[6]
    endpoint = um.UpdateMetadataBroker.UpdateMetadataEndpoint
    live = [um.UpdateMetadataBroker(id=b, v0_host="h", v0_port=1, rack=None, endpoints=[
        endpoint(port=9000 + b, host=f"in{b}", listener="INTERNAL", security_protocol=0)]
        + ([endpoint(port=8000 + b, host=f"ex{b}", listener="EXTERNAL", security_protocol=0)]
           if b == 1 else [])) for b in (1, 2)]
    states = [um.UpdateMetadataTopicState.UpdateMetadataPartitionState(
        topic_name="t", partition_index=i, controller_epoch=1, leader=leader, leader_epoch=1,
        isr=[1, 2], zk_version=1, replicas=[1, 2], offline_replicas=[])
        for i, leader in enumerate(leaders)]
    broker.cache.apply_update_metadata(um(
        version=8, controller_id=1, controller_epoch=1, broker_epoch=-1,
        is_k_raft_controller=False, type=0, live_brokers=live,
        topic_states=[um.UpdateMetadataTopicState(topic_name="t", topic_id=uuid.uuid4(),
                                                  partition_states=states)]))


def _answer(broker: _Broker, version: int, listener: str) -> bytes:
    request = REQUESTS[3](version=version, **_request(version, None))
    parts = services(node_id=broker.node_id, cache=broker.cache, config=broker.config,
                     log_manager=broker.log_manager, replica_manager=broker.replica_manager)
    return bytes(metadata.handle(context(parts, 3, version, listener=listener),
                                 request).encode())


def _fresh(broker: _Broker, version: int, listener: str) -> bytes:
    metadata._KEPT.clear()
    return _answer(broker, version, listener)


@pytest.mark.parametrize("version", VERSIONS)
def test_kept_answers_are_per_listener(version):
    broker = _Broker()
    _update(broker, [1, 2])
    internal = _answer(broker, version, "INTERNAL")
    external = _answer(broker, version, "EXTERNAL")
    # Ask each listener again (kept) and compare with a fresh build of that listener.
    assert _answer(broker, version, "EXTERNAL") == external == _fresh(broker, version, "EXTERNAL")
    assert _answer(broker, version, "INTERNAL") == internal == _fresh(broker, version, "INTERNAL")
    ext = RESPONSES[3].decode(external, version=version).topics[0].partitions
    inn = RESPONSES[3].decode(internal, version=version).topics[0].partitions
    assert [p.leader_id for p in inn] == [1, 2]
    assert [p.leader_id for p in ext] == [1, -1]
    assert ext[1].error_code == (72 if version >= 6 else 5)   # LISTENER_NOT_FOUND / LNA
    if version == 0:   # v0 lists only replicas reachable on the listener
        assert (ext[0].replica_nodes, ext[0].error_code) == ([1], 9)   # REPLICA_NOT_AVAILABLE
    # A leader change through UpdateMetadata is seen on both listeners.
    _update(broker, [2, 1])
    ext = RESPONSES[3].decode(_answer(broker, version, "EXTERNAL"), version=version)
    assert [p.leader_id for p in ext.topics[0].partitions] == [-1, 1]
    assert _answer(broker, version, "INTERNAL") == _fresh(broker, version, "INTERNAL")


def test_nothing_is_kept_while_a_log_dir_is_offline():
    broker = _Broker()
    _update(broker, [1, 2])
    metadata._KEPT.clear()
    broker.log_manager = type("Logs", (), {"offline_dirs": {"/failed"}})()
    _answer(broker, 12, "INTERNAL")
    assert broker.cache not in metadata._KEPT
