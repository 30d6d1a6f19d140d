"""The prepared state both brokers get before any case runs, by the same wire requests.

Topics (one partition unless said): ``conf-plain`` (10 records, offsets 0-9, then
DeleteRecords moves its log start to 3), ``conf-multi`` (3 partitions, 2 records each),
``conf-compact`` (cleanup.policy=compact, keyed records), ``conf-txn`` (a committed
transaction at 0-1 + marker at 2, an aborted one at 3-4 + marker at 5, then an open one
from 6 that keeps the last stable offset at 6), ``conf-strict`` (16 partitions,
max.message.bytes=200, message.timestamp.type=LogAppendTime), ``conf-produce`` and
``conf-produce-compact`` (16 partitions each, empty: Produce cases of version v write to
partition v, so one version's outcome never shifts another's offsets); likewise
``conf-isr`` (min.insync.replicas=2 on one replica) and ``conf-timestamps``
(message.timestamp.before.max.ms=3600000).
Group ``conf-group`` (no members) has committed offsets for conf-plain 0 and conf-multi 0-2.
Transactional ids: ``conf-txn-id`` (last transaction aborted, CompleteAbort) and
``conf-txn-open`` (Ongoing on conf-txn 0).

The consumer group protocol's pair (Kafka 3.9 in KRaft mode and a kafkapy of its own) gets
``prepare_consumer_protocol`` instead: topics ``cgp-four`` (4 partitions) and ``cgp-two``
(2), each partition with 2 records, and every ``__consumer_offsets`` partition loaded (its
cases' first heartbeat is never answered COORDINATOR_LOAD_IN_PROGRESS).

Invariant: preparation makes the same requests in the same order on both brokers and fails
loudly (``SetupError``) when either broker refuses a step, so cases start from equal state.
"""
from __future__ import annotations

from tests.conformance.cases import FIXED_TIMESTAMP, Side, batch, values  # noqa: F401

PLAIN, MULTI, COMPACT, TXN, STRICT = (
    "conf-plain", "conf-multi", "conf-compact", "conf-txn", "conf-strict")
PRODUCE, PRODUCE_COMPACT = "conf-produce", "conf-produce-compact"   # partition = version
ISR, TIMESTAMPS = "conf-isr", "conf-timestamps"                     # partition = version
GROUP = "conf-group"
TXN_ID, OPEN_TXN_ID = "conf-txn-id", "conf-txn-open"
MISSING = "conf-missing"          # never created (cases never auto-create it)
LOG_START = 3
PLAIN_END = 10
COMMITTED = {(PLAIN, 0): 5, (MULTI, 0): 1, (MULTI, 1): 1, (MULTI, 2): 1}
TOPICS = {
    PLAIN: (1, {}),
    MULTI: (3, {}),
    COMPACT: (1, {"cleanup.policy": "compact"}),
    TXN: (1, {}),
    STRICT: (16, {"max.message.bytes": "200", "message.timestamp.type": "LogAppendTime"}),
    PRODUCE: (16, {}),
    PRODUCE_COMPACT: (16, {"cleanup.policy": "compact"}),
    ISR: (16, {"min.insync.replicas": "2"}),
    TIMESTAMPS: (16, {"message.timestamp.before.max.ms": "3600000"}),
}
CGP_FOUR, CGP_TWO = "cgp-four", "cgp-two"
KRAFT_TOPICS = {CGP_FOUR: 4, CGP_TWO: 2}
KRAFT_RECORDS = 2                   # per partition
WARM_GROUPS = [f"cgp-warm-{i}" for i in range(12)]   # cover every __consumer_offsets partition
CONCURRENT_TRANSACTIONS = 51
# COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR: the internal
# topic is still being created or loaded on first use.
COORDINATOR_WAIT = (14, 15, 16)


def prepare(side: Side) -> None:
    _create_topics(side)
    _produce(side, PLAIN, 0, batch(values(5)))
    _produce(side, PLAIN, 0, batch(values(5, "w")))
    for p in range(3):
        _produce(side, MULTI, p, batch(values(2, f"p{p}-")))
    _produce(side, COMPACT, 0, batch([(b"k0", b"a"), (b"k1", b"b"), (b"k0", b"c")]))
    side.call(21, 1, {"topics": [{"name": PLAIN, "partitions": [
        {"partition_index": 0, "offset": LOG_START}]}], "timeout_ms": 10000})
    _commit_offsets(side)
    _transactions(side)
    refresh_topic_ids(side)


def prepare_consumer_protocol(side: Side) -> None:
    _create_topics(side, {name: (n, {}) for name, n in KRAFT_TOPICS.items()})
    for topic, n in KRAFT_TOPICS.items():
        for p in range(n):
            _produce(side, topic, p, batch(values(KRAFT_RECORDS, f"{topic}-{p}-")),
                     retry_codes=NEW_PARTITION_WAIT)
    side.call(10, 4, {"key_type": 0, "coordinator_keys": WARM_GROUPS},
              retry_codes=COORDINATOR_WAIT, attempts=300,
              code=lambda r: max((c.error_code for c in r.coordinators), key=_waiting))
    side.call(69, 0, {"group_ids": WARM_GROUPS, "include_authorized_operations": False},
              retry_codes=COORDINATOR_WAIT, attempts=300,
              code=lambda r: max((g.error_code for g in r.groups), key=_waiting))
    refresh_topic_ids(side)


def _waiting(code: int) -> tuple:
    return (code in COORDINATOR_WAIT, code)


def _create_topics(side: Side, topics: dict | None = None) -> None:
    topics = TOPICS if topics is None else topics
    side.call(19, 5, {"timeout_ms": 30000, "topics": [
        {"name": name, "num_partitions": n, "replication_factor": 1, "assignments": [],
         "configs": [{"name": k, "value": v} for k, v in cfg.items()]}
        for name, (n, cfg) in topics.items()]})
    def leaderless(r):
        return sum(1 for t in r.topics for p in t.partitions if p.leader_id < 0) + sum(
            1 for t in r.topics if t.error_code) or 0
    side.call(3, 12, {"topics": [{"name": n} for n in topics],
                      "allow_auto_topic_creation": False},
              retry_codes=range(1, 1000), code=leaderless)


def refresh_topic_ids(side: Side) -> None:
    response = side.call(3, 12, {"topics": None, "allow_auto_topic_creation": False})
    side.topic_ids = {t.name: t.topic_id for t in response.topics}


# UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER: a KRaft broker lists a new topic's
# leader in Metadata a moment before its replica takes appends.
NEW_PARTITION_WAIT = (3, 6)


def _produce(side: Side, topic: str, partition: int, records: bytes,
             transactional_id: str | None = None, retry_codes=()) -> None:
    response = side.call(0, 8, {"transactional_id": transactional_id, "acks": -1,
                                "timeout_ms": 10000, "topic_data": [
                                    {"name": topic, "partition_data": [
                                        {"index": partition, "records": records}]}]},
                         retry_codes=retry_codes,
                         code=lambda r: r.responses[0].partition_responses[0].error_code)
    code = response.responses[0].partition_responses[0].error_code
    if code:
        raise AssertionError(f"{side.name}: preparing produce to {topic} answered {code}")


def _commit_offsets(side: Side) -> None:
    topics: dict[str, list] = {}
    for (topic, partition), offset in COMMITTED.items():
        topics.setdefault(topic, []).append({"partition_index": partition,
                                             "committed_offset": offset,
                                             "committed_metadata": "m"})
    side.call(10, 0, {"key": GROUP}, retry_codes=COORDINATOR_WAIT,
              code=lambda r: r.error_code)
    side.call(8, 2, {"group_id": GROUP, "generation_id_or_member_epoch": -1, "member_id": "",
                     "retention_time_ms": -1, "topics": [
                         {"name": t, "partitions": ps} for t, ps in topics.items()]},
              retry_codes=COORDINATOR_WAIT,
              code=lambda r: r.topics[0].partitions[0].error_code)


def init_producer(side: Side, transactional_id: str | None, timeout_ms: int = 600000):
    """(producer id, epoch) from InitProducerId, waiting out CONCURRENT_TRANSACTIONS."""
    if transactional_id is not None:
        side.call(10, 1, {"key": transactional_id, "key_type": 1},
                  retry_codes=COORDINATOR_WAIT, code=lambda r: r.error_code)
    r = side.call(22, 1, {"transactional_id": transactional_id,
                          "transaction_timeout_ms": timeout_ms},
                  retry_codes=(CONCURRENT_TRANSACTIONS,) + COORDINATOR_WAIT,
                  code=lambda r: r.error_code)
    if r.error_code:
        raise AssertionError(f"{side.name}: InitProducerId answered {r.error_code}")
    return r.producer_id, r.producer_epoch


def add_partitions(side: Side, transactional_id: str, pid: int, epoch: int,
                   topic: str, partitions: list[int]) -> None:
    side.call(24, 1, {"v3_and_below_transactional_id": transactional_id,
                      "v3_and_below_producer_id": pid, "v3_and_below_producer_epoch": epoch,
                      "v3_and_below_topics": [{"name": topic, "partitions": partitions}]},
              retry_codes=(CONCURRENT_TRANSACTIONS,),
              code=lambda r: r.results_by_topic_v3_and_below[0].results_by_partition[0]
              .partition_error_code)


def end_txn(side: Side, transactional_id: str, pid: int, epoch: int, commit: bool) -> None:
    side.call(26, 1, {"transactional_id": transactional_id, "producer_id": pid,
                      "producer_epoch": epoch, "committed": commit})


def _transactions(side: Side) -> None:
    pid, epoch = init_producer(side, TXN_ID)   # the timeout outlasts the suite: no expiry
    for sequence, commit in ((0, True), (2, False)):
        add_partitions(side, TXN_ID, pid, epoch, TXN, [0])
        _produce(side, TXN, 0, batch(values(2, "t"), transactional=True, producer_id=pid,
                                     producer_epoch=epoch, base_sequence=sequence), TXN_ID)
        end_txn(side, TXN_ID, pid, epoch, commit)
    _wait_txn_state(side, TXN_ID, "CompleteAbort")
    pid, epoch = init_producer(side, OPEN_TXN_ID)
    add_partitions(side, OPEN_TXN_ID, pid, epoch, TXN, [0])
    _produce(side, TXN, 0, batch(values(1, "open"), transactional=True, producer_id=pid,
                                 producer_epoch=epoch, base_sequence=0), OPEN_TXN_ID)


def _wait_txn_state(side: Side, transactional_id: str, state: str) -> None:
    side.call(65, 0, {"transactional_ids": [transactional_id]}, retry_codes=(1,),
              code=lambda r: 0 if r.transaction_states[0].transaction_state == state else 1)
