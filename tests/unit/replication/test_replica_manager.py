"""ReplicaManager.append_records and fetch_messages, called directly on real logs.

One broker's real pieces in a tmp dir: a LogManager, a metadata cache, a ReplicaManager
that leads (or follows) the partitions a LeaderAndIsr gave it, and the fetch and
produce purgatories on one timing wheel driven by a mock clock.  The "follower" of a
two-replica partition is played by fetches with its replica id, which is how the
leader learns where a follower is.  Nothing is mocked below the replica manager.
"""
from __future__ import annotations

import asyncio
import uuid
from types import SimpleNamespace

import pytest

from kafkapy.api.late_answer import LateAnswer
from kafkapy.clock import MockClock
from kafkapy.log.manager import LogManager
from kafkapy.metadata.cache import BrokerEndpoint, MetadataCache, PartitionState, TopicMetadata
from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.purgatory import Purgatory, Timer
from kafkapy.records.record import CONTROL_ABORT, build_batch, build_control_batch
from kafkapy.replication import txn_verification
from kafkapy.replication.fetch_session import PartitionRequest, TopicIdPartition
from kafkapy.replication.partition import AppendResult
from kafkapy.replication.replica_manager import (COORDINATOR, FetchParams, PartitionChange,
                                                 ReplicaManager, replica_fetch_key)

TS = 1_700_000_000_000
NODE = 0
FOLLOWER = 1
TOPIC = "t"
PRODUCE_VERSION = 9


class Node:
    """One broker's replica manager over a real log dir."""

    def __init__(self, tmp_path, topic_configs: dict | None = None, verifier=None) -> None:
        self.clock = MockClock(TS)
        self.logs = LogManager([str(tmp_path / "logs")], self.clock, {})
        self.logs.load("cluster", NODE)
        self.cache = MetadataCache("cluster", NODE)
        for node in (NODE, FOLLOWER):
            endpoint = BrokerEndpoint(node, "127.0.0.1", 9000 + node)
            self.cache.put_broker(endpoint, {"PLAINTEXT": endpoint})
        self.config = {"transaction.partition.verification.enable": False}
        configs = topic_configs or {}
        self.rm = ReplicaManager(self.logs, NODE, lambda name: dict(configs.get(name, {})),
                                 cache=self.cache, config=self.config,
                                 txn_coordinator=lambda: verifier)
        self.timer = Timer(None, self.clock)
        self.loop = asyncio.new_event_loop()
        self.rm.attach_purgatories(Purgatory("Fetch", self.timer), Purgatory("Produce", self.timer),
                                   self.loop)

    def lead(self, topic: str = TOPIC, replicas=(NODE,), isr=None, leader: int = NODE,
             partitions=(0,), epoch: int = 0) -> None:
        states = {i: PartitionState(i, list(replicas), leader, epoch,
                                    list(replicas if isr is None else isr), controller_epoch=1)
                  for i in partitions}
        topic_id = uuid.uuid5(uuid.NAMESPACE_DNS, topic)
        self.cache.put_topic(TopicMetadata(topic, topic_id, states))
        errors = self.rm.become_leader_or_follower(
            1, 1, [PartitionChange(topic, topic_id, s, True) for s in states.values()])
        assert set(errors.values()) == {0}, errors

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)
        self.timer.advance_clock()

    def log(self, topic: str = TOPIC, index: int = 0):
        return self.rm.partitions[(topic, index)].log

    def close(self) -> None:
        self.logs.shutdown()
        self.loop.close()

    # -- produce ------------------------------------------------------------------------
    def produce(self, records: dict, acks: int = 1, refused=None, timeout_ms: int = 30_000,
                internal_topics_allowed: bool = False, transactional_id=None,
                version: int = PRODUCE_VERSION, origin: str | None = None):
        entries = [(topic, SimpleNamespace(index=index, records=data))
                   for (topic, index), data in records.items()]
        kwargs = {} if origin is None else {"origin": origin}
        return self.rm.append_records(
            entries, refused or [None] * len(entries), required_acks=acks,
            timeout_ms=timeout_ms, produce_version=version,
            internal_topics_allowed=internal_topics_allowed,
            transactional_id=transactional_id, respond=list, **kwargs)

    # -- fetch --------------------------------------------------------------------------
    def fetch(self, offsets: dict, replica: int = -1, version: int = 12, max_wait_ms: int = 0,
              min_bytes: int = 1, max_bytes: int = 1 << 20, partition_max_bytes: int = 1 << 20,
              read_committed: bool = False, epoch: int = -1, respond=list):
        partitions = [(TopicIdPartition(None, topic, index),
                       PartitionRequest(offset, -1, partition_max_bytes, epoch, -1))
                      for (topic, index), offset in offsets.items()]
        params = FetchParams(version, replica, -1, max_wait_ms, min_bytes, max_bytes,
                             1 if read_committed else 0)
        return self.rm.fetch_messages(params, partitions, respond)


@pytest.fixture
def node(tmp_path):
    n = Node(tmp_path)
    yield n
    n.close()


def batch(n: int = 3, value: bytes = b"v" * 100, **kw) -> bytes:
    return build_batch([(b"k%d" % i, value, (), TS + i) for i in range(n)], **kw)


def only(results):
    [(_, _, result)] = results
    return result


def slices_bytes(result) -> bytes:
    return result.read_bytes()


# -- append_records ------------------------------------------------------------------------

def test_acks_one_appends_to_the_leader_and_answers_at_once(node):
    node.lead(partitions=(0, 1))
    results = node.produce({(TOPIC, 0): batch(3), (TOPIC, 1): batch(2)})
    assert [(t, i, r.error_code, r.base_offset) for t, i, r in results] == \
        [(TOPIC, 0, 0, 0), (TOPIC, 1, 0, 0)]
    results = node.produce({(TOPIC, 0): batch(2)})
    assert (only(results).base_offset, only(results).last_offset) == (3, 4)
    assert node.log().log_end_offset == 5 and node.log().high_watermark == 5


def test_refused_entries_are_answered_in_their_place_and_not_appended(node):
    node.lead()
    unauthorized = AppendResult(E.TOPIC_AUTHORIZATION_FAILED)
    results = node.produce({(TOPIC, 0): batch(3)}, refused=[unauthorized])
    assert results == [(TOPIC, 0, unauthorized)]
    assert node.log().log_end_offset == 0


def test_internal_topics_take_writes_only_when_the_request_may(node):
    node.lead("__consumer_offsets")
    key = ("__consumer_offsets", 0)
    assert only(node.produce({key: batch(1)})).error_code == E.INVALID_TOPIC_EXCEPTION
    assert node.log(*key).log_end_offset == 0
    assert only(node.produce({key: batch(1)}, internal_topics_allowed=True)).error_code == 0
    assert node.log(*key).log_end_offset == 1


def test_a_replica_that_does_not_lead_is_not_leader_or_follower(node):
    node.lead(replicas=(FOLLOWER, NODE), leader=FOLLOWER)
    assert only(node.produce({(TOPIC, 0): batch(1)})).error_code == E.NOT_LEADER_OR_FOLLOWER
    assert only(node.produce({("nope", 0): batch(1)})).error_code == \
        E.UNKNOWN_TOPIC_OR_PARTITION


def test_client_records_are_validated_by_the_partition(node):
    node.lead()
    corrupt = bytearray(batch(2))
    corrupt[-1] ^= 0xFF
    assert only(node.produce({(TOPIC, 0): bytes(corrupt)})).error_code == E.CORRUPT_MESSAGE
    assert node.log().log_end_offset == 0


def test_acks_all_below_min_isr_appends_nothing(tmp_path):
    node = Node(tmp_path, {TOPIC: {"min.insync.replicas": 2}})
    try:
        node.lead(replicas=(NODE, FOLLOWER), isr=(NODE,))
        result = only(node.produce({(TOPIC, 0): batch(2)}, acks=-1))
        assert result.error_code == E.NOT_ENOUGH_REPLICAS
        assert node.log().log_end_offset == 0
        assert only(node.produce({(TOPIC, 0): batch(2)}, acks=1)).error_code == 0
    finally:
        node.close()


def test_acks_all_waits_until_the_follower_fetch_moves_the_high_watermark(node):
    node.lead(replicas=(NODE, FOLLOWER))
    pending = node.produce({(TOPIC, 0): batch(3)}, acks=-1)
    assert isinstance(pending, LateAnswer) and not pending.done()
    answered = []   # the listener's callback: given the answer inside the fetch below
    pending.add_done_callback(lambda answer: answered.append(answer.result()))
    assert node.log().log_end_offset == 3 and node.log().high_watermark == 0
    # The follower fetches what was appended (it reads to the log end, not the HW) ...
    read = only_read(node.fetch({(TOPIC, 0): 0}, replica=FOLLOWER))
    assert read.error_code == 0 and read.size == len(batch(3))
    assert not pending.done()
    # ... and its next fetch offset says it has it: the HW moves, the produce answers,
    # there and then (no loop runs in this test).
    node.fetch({(TOPIC, 0): 3}, replica=FOLLOWER)
    assert node.log().high_watermark == 3
    assert answered == [pending.result()]
    [(topic, index, result)] = pending.result()
    assert (topic, index, result.error_code, result.base_offset) == (TOPIC, 0, 0, 0)


def test_acks_all_times_out(node):
    node.lead(replicas=(NODE, FOLLOWER))
    pending = node.produce({(TOPIC, 0): batch(1)}, acks=-1, timeout_ms=1000)
    node.advance(999)
    assert not pending.done()
    node.advance(2)
    result = only(pending.result())
    assert (result.error_code, result.log_start_offset) == (E.REQUEST_TIMED_OUT, -1)


def test_acks_all_answers_each_partition_once(node):
    """Kafka's DelayedProduce keeps one status per partition: a partition named twice is
    answered once, in its first place, with its last append."""
    node.lead()
    node.produce({(TOPIC, 0): batch(1)}, acks=-1)
    entries = [(TOPIC, SimpleNamespace(index=0, records=batch(1))),
               (TOPIC, SimpleNamespace(index=0, records=batch(2)))]
    results = node.rm.append_records(entries, [None, None], required_acks=-1, timeout_ms=1000,
                                     produce_version=PRODUCE_VERSION,
                                     internal_topics_allowed=False, transactional_id=None,
                                     respond=list)
    assert [(t, i, r.base_offset) for t, i, r in results] == [(TOPIC, 0, 2)]


def test_transactional_batches_are_verified_when_enabled(node):
    node.lead()
    node.config["transaction.partition.verification.enable"] = True
    records = batch(2, producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True)
    result = only(node.produce({(TOPIC, 0): records}, transactional_id="tx"))
    # No coordinator answers here: Kafka's answer old clients retry without a metadata refresh.
    assert (result.error_code, result.message_is_public) == (E.NOT_ENOUGH_REPLICAS, True)
    assert result.error_message.endswith("Underlying error: COORDINATOR_NOT_AVAILABLE")
    assert node.log().log_end_offset == 0
    # Not verified: appended, and the producer now has a transaction open here ...
    node.config["transaction.partition.verification.enable"] = False
    assert only(node.produce({(TOPIC, 0): records}, transactional_id="tx")).error_code == 0
    # ... so its next batch goes on without asking the coordinator.
    node.config["transaction.partition.verification.enable"] = True
    more = batch(1, producer_id=7, producer_epoch=0, base_sequence=2, is_transactional=True)
    assert only(node.produce({(TOPIC, 0): more}, transactional_id="tx")).error_code == 0
    # A batch that is not transactional is never verified.
    assert only(node.produce({(TOPIC, 0): batch(1)}, transactional_id="tx")).error_code == 0


class RemoteVerifier:
    """A transaction coordinator on another broker: each question is answered by the test
    (the future ``verify`` returns)."""

    def __init__(self, loop) -> None:
        self.loop = loop
        self.asked: list[tuple] = []

    def verify(self, transactional_id, producer_id, epoch, tp):
        answer = self.loop.create_future()
        self.asked.append((transactional_id, producer_id, epoch, tp, answer))
        return answer

    def add(self, transactional_id, producer_id, epoch, tp):
        raise AssertionError("a v3-11 produce is verified, never added")


def test_verification_waits_for_a_coordinator_on_another_broker(tmp_path):
    """The append waits for the remote coordinator's answer: a partition outside the
    transaction is refused and nothing is written; one inside is appended."""
    loop = asyncio.new_event_loop()
    verifier = RemoteVerifier(loop)
    node = Node(tmp_path, verifier=verifier)
    try:
        node.lead()
        node.config["transaction.partition.verification.enable"] = True

        def produce_answered(seq: int, version: int, answer: int):
            records = batch(2, producer_id=7, producer_epoch=3, base_sequence=seq,
                            is_transactional=True)

            async def run():
                pending = node.produce({(TOPIC, 0): records}, transactional_id="tx",
                                       version=version)
                assert asyncio.isfuture(pending) and not pending.done()
                assert node.log().log_end_offset == (0 if seq == 0 else 2)
                *question, future = verifier.asked.pop()
                assert question == ["tx", 7, 3, (TOPIC, 0)]
                future.set_result(answer)
                return only(await pending)
            return loop.run_until_complete(run())

        refused = produce_answered(0, 11, E.TRANSACTION_ABORTABLE)
        assert refused.error_code == E.TRANSACTION_ABORTABLE
        old = produce_answered(0, 10, E.TRANSACTION_ABORTABLE)
        assert (old.error_code, old.error_message) == \
            (E.INVALID_TXN_STATE, "Partition was not added to the transaction")
        fenced = produce_answered(0, 11, E.PRODUCER_FENCED)
        assert fenced.error_code == E.INVALID_PRODUCER_EPOCH
        assert node.log().log_end_offset == 0
        assert produce_answered(0, 11, 0).error_code == 0
        assert node.log().log_end_offset == 2
        # Its transaction is open here now: the next batch is not asked about.
        more = batch(1, producer_id=7, producer_epoch=3, base_sequence=2, is_transactional=True)
        assert only(node.produce({(TOPIC, 0): more}, transactional_id="tx")).error_code == 0
        assert verifier.asked == []
    finally:
        node.close()
        loop.close()


def test_verification_failures_as_kafka_answers_them():
    assert txn_verification.failure(E.PRODUCER_FENCED, 9).error_code == E.INVALID_PRODUCER_EPOCH
    assert txn_verification.failure(E.INVALID_TXN_STATE, 11).error_code == \
        E.TRANSACTION_ABORTABLE
    old = txn_verification.failure(E.INVALID_TXN_STATE, 10)
    assert (old.error_code, old.error_message) == \
        (E.INVALID_TXN_STATE, "Partition was not added to the transaction")


def test_coordinator_origin_appends_the_brokers_own_batch(node):
    """A coordinator's batch skips the client checks (a control batch is no client's)."""
    node.lead()
    marker = build_control_batch(CONTROL_ABORT, 0, 7, 0, TS)
    assert only(node.produce({(TOPIC, 0): marker})).error_code == E.INVALID_RECORD
    assert only(node.produce({(TOPIC, 0): marker}, origin=COORDINATOR)).error_code == 0
    assert node.log().log_end_offset == 1


# -- fetch_messages ------------------------------------------------------------------------

def only_read(results):
    [result] = results
    return result


def test_a_consumer_reads_up_to_the_high_watermark_a_follower_to_the_log_end(node):
    node.lead(replicas=(NODE, FOLLOWER))
    node.produce({(TOPIC, 0): batch(3)})
    consumer = only_read(node.fetch({(TOPIC, 0): 0}))
    assert (consumer.error_code, consumer.size, consumer.high_watermark) == (0, 0, 0)
    follower = only_read(node.fetch({(TOPIC, 0): 0}, replica=FOLLOWER))
    assert follower.size == len(batch(3))
    node.fetch({(TOPIC, 0): 3}, replica=FOLLOWER)
    consumer = only_read(node.fetch({(TOPIC, 0): 0}))
    assert (consumer.size, consumer.high_watermark) == (len(batch(3)), 3)
    with open(node.log().segments[0].log_path, "rb") as f:
        assert slices_bytes(consumer) == f.read()


def test_a_read_is_a_byte_count_in_one_file_slice(tmp_path):
    node = Node(tmp_path, {TOPIC: {"segment.bytes": 1000}})
    try:
        node.lead()
        size = len(batch(3))            # about 400 bytes: two batches per segment
        for _ in range(4):
            node.produce({(TOPIC, 0): batch(3)})
        assert len(node.log().segments) == 2
        # v3+: the first batch whole past the limit (KIP-74), nothing more.
        read = only_read(node.fetch({(TOPIC, 0): 0}, partition_max_bytes=10))
        assert read.size == size
        # A byte count: the second batch is cut short, as Kafka's LogSegment.read.
        read = only_read(node.fetch({(TOPIC, 0): 0}, partition_max_bytes=size + 50))
        [found] = read.found
        assert (found.position, found.size, found.first_offset) == (0, size + 50, 0)
        # One segment per read, whatever the budget.
        read = only_read(node.fetch({(TOPIC, 0): 0}))
        assert read.size == 2 * size
        read = only_read(node.fetch({(TOPIC, 0): 7}))
        assert (read.found[0].first_offset, read.size) == (6, size * 2)
        # v0-2: the limits are hard.
        read = only_read(node.fetch({(TOPIC, 0): 0}, version=2, partition_max_bytes=10))
        assert read.size == 10
        # The whole request's max_bytes is shared, in order.
        results = node.fetch({(TOPIC, 0): 0}, max_bytes=size + 1)
        assert only_read(results).size == size + 1
        # The broker's own reader (Log.read) keeps whole batches across segments.
        assert sum(s.size for s in node.log().read(0, 1 << 20)) == 4 * size
    finally:
        node.close()


def test_read_committed_stops_at_the_lso_and_lists_aborted_transactions(node):
    node.lead()
    txn = batch(2, producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True)
    node.produce({(TOPIC, 0): txn}, transactional_id="tx")
    uncommitted = only_read(node.fetch({(TOPIC, 0): 0}))
    committed = only_read(node.fetch({(TOPIC, 0): 0}, read_committed=True))
    assert uncommitted.size == len(txn) and uncommitted.aborted is None
    assert (committed.size, committed.last_stable_offset, committed.aborted) == (0, 0, [])
    node.produce({(TOPIC, 0): build_control_batch(CONTROL_ABORT, 0, 7, 0, TS)},
                 origin=COORDINATOR)
    node.produce({(TOPIC, 0): batch(1)})
    committed = only_read(node.fetch({(TOPIC, 0): 0}, read_committed=True))
    assert committed.last_stable_offset == 4 and committed.size > len(txn)
    assert [(t.producer_id, t.first_offset) for t in committed.aborted] == [(7, 0)]


def test_read_errors_per_partition(node):
    node.lead(partitions=(0,), epoch=3)
    node.cache.put_topic(TopicMetadata("elsewhere", uuid.uuid4(), {
        0: PartitionState(0, [FOLLOWER], FOLLOWER, 0, [FOLLOWER])}))
    node.produce({(TOPIC, 0): batch(1)})
    assert only_read(node.fetch({(TOPIC, 0): 5})).error_code == E.OFFSET_OUT_OF_RANGE
    assert only_read(node.fetch({("elsewhere", 0): 0})).error_code == E.NOT_LEADER_OR_FOLLOWER
    assert only_read(node.fetch({(TOPIC, 0): 0}, epoch=2)).error_code == E.FENCED_LEADER_EPOCH
    assert only_read(node.fetch({(TOPIC, 0): 0}, epoch=4)).error_code == E.UNKNOWN_LEADER_EPOCH
    # A follower must be another assigned replica.
    assert only_read(node.fetch({(TOPIC, 0): 0}, replica=FOLLOWER)).error_code == \
        E.NOT_LEADER_OR_FOLLOWER
    # An error answers at once even with a wait.
    results = node.fetch({(TOPIC, 0): 1, ("elsewhere", 0): 0}, max_wait_ms=500, min_bytes=10)
    assert [r.error_code for r in results] == [0, E.NOT_LEADER_OR_FOLLOWER]


def test_a_fetch_below_min_bytes_waits_for_an_append(node):
    node.lead()
    node.produce({(TOPIC, 0): batch(1)})
    pending = node.fetch({(TOPIC, 0): 1}, max_wait_ms=500, min_bytes=300)
    assert isinstance(pending, LateAnswer) and not pending.done()
    node.produce({(TOPIC, 0): batch(1)})           # too few bytes yet
    assert not pending.done()
    node.produce({(TOPIC, 0): batch(2)})
    read = only_read(pending.result())
    assert read.size >= 300 and read.found[0].first_offset == 1


def test_a_fetch_below_min_bytes_answers_at_max_wait(node):
    node.lead()
    pending = node.fetch({(TOPIC, 0): 0}, max_wait_ms=500, min_bytes=1)
    node.advance(499)
    assert not pending.done()
    node.advance(2)
    assert only_read(pending.result()).size == 0


def test_a_throttled_follower_fetch_waits_out_appends_and_answers_no_records(tmp_path):
    """Leader throttle (Kafka's DelayedFetch): the bytes appended to a throttled partition
    do not end an out-of-sync follower's wait while the quota is exceeded, and the read at
    the deadline answers no records."""
    n = Node(tmp_path, topic_configs={TOPIC: {"leader.replication.throttled.replicas": ["*"]}})
    try:
        n.config["leader.replication.throttled.rate"] = 1
        n.lead(replicas=(NODE, FOLLOWER), isr=(NODE,))
        n.rm.leader_quota.record(1 << 20)      # far over 1 byte/s
        pending = n.fetch({(TOPIC, 0): 0}, replica=FOLLOWER, max_wait_ms=500, min_bytes=1)
        assert isinstance(pending, LateAnswer) and not pending.done()
        n.produce({(TOPIC, 0): batch(3)})
        assert not pending.done()
        n.advance(501)
        read = only_read(pending.result())
        assert read.error_code == 0 and read.size == 0 and read.found == []
        # Unthrottled (no rate), the same wait ends with the append.
        n.config.pop("leader.replication.throttled.rate")
        pending = n.fetch({(TOPIC, 0): 3}, replica=FOLLOWER, max_wait_ms=500, min_bytes=1)
        assert not pending.done()
        n.produce({(TOPIC, 0): batch(2)})
        read = only_read(pending.result())
        assert read.size > 0 and read.found[0].first_offset == 3
    finally:
        n.close()


def test_a_moving_high_watermark_wakes_consumers_not_a_parked_follower_fetch(node):
    """A follower reads to the log end: its parked fetch is watched on the followers' key,
    which an append checks and a high watermark that moves does not; a consumer's fetch
    waiting for the high watermark is woken by the move."""
    other = FOLLOWER + 1
    endpoint = BrokerEndpoint(other, "127.0.0.1", 9000 + other)
    node.cache.put_broker(endpoint, {"PLAINTEXT": endpoint})
    node.lead(replicas=(NODE, FOLLOWER, other))
    node.produce({(TOPIC, 0): batch(3)})
    key = (TOPIC, 0)
    follower = node.fetch({key: 3}, replica=FOLLOWER, max_wait_ms=500)
    consumer = node.fetch({key: 0}, max_wait_ms=500)
    purgatory = node.rm.fetch_purgatory
    assert purgatory.watched(replica_fetch_key(key)) == 1 and purgatory.watched(key) == 1
    followers_checked = []   # the replica manager's checks of the followers' key
    check = purgatory.check_and_complete
    purgatory.check_and_complete = lambda k: followers_checked.append(k) or check(k)
    node.fetch({key: 3}, replica=other)         # the last ISR member: the HW moves to 3
    assert node.log().high_watermark == 3
    assert only_read(consumer.result()).size == len(batch(3))
    assert followers_checked == [] and not follower.done()
    node.produce({key: batch(1)})               # the log end moves: the follower reads
    assert followers_checked == [replica_fetch_key(key)]
    assert only_read(follower.result()).found[0].first_offset == 3


def test_a_follower_fetch_is_answered_by_an_append_its_own_fetch_offset_caused(node):
    """A follower's fetch offset moves the high watermark, and what that wakes appends
    to the partition before the fetch parks: the fetch, which read nothing, answers the
    new batch at once instead of waiting for another append."""
    other = FOLLOWER + 1
    endpoint = BrokerEndpoint(other, "127.0.0.1", 9000 + other)
    node.cache.put_broker(endpoint, {"PLAINTEXT": endpoint})
    node.lead(replicas=(NODE, FOLLOWER, other))
    key = (TOPIC, 0)
    node.produce({key: batch(3)})
    node.fetch({key: 3}, replica=FOLLOWER, max_wait_ms=500)
    appended = []

    def append_once(moved):
        if moved == key and node.log().high_watermark == 3 and not appended:
            appended.append(True)
            node.produce({key: batch(1)})

    node.rm.add_append_listener(append_once)
    pending = node.fetch({key: 3}, replica=other, max_wait_ms=500)   # moves the HW to 3
    assert appended and node.log().log_end_offset == 4
    assert isinstance(pending, LateAnswer) and pending.done()
    assert only_read(pending.result()).found[0].first_offset == 3


def test_a_consumer_fetch_past_the_high_watermark_answers_at_once(node):
    """Its read finds nothing below the high watermark, but the wait's first try sees the
    fetch offset past the watermark's position and answers (empty) without waiting."""
    node.lead(replicas=(NODE, FOLLOWER))
    key = (TOPIC, 0)
    node.produce({key: batch(3)})
    assert node.log().high_watermark == 0
    pending = node.fetch({key: 2}, max_wait_ms=500)
    assert not isinstance(pending, LateAnswer) or pending.done()


def test_a_respond_that_raises_fails_the_waiting_fetch(node):
    node.lead()

    def respond(results):
        raise ValueError("cannot answer")

    pending = node.fetch({(TOPIC, 0): 0}, max_wait_ms=500, respond=respond)
    node.advance(501)
    assert isinstance(pending.exception(), ValueError)
    with pytest.raises(ValueError):     # at once: the caller gets it
        node.fetch({(TOPIC, 0): 0}, respond=respond)


def test_the_leader_and_its_epoch_for_error_hints(node):
    node.lead(epoch=4)
    node.cache.put_topic(TopicMetadata("elsewhere", uuid.uuid4(), {
        0: PartitionState(0, [FOLLOWER], FOLLOWER, 9, [FOLLOWER])}))
    assert node.rm.leader_and_epoch(TOPIC, 0) == (NODE, 4)
    assert node.rm.leader_and_epoch("elsewhere", 0) == (FOLLOWER, 9)
    assert node.rm.leader_and_epoch("nope", 0) == (-1, -1)
