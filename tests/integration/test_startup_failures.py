"""A broker that cannot start says why in one line and exits non-zero, as Kafka does.

Each case starts a real broker process (``python -m kafkapy config/server.properties
--override ...``, as tests/support/broker_process.py does) into a real obstacle: a port another
socket listens on (a running broker's: the refused one says only that, never registers in
``/brokers/ids`` nor runs for controller), a log dir a running broker holds, a regular file where a log dir should
be, a loopback port where no ZooKeeper listens, KRaft settings.  The exit code is non-zero;
the output has no traceback and no "shut down cleanly", and exactly one line names the
problem.  One unusable dir among several ``log.dirs`` is no reason to stop: the broker
starts on the others with that dir offline (DescribeLogDirs answers KAFKA_STORAGE_ERROR for
it) and places no partition there; a partition it held stays offline (no leader) instead of
starting afresh, empty, in another dir, and is served again once the dir is back.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata
from kafka.admin import KafkaAdminClient, NewTopic

from tests.support.broker_process import ROOT, BrokerProcess, free_port
from tests.support.client_common import produce_values, read_values
from kafkapy.coordinator.group.hashing import partition_for
from tests.support.wire import WireClient, partition_metadata
from tests.support.zookeeper_server import zk, zk_connect, zookeeper_server  # noqa: F401  (fixtures)

KAFKA_STORAGE_ERROR, LEADER_NOT_AVAILABLE, COORDINATOR_NOT_AVAILABLE = 56, 5, 15
OFFSETS_PARTITIONS = 50   # offsets.topic.num.partitions, Kafka's default
KAFKA_KRAFT_SAMPLES = ROOT.parent / "shared" / "kafka_2.13-3.9.0" / "config" / "kraft"
# Not a timing assertion: a broker that wrongly starts instead of failing runs until
# killed, and the test must then fail rather than hang.
HANG_GUARD_S = 120


def _run_to_exit(command: list[str]) -> tuple[int, str]:
    """Run a broker command that should fail; its exit code and merged output."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    try:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              cwd=ROOT, env=env, text=True, timeout=HANG_GUARD_S)
    except subprocess.TimeoutExpired as err:
        pytest.fail(f"the broker started instead of failing:\n{err.output}")
    return done.returncode, done.stdout


def _assert_one_line_failure(code: int, output: str, *needles: str) -> str:
    """Exit code non-zero; one line holds every needle; no traceback, no clean-shutdown
    claim.  Returns that line."""
    assert code != 0, output
    assert "Traceback" not in output, output
    assert "shut down cleanly" not in output, output
    lines = [line for line in output.splitlines() if needles[0] in line]
    assert len(lines) == 1, output
    for needle in needles[1:]:
        assert needle in lines[0], output
    return lines[0]


def _log_dir_errors(bootstrap: str) -> dict[str, tuple[int, list[str]]]:
    client = WireClient(bootstrap)
    try:
        response = client.request(35, 4, topics=None)
    finally:
        client.close()
    return {r.log_dir: (r.error_code, [t.name for t in r.topics]) for r in response.results}


def _produce(bootstrap: str, topic: str, partition: int, values: list[bytes]) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    for value in values:
        producer.send(topic, value=value, partition=partition).get(30)
    producer.close()


def _read(bootstrap: str, topic: str, partition: int) -> list[bytes]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=5000)
    tp = TopicPartition(topic, partition)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    values = [record.value for record in consumer]
    consumer.close()
    return values


def test_port_in_use(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        broker = BrokerProcess(tmp_path / "logs", port=port)
        code, output = _run_to_exit(broker.command())
    _assert_one_line_failure(code, output,
                             f"Socket server failed to bind to 127.0.0.1:{port}: "
                             "Address already in use.")


def _controller_id(bootstrap: str) -> int:
    client = WireClient(bootstrap)
    try:
        return client.request(3, 1, topics=[]).controller_id
    finally:
        client.close()


def _refused_for_the_port_of(first: BrokerProcess, second: BrokerProcess) -> None:
    """``second`` (listening on ``first``'s port) fails with the bind line and says
    nothing else: it did not get as far as registering or electing."""
    code, output = _run_to_exit(second.command())
    line = _assert_one_line_failure(code, output,
                                    f"Socket server failed to bind to 127.0.0.1:{first.port}: "
                                    "Address already in use.")
    assert output.strip().splitlines() == [line], output


def test_port_of_a_running_broker_embedded_store(tmp_path):
    first = BrokerProcess(tmp_path / "first").start()
    try:
        second = BrokerProcess(tmp_path / "second", port=first.port, node_id=1)
        _refused_for_the_port_of(first, second)
        # No store of its own was opened (no registration, no controller there) ...
        assert not (tmp_path / "second" / "kafkapy-metadata.json").exists()
        # ... and the running broker is still the controller, and serves.
        assert _controller_id(first.bootstrap) == 0
        produce_values(first.bootstrap, "still-served", [b"a", b"b"])
        assert read_values(first.bootstrap, "still-served", 2) == [b"a", b"b"]
        assert first.stop() == 0, first.output()
    finally:
        first.kill()


def test_port_of_a_running_broker_zookeeper(tmp_path, zk_connect, zk):  # noqa: F811
    settings = {"zookeeper.connect": zk_connect}
    first = BrokerProcess(tmp_path / "first", overrides=settings).start()
    try:
        assert _controller_id(first.bootstrap) == 0
        _, ids_before = zk.get("/brokers/ids")
        controller_before = zk.get("/controller")
        epoch_before = zk.get("/controller_epoch")
        second = BrokerProcess(tmp_path / "second", port=first.port, node_id=1,
                               overrides=settings)
        _refused_for_the_port_of(first, second)
        # /brokers/ids never had a child created or deleted: broker 1 never registered
        # (an ephemeral that came and went would have moved cversion and pzxid).
        assert zk.get_children("/brokers/ids") == ["0"]
        _, ids_after = zk.get("/brokers/ids")
        assert (ids_after.cversion, ids_after.pzxid) == (ids_before.cversion,
                                                         ids_before.pzxid)
        # No election: the same /controller znode, the same controller epoch.
        assert zk.get("/controller") == controller_before
        assert zk.get("/controller_epoch") == epoch_before
        produce_values(first.bootstrap, "still-served", [b"a", b"b"])
        assert read_values(first.bootstrap, "still-served", 2) == [b"a", b"b"]
        assert first.stop() == 0, first.output()
    finally:
        first.kill()


def test_metrics_port_in_use(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        broker = BrokerProcess(tmp_path / "logs", overrides={"kafkapy.metrics.port": str(port)})
        code, output = _run_to_exit(broker.command())
    _assert_one_line_failure(code, output, f"Metrics endpoint failed to bind to 127.0.0.1:{port}",
                             "kafkapy.metrics.port", "Address already in use.")


def test_log_dir_locked_by_another_broker(tmp_path):
    first = BrokerProcess(tmp_path / "logs").start()
    try:
        second = BrokerProcess(tmp_path / "logs")
        code, output = _run_to_exit(second.command())
        _assert_one_line_failure(code, output,
                                 f"Failed to acquire lock on file .lock in {tmp_path / 'logs'}. "
                                 "A Kafka instance in another process or thread is using "
                                 "this directory.")
        # The refused broker left the running one's dir alone: no clean-shutdown marker.
        assert not (tmp_path / "logs" / ".kafka_cleanshutdown").exists()
        produce_values(first.bootstrap, "still-here", [b"a", b"b"])
        assert read_values(first.bootstrap, "still-here", 2) == [b"a", b"b"]
        assert first.stop() == 0, first.output()
    finally:
        first.kill()
    assert (tmp_path / "logs" / ".kafka_cleanshutdown").exists()


def test_the_only_log_dir_is_a_file(tmp_path):
    in_the_way = tmp_path / "not-a-dir"
    in_the_way.write_text("a file where the log dir should be\n")
    broker = BrokerProcess(tmp_path / "unused", overrides={"log.dirs": str(in_the_way)})
    code, output = _run_to_exit(broker.command())
    _assert_one_line_failure(code, output, "none of the specified log dirs",
                             f"{in_the_way} is not a readable log directory.")


def test_one_unusable_dir_among_several_goes_offline(tmp_path):
    good_a, good_b, bad = tmp_path / "a", tmp_path / "b", tmp_path / "bad"
    bad.write_text("a file where the log dir should be\n")
    broker = BrokerProcess(good_a, overrides={"log.dirs": f"{good_a},{bad},{good_b}"}).start()
    try:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        admin.create_topics([NewTopic("spread", 6, 1)])
        admin.close()
        dirs = _log_dir_errors(broker.bootstrap)
        assert dirs == {str(good_a): (0, ["spread"]), str(bad): (KAFKA_STORAGE_ERROR, []),
                        str(good_b): (0, ["spread"])}
        placed = sorted(p.name for d in (good_a, good_b) for p in d.iterdir()
                        if p.name.startswith("spread-"))
        assert placed == [f"spread-{i}" for i in range(6)]
        assert bad.read_text() == "a file where the log dir should be\n"
        _produce(broker.bootstrap, "spread", 0, [b"x", b"y"])
        assert _read(broker.bootstrap, "spread", 0) == [b"x", b"y"]
        assert broker.proc.poll() is None
        assert broker.stop() == 0, broker.output()
    finally:
        broker.kill()
    assert "not a readable log directory" in broker.output()


def test_a_partition_of_a_dir_gone_offline_stays_offline_until_it_is_back(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    broker = BrokerProcess(first, overrides={"log.dirs": f"{first},{second}"}).start()
    try:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        admin.create_topics([NewTopic("kept", 2, 1)])
        admin.close()
        values = {p: [b"%d-%d" % (p, i) for i in range(5)] for p in (0, 1)}
        for p in (0, 1):
            _produce(broker.bootstrap, "kept", p, values[p])
        assert broker.stop() == 0, broker.output()
        gone = next(p for p in (0, 1) if (second / f"kept-{p}").is_dir())
        healthy = 1 - gone
        # The disk of the second dir is gone: a file stands where it was mounted.
        second.rename(tmp_path / "second.away")
        second.write_text("the disk is not mounted\n")
        broker.start()
        assert partition_metadata(broker.bootstrap, "kept") == {
            gone: (LEADER_NOT_AVAILABLE, -1, [0]), healthy: (0, 0, [])}
        assert _log_dir_errors(broker.bootstrap) == {
            str(first): (0, ["kept"]), str(second): (KAFKA_STORAGE_ERROR, [])}
        assert not (first / f"kept-{gone}").exists()   # not started afresh, empty
        assert _read(broker.bootstrap, "kept", healthy) == values[healthy]
        assert broker.stop() == 0, broker.output()
        # The disk is back.
        second.unlink()
        (tmp_path / "second.away").rename(second)
        broker.start()
        assert _read(broker.bootstrap, "kept", gone) == values[gone]
        _produce(broker.bootstrap, "kept", gone, [b"again"])
        assert _read(broker.bootstrap, "kept", gone) == values[gone] + [b"again"]
        assert broker.stop() == 0, broker.output()
    finally:
        broker.kill()


def _consumer(bootstrap: str, group: str) -> KafkaConsumer:
    return KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)


def _coordinator_error(bootstrap: str, group: str) -> int:
    client = WireClient(bootstrap)
    try:
        return client.request(10, 1, key=group, key_type=0).error_code
    finally:
        client.close()


def test_a_group_whose_offsets_partition_is_offline_has_no_coordinator(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    broker = BrokerProcess(first, overrides={"log.dirs": f"{first},{second}"}).start()
    tp = TopicPartition("orders", 0)
    try:
        _produce(broker.bootstrap, "orders", 0, [b"a", b"b", b"c"])
        probe = _consumer(broker.bootstrap, "probe")   # creates __consumer_offsets
        probe.commit({tp: OffsetAndMetadata(1, None)})
        probe.close()
        in_second = {int(p.name.rsplit("-", 1)[1]) for p in second.iterdir()
                     if p.name.startswith("__consumer_offsets-")}
        group = next(g for g in (f"group-{i}" for i in range(1000))
                     if partition_for(g, OFFSETS_PARTITIONS) in in_second)
        consumer = _consumer(broker.bootstrap, group)
        consumer.commit({tp: OffsetAndMetadata(3, None)})
        consumer.close()
        assert broker.stop() == 0, broker.output()
        second.rename(tmp_path / "second.away")
        second.write_text("the disk is not mounted\n")
        broker.start()
        # Not a coordinator with no offsets (consumers would start over): none at all.
        assert _coordinator_error(broker.bootstrap, group) == COORDINATOR_NOT_AVAILABLE
        assert broker.stop() == 0, broker.output()
        second.unlink()
        (tmp_path / "second.away").rename(second)
        broker.start()
        consumer = _consumer(broker.bootstrap, group)
        assert consumer.committed(tp) == 3
        consumer.close()
        assert broker.stop() == 0, broker.output()
    finally:
        broker.kill()


def test_embedded_store_dir_unusable(tmp_path):
    bad, good = tmp_path / "bad", tmp_path / "good"
    bad.write_text("a file where the log dir should be\n")
    broker = BrokerProcess(good, overrides={"log.dirs": f"{bad},{good}"})
    code, output = _run_to_exit(broker.command())
    _assert_one_line_failure(code, output, f"Log dir {bad} is unusable",
                             "embedded metadata store")


def test_log_dir_of_another_cluster(tmp_path):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "meta.properties").write_text("version=0\nbroker.id=0\n"
                                            "cluster.id=AAAAAAAAAAAAAAAAAAAAAA\n")
    broker = BrokerProcess(ours, overrides={"log.dirs": f"{ours},{theirs}"})
    code, output = _run_to_exit(broker.command())
    _assert_one_line_failure(code, output, "doesn't match stored clusterId AAAAAAAAAAAAAAAAAAAAAA",
                             str(theirs / "meta.properties"))


def test_broker_id_held_by_a_live_broker(tmp_path, zk_connect):  # noqa: F811
    settings = {"zookeeper.connect": zk_connect, "zookeeper.session.timeout.ms": "2000"}
    first = BrokerProcess(tmp_path / "first", overrides=settings).start()
    try:
        twin = BrokerProcess(tmp_path / "twin", overrides=settings)
        code, output = _run_to_exit(twin.command())
        _assert_one_line_failure(code, output, "Error while creating ephemeral at /brokers/ids/0, "
                                 "node already exists")
        assert first.proc.poll() is None
    finally:
        first.kill()


def test_zookeeper_unreachable(tmp_path):
    closed = free_port()   # bound and closed again: nothing listens there
    connect = f"127.0.0.1:{closed}/kafka"
    broker = BrokerProcess(tmp_path / "logs", overrides={
        "zookeeper.connect": connect, "zookeeper.connection.timeout.ms": "1000"})
    code, output = _run_to_exit(broker.command())
    line = _assert_one_line_failure(
        code, output, "Timed out waiting for connection while in state: CONNECTING",
        f"ZooKeeper at {connect}", "Connection refused")
    # kazoo's retry chatter is summed up by that line, not printed.
    assert [ln for ln in output.splitlines() if "zookeeper" in ln.lower()] == [line], output


def test_kraft_process_roles(tmp_path):
    broker = BrokerProcess(tmp_path / "logs", overrides={"process.roles": "broker,controller",
                                                         "node.id": "0"})
    code, output = _run_to_exit(broker.command())
    _assert_one_line_failure(code, output, "KRaft mode is not supported by kafkapy",
                             "process.roles", "zookeeper.connect")
    assert not (tmp_path / "logs" / "meta.properties").exists()


@pytest.mark.parametrize("sample", ["server.properties", "broker.properties",
                                    "controller.properties"])
def test_kafkas_kraft_sample_configs(tmp_path, sample):
    path = KAFKA_KRAFT_SAMPLES / sample
    if not path.exists():
        pytest.skip(f"no Kafka distribution at {path.parent}")
    command = [sys.executable, "-m", "kafkapy", str(path),
               "--override", f"log.dirs={tmp_path / 'logs'}"]
    code, output = _run_to_exit(command)
    _assert_one_line_failure(code, output, "KRaft mode is not supported by kafkapy",
                             "process.roles=")
