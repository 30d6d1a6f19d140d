"""``kafkapy.testing.cluster``'s faults, proven with kafka-python against three real brokers.

Each test runs its own cluster on one ``MockClock`` (faults change the cluster for good):
* ``partition(leader, followers)``: the followers stop fetching, the ISR shrinks to the
  leader (via the controller, the leader itself here) after ``replica.lag.time.max.ms`` on
  the clock, acks=all answers NOT_ENOUGH_REPLICAS; after ``heal()`` the followers catch up
  and acks=all works again;
* ``isolate(leader)``: past the session timeout on the clock the controller moves the
  leadership; the old leader, still believing it leads, cannot acknowledge acks=all; after
  ``heal()`` it registers again, follows, and its unacknowledged record is gone;
* ``pause(leader)``: its client connection gets no answer; past the session timeout the
  leadership moves; ``resume`` sends the held answer and the broker rejoins the ISR;
* ``heal()`` after a pause, a partition and an expired session: the cluster is whole again;
* the partition again on a real ZooKeeper (links do not depend on the store), and an isolation
  from the store without a mock clock (the session expires in real time).

``replica.fetch.backoff.ms`` is short: a follower's back-off after an error is a real-time
wait, and the followers must keep up while the tests move the clock.
"""
from __future__ import annotations

import socket
import struct
import time

import pytest
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewTopic
from kafka.errors import NotEnoughReplicasError

from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import REQUESTS
from kafkapy.records.record import build_batch
from kafkapy.testing import MockClock, cluster
from tests.support.wire import WireClient
from tests.support.zookeeper_server import zookeeper_server  # noqa: F401 (fixture)

_Produce = REQUESTS[0]
_PartitionData = _Produce.TopicProduceData.PartitionProduceData
SESSION_TIMEOUT_MS = 6000
LAG_MS = 1000
TOPIC = "orders"
ALL = [1, 2, 3]


@pytest.fixture
def c():
    with cluster(brokers=3, clock=MockClock(), replica_lag_time_max_ms=LAG_MS,
                 replica_fetch_backoff_ms=10,
                 zookeeper_session_timeout_ms=SESSION_TIMEOUT_MS) as handle:
        yield handle


def _until(c, condition, what: str, step_ms: int = 50, rounds: int = 400):
    """Check ``condition``, moving the clock ``step_ms`` between checks (bounded)."""
    for _ in range(rounds):
        value = condition()
        if value:
            return value
        time.sleep(0.005)
        c.advance(step_ms)
    raise AssertionError(f"not reached: {what}")


def _producer(bootstrap: str, **settings) -> KafkaProducer:
    return KafkaProducer(bootstrap_servers=bootstrap, **{"acks": "all", **settings})


def _acked(c, producer: KafkaProducer, value: bytes):
    """Send ``value`` and return its RecordMetadata (or raise its error)."""
    future = producer.send(TOPIC, value, partition=0)
    _until(c, lambda: future.is_done, f"an answer for {value!r}")
    return future.get(0)


def _values(c, broker_id: int) -> list[bytes]:
    """The partition's records on ``broker_id`` up to its high watermark."""
    return [r.value for r in c.broker(broker_id).records(TOPIC, 0)]


def _end_offset(c, broker_id: int) -> int:
    return c.broker(broker_id).async_handle.server.log_manager.get_log(
        TOPIC, 0).log_end_offset


def _leading(c, broker_id: int) -> bool:
    """Whether broker ``broker_id`` itself believes it leads the partition."""
    return c.broker(broker_id).async_handle.server.replica_manager.partitions[
        (TOPIC, 0)].is_leader


def _topic(c, replicas: list[int] | None = None) -> int:
    """The topic at replication factor 3, min.insync.replicas=2 (``replicas``: the
    assignment, first the preferred leader); returns its leader."""
    admin = KafkaAdminClient(bootstrap_servers=c.bootstrap)
    try:
        admin.create_topics([NewTopic(TOPIC, -1, -1, replica_assignments={0: replicas or ALL},
                                      topic_configs={"min.insync.replicas": "2"})])
    finally:
        admin.close()
    leader = c.wait_leader(TOPIC, 0)
    c.wait_isr(TOPIC, 0)
    return leader


def test_partitioned_leader_refuses_acks_all_then_followers_catch_up(c):
    _partition_leader_from_followers(c)


def test_partition_on_zookeeper(zookeeper_server):  # noqa: F811
    with cluster(brokers=3, zookeeper=zookeeper_server.connect_string, clock=MockClock(),
                 replica_lag_time_max_ms=LAG_MS, replica_fetch_backoff_ms=10) as zc:
        with pytest.raises(RuntimeError):
            zc.isolate(1)                   # a ZooKeeper session cannot be cut from here
        _partition_leader_from_followers(zc)


def _partition_leader_from_followers(c) -> None:
    leader = c.controller.broker_id         # it can still shrink its ISR
    followers = [b for b in ALL if b != leader]
    _topic(c, [leader, *followers])
    producer = _producer(c.bootstrap, retries=0)
    one = _producer(c.bootstrap, acks=1)
    try:
        assert _acked(c, producer, b"before").offset == 0

        c.partition(leader, followers)
        assert _acked(c, one, b"only-on-the-leader").offset == 1
        _until(c, lambda: c.isr(TOPIC, 0) == [leader], "the ISR shrunk to the leader")
        with pytest.raises(NotEnoughReplicasError):
            _acked(c, producer, b"refused")
        assert [_end_offset(c, b) for b in followers] == [1, 1]     # "before" only

        c.heal()
        _until(c, lambda: sorted(c.isr(TOPIC, 0)) == ALL, "the followers back in the ISR")
        assert _acked(c, producer, b"after").offset == 2
        _until(c, lambda: all(_values(c, b) == [b"before", b"only-on-the-leader", b"after"]
                              for b in followers), "the followers caught up")
    finally:
        producer.close()
        one.close()


def test_isolated_leader_loses_leadership_and_fences_itself(c):
    old = _topic(c)
    with _producer(c.bootstrap) as producer:
        assert _acked(c, producer, b"before").offset == 0

    c.isolate(old)                          # from the other brokers and the store
    c.advance(SESSION_TIMEOUT_MS + 1)
    new = c.wait_leader(TOPIC, 0, other_than=old)
    assert old not in c.isr(TOPIC, 0)
    assert _leading(c, old)                 # it has not heard: it still believes it leads

    with _producer(c.broker(new).bootstrap) as producer:
        assert _acked(c, producer, b"after").offset == 1
    # Straight to the old leader: it takes the record but cannot acknowledge it (acks=all).
    assert _produce_to(c, old, b"stale") == ErrorCode.REQUEST_TIMED_OUT
    assert _end_offset(c, old) == 2

    c.heal()
    _until(c, lambda: not _leading(c, old) and sorted(c.isr(TOPIC, 0)) == ALL,
           "the old leader following again, in the ISR")
    assert c.leader(TOPIC, 0) == new
    _until(c, lambda: _values(c, old) == [b"before", b"after"], "the old leader truncated")


def _produce_to(c, broker_id: int, value: bytes) -> int:
    """Produce ``value`` (acks=all, 5 s on the clock) on a connection to ``broker_id`` only;
    returns the error code of its answer, moving the clock until it comes."""
    wire = WireClient(c.broker(broker_id).bootstrap)
    try:
        batch = build_batch([(None, value, (), int(time.time() * 1000))])
        correlation, frame = wire.encode(0, 9, transactional_id=None, acks=-1, timeout_ms=5000,
                                         topic_data=[_Produce.TopicProduceData(
                                             name=TOPIC, partition_data=[
                                                 _PartitionData(index=0, records=batch)])])
        wire.send_raw(frame)
        wire.sock.settimeout(0.05)
        for _ in range(400):
            try:
                answer = wire.read_response(0, 9, correlation)
                return answer.responses[0].partition_responses[0].error_code
            except socket.timeout:
                c.advance(100)
        raise AssertionError(f"no answer from broker {broker_id}")
    finally:
        wire.close()


def _api_versions_request(correlation_id: int) -> bytes:
    client_id = b"fault-test"
    body = struct.pack(">hhih", 18, 0, correlation_id, len(client_id)) + client_id
    return struct.pack(">i", len(body)) + body


def _answer(sock: socket.socket) -> int | None:
    """The correlation id of the next answer on ``sock``, None if none came in 0.3 s."""
    sock.settimeout(0.3)
    try:
        head = sock.recv(8, socket.MSG_WAITALL)
    except socket.timeout:
        return None
    return struct.unpack(">ii", head)[1]


def test_paused_broker_loses_leadership_and_rejoins_on_resume(c):
    old = _topic(c)
    with _producer(c.bootstrap) as producer:
        assert _acked(c, producer, b"before").offset == 0
    host, port = c.broker(old).bootstrap.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=5)
    try:
        c.pause(old)
        sock.sendall(_api_versions_request(7))
        assert _answer(sock) is None         # nothing read, nothing answered

        c.advance(SESSION_TIMEOUT_MS + 1)
        new = c.wait_leader(TOPIC, 0, other_than=old)
        with _producer(c.broker(new).bootstrap) as producer:
            assert _acked(c, producer, b"while-paused").offset == 1

        c.resume(old)
        assert _answer(sock) == 7            # the request waited, then was answered
    finally:
        sock.close()
    _until(c, lambda: sorted(c.isr(TOPIC, 0)) == ALL, "the resumed broker in the ISR")
    _until(c, lambda: _values(c, old) == [b"before", b"while-paused"], "it caught up")


def test_heal_removes_every_fault(c):
    _topic(c)
    c.pause(1)
    c.advance(SESSION_TIMEOUT_MS + 1)       # broker 1's session expires meanwhile
    c.partition(2, 3)
    c.isolate(3, peers=False, metadata=True)

    c.heal()
    c.wait_ready()
    _until(c, lambda: sorted(c.isr(TOPIC, 0)) == ALL, "every replica in the ISR")
    leader = c.wait_leader(TOPIC, 0)
    with _producer(c.bootstrap) as producer:
        assert _acked(c, producer, b"whole-again").offset == 0
    _until(c, lambda: all(_values(c, b) == [b"whole-again"] for b in ALL),
           "every replica has the record")
    assert leader in ALL


def test_without_a_mock_clock_the_session_expires_in_real_time():
    with cluster(brokers=3, replica_fetch_backoff_ms=10,
                 zookeeper_session_timeout_ms=1000) as real:
        real.create_topic(TOPIC, 1, 3)
        old = real.leader(TOPIC, 0)
        started = time.monotonic()
        real.isolate(old, peers=False)      # from the store only
        new = real.wait_leader(TOPIC, 0, other_than=old, timeout_ms=10_000)
        assert new != old and time.monotonic() - started >= 1.0
        real.heal()
        real.wait_ready()
        assert sorted(real.wait_isr(TOPIC, 0, timeout_ms=10_000)) == ALL
