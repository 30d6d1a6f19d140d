"""kafkapy.testing with a MockClock: timeouts happen when the test says so, not in real time.

The main case: a consumer group of two members (raw JoinGroup / SyncGroup /
Heartbeat, so no client's own timers interfere); one member goes silent, the clock moves past
session.timeout.ms, and the group rebalances to a new generation without the silent member,
while the test's wall time stays far below the session timeout.  Also: log retention deletes
segments once the clock passes retention.ms, a long-poll Fetch in purgatory answers when the
clock passes its max wait, and a transaction left open is aborted past its timeout.
"""
from __future__ import annotations

import asyncio
import time

import pytest

from kafkapy.protocol.messages import REQUESTS
from kafkapy.testing import MockClock, broker
from tests.support.wire import WireClient

SESSION_MS = 60_000
REBALANCE_IN_PROGRESS = 27
MEMBER_ID_REQUIRED = 79
GROUP = "g"


class _Member:
    """One group member speaking raw requests on its own connection."""

    def __init__(self, bootstrap: str) -> None:
        self.client = WireClient(bootstrap, timeout=30)
        self.member_id = ""
        self.generation = -1
        self._pending: tuple[int, int, int] | None = None    # (api, version, correlation)

    def find_coordinator(self) -> None:
        for _ in range(3000):                    # the offsets topic is created on first use
            if self.client.request(10, 2, key=GROUP, key_type=0).error_code == 0:
                return
            time.sleep(0.01)
        raise AssertionError("no group coordinator")

    def _send(self, api: int, version: int, **fields) -> None:
        correlation, data = self.client.encode(api, version, **fields)
        self.client.send_raw(data)
        self._pending = (api, version, correlation)

    def _read(self):
        api, version, correlation = self._pending
        self._pending = None
        return self.client.read_response(api, version, correlation)

    def send_join(self) -> None:
        protocol = REQUESTS[11].JoinGroupRequestProtocol(version=5, name="range", metadata=b"")
        self._send(11, 5, group_id=GROUP, session_timeout_ms=SESSION_MS,
                   rebalance_timeout_ms=SESSION_MS, member_id=self.member_id,
                   group_instance_id=None, protocol_type="consumer", protocols=[protocol])

    def read_join(self):
        response = self._read()
        if response.error_code == MEMBER_ID_REQUIRED:   # JoinGroup v4+: join again with it
            self.member_id = response.member_id
            self.send_join()
            return None
        assert response.error_code == 0, response
        self.member_id, self.generation = response.member_id, response.generation_id
        return response

    def join(self):
        """Join and wait for the answer (the broker holds it until the rebalance completes)."""
        self.send_join()
        response = self.read_join()
        return response if response is not None else self.read_join()

    def send_sync(self, assignments: list[str] = ()) -> None:
        items = [REQUESTS[14].SyncGroupRequestAssignment(version=3, member_id=m, assignment=b"")
                 for m in assignments]
        self._send(14, 3, group_id=GROUP, generation_id=self.generation,
                   member_id=self.member_id, group_instance_id=None, assignments=items)

    def read_sync(self) -> int:
        return self._read().error_code

    def heartbeat(self) -> int:
        return self.client.request(12, 3, group_id=GROUP, generation_id=self.generation,
                                   member_id=self.member_id, group_instance_id=None).error_code

    def close(self) -> None:
        self.client.close()


def _form_group_of_two(bootstrap: str) -> tuple[_Member, _Member]:
    a, b = _Member(bootstrap), _Member(bootstrap)
    a.find_coordinator()
    a.join()                                    # generation 1: a alone, the leader
    a.send_sync([a.member_id])
    assert a.read_sync() == 0
    b.send_join()                               # b's first answer: MEMBER_ID_REQUIRED
    assert b.read_join() is None                # ... then it waits for the rebalance
    assert a.heartbeat() == REBALANCE_IN_PROGRESS
    a.send_join()
    leader = a.read_join()
    assert b.read_join() is not None
    assert a.generation == b.generation == 2
    assert sorted(m.member_id for m in leader.members) == sorted([a.member_id, b.member_id])
    b.send_sync()                               # a follower's sync waits for the leader's
    a.send_sync([a.member_id, b.member_id])
    assert a.read_sync() == 0 and b.read_sync() == 0
    return a, b


def test_advancing_past_session_timeout_rebalances_the_group_without_waiting():
    started = time.monotonic()
    with broker(clock=MockClock()) as k:
        a, b = _form_group_of_two(k.bootstrap)
        try:
            k.advance(SESSION_MS // 2)
            assert a.heartbeat() == 0           # a stays alive; b says nothing from now on
            k.advance(SESSION_MS // 2 + 1)      # b's session is over, a's is not
            assert a.heartbeat() == REBALANCE_IN_PROGRESS
            leader = a.join()
            assert a.generation == 3
            assert [m.member_id for m in leader.members] == [a.member_id]
            a.send_sync([a.member_id])
            assert a.read_sync() == 0
            assert a.heartbeat() == 0
            assert b.heartbeat() != 0           # UNKNOWN_MEMBER_ID: b was removed
        finally:
            a.close()
            b.close()
    # A sanity guard, not a benchmark: nothing waited for the 60 s session timeout.
    assert time.monotonic() - started < SESSION_MS / 1000 / 3


def test_without_advancing_nobody_is_removed():
    with broker(clock=MockClock()) as k:
        a, b = _form_group_of_two(k.bootstrap)
        try:
            k.advance(SESSION_MS - 1)
            assert a.heartbeat() == 0 and b.heartbeat() == 0
        finally:
            a.close()
            b.close()


async def test_retention_deletes_segments_once_the_clock_passes_retention_ms():
    kafka = pytest.importorskip("kafka")
    async with broker(clock=MockClock()) as k:
        await k.create_topic("r", partitions=1, retention_ms=60_000, segment_bytes=1024)

        def produce() -> None:
            producer = kafka.KafkaProducer(bootstrap_servers=k.bootstrap, linger_ms=0)
            try:
                for i in range(40):
                    producer.send("r", value=b"x" * 100, partition=0).get(timeout=30)
            finally:
                producer.close(timeout=10)

        await asyncio.to_thread(produce)
        log = k.server.log_manager.get_log("r", 0)
        assert len(log.segments) > 3 and len(await k.records("r", 0)) == 40
        await k.advance(30_000)                 # not old enough yet
        assert log.log_start_offset == 0 and len(await k.records("r", 0)) == 40
        await k.advance(31_000)
        assert log.log_start_offset == 40 == log.log_end_offset
        assert len(log.segments) == 1 and await k.records("r", 0) == []


def test_a_long_poll_fetch_answers_when_the_clock_passes_its_max_wait():
    with broker(clock=MockClock()) as k:
        k.create_topic("f", partitions=1)
        client = WireClient(k.bootstrap, timeout=30)
        try:
            partition = REQUESTS[1].FetchTopic.FetchPartition(
                version=4, partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
            correlation, data = client.encode(
                1, 4, replica_id=-1, max_wait_ms=300_000, min_bytes=1, max_bytes=1 << 20,
                isolation_level=0, topics=[REQUESTS[1].FetchTopic(
                    version=4, topic="f", partitions=[partition])])
            client.send_raw(data)
            # advance only once the fetch waits in purgatory: advanced before the broker
            # has read it, its 300 s would start from the new time and never pass
            deadline = time.monotonic() + 30
            while k.server.fetch_purgatory.num_delayed == 0:
                assert time.monotonic() < deadline, "the fetch never waited in purgatory"
                time.sleep(0.01)
            k.advance(300_001)                  # the delayed fetch expires in purgatory
            response = client.read_response(1, 4, correlation)
            assert response.responses[0].partitions[0].error_code == 0
        finally:
            client.close()


def test_an_open_transaction_is_aborted_past_its_timeout():
    confluent_kafka = pytest.importorskip("confluent_kafka")
    with broker(clock=MockClock()) as k:
        k.create_topic("tx", partitions=1)
        producer = confluent_kafka.Producer({
            "bootstrap.servers": k.bootstrap, "transactional.id": "tx-1",
            "transaction.timeout.ms": 60_000})
        producer.init_transactions(30)
        producer.begin_transaction()
        producer.produce("tx", value=b"left open", partition=0)
        assert producer.flush(30) == 0
        end_before = k.server.log_manager.get_log("tx", 0).log_end_offset
        k.advance(60_001)                       # the coordinator aborts it: an ABORT marker
        for _ in range(3000):                    # the marker is written by a task; bounded
            if k.server.log_manager.get_log("tx", 0).log_end_offset > end_before:
                break
            time.sleep(0.01)
        assert k.server.log_manager.get_log("tx", 0).log_end_offset == end_before + 1
        with pytest.raises(confluent_kafka.KafkaException):
            producer.commit_transaction(30)     # fenced: the coordinator bumped the epoch


async def test_compaction_runs_on_advance_past_min_compaction_lag():
    kafka = pytest.importorskip("kafka")
    async with broker(clock=MockClock()) as k:
        await k.create_topic("c", partitions=1, cleanup_policy="compact", segment_bytes=1024,
                             min_compaction_lag_ms=60_000, min_cleanable_dirty_ratio=0.01)

        def produce() -> None:
            producer = kafka.KafkaProducer(bootstrap_servers=k.bootstrap, linger_ms=0)
            try:
                for i in range(40):
                    producer.send("c", key=b"k%d" % (i % 2), value=b"x" * 100,
                                  partition=0).get(timeout=30)
            finally:
                producer.close(timeout=10)

        await asyncio.to_thread(produce)
        assert len(await k.records("c", 0)) == 40
        await k.advance(1_000)                  # too young to compact
        assert len(await k.records("c", 0)) == 40
        await k.advance(60_000)
        kept = await k.records("c", 0)
        assert len(kept) < 40                   # the rolled segments lost their duplicates
        assert kept[-1].offset == 39 and {r.key for r in kept} == {b"k0", b"k1"}


def test_idle_producer_ids_expire_past_producer_id_expiration_ms():
    confluent_kafka = pytest.importorskip("confluent_kafka")
    with broker(clock=MockClock(), producer_id_expiration_ms=3_600_000,
                producer_id_expiration_check_interval_ms=60_000) as k:
        k.create_topic("idem", partitions=1)
        producer = confluent_kafka.Producer({"bootstrap.servers": k.bootstrap,
                                             "enable.idempotence": True})
        producer.produce("idem", value=b"once", partition=0)
        assert producer.flush(30) == 0
        state = k.server.log_manager.get_log("idem", 0).producer_state
        assert len(state.producers) == 1
        k.advance(3_600_000 - 60_000)
        assert len(state.producers) == 1
        k.advance(120_000)
        assert state.producers == {}
