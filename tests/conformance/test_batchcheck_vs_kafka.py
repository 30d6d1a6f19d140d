"""kafkapy.native.validate_batch answers what Kafka 3.9 answers, poison for poison.

Each batch of ``tests/support/batchcheck_craft.POISON`` (valid CRC, bad contents) is produced
to the real Kafka 3.9 broker of the differential suite, on a topic with the matching
rules (plain, compacted, message.timestamp.before.max.ms=1h, LogAppendTime); the
validator, given the same topic rules, must refuse it with the same error code, the same
partition error message (Kafka sends one only for record-level refusals) and the same
record_errors indexes.  Kafka refuses all of them, so nothing is stored and the suite's
shared state is untouched; partition 14 of each topic is used by no other case.
"""
from __future__ import annotations

import time

import pytest

from kafkapy import native
from tests.conformance.state import PRODUCE, PRODUCE_COMPACT, STRICT, TIMESTAMPS
from tests.support.batchcheck_craft import POISON

PARTITION = 14
HOUR = 3_600_000


def _topic(name: str, compacted: bool) -> tuple[str, dict]:
    """The conformance topic with the rules the poison needs, and those rules for us."""
    if compacted:
        return PRODUCE_COMPACT, {"compacted": True}
    if name.startswith("timestamp"):
        return TIMESTAMPS, {"before_max_ms": HOUR}
    if name.startswith("log-append"):
        return STRICT, {"timestamp_type": native.LOG_APPEND_TIME}
    return PRODUCE, {}


def _kafka_answer(side, topic: str, batch: bytes):
    answer = side.conn.exchange(0, 9, {
        "transactional_id": None, "acks": -1, "timeout_ms": 10000,
        "topic_data": [{"name": topic, "partition_data": [
            {"index": PARTITION, "records": batch}]}]})
    assert answer.response is not None, answer.failure
    return answer.response.responses[0].partition_responses[0]


@pytest.mark.parametrize("name", [n for n in sorted(POISON) if n != "timestamp-in-future"])
def test_validator_matches_kafka(conformance_brokers, name):
    # (timestamp-in-future needs message.timestamp.after.max.ms, which no topic here sets.)
    kafka = conformance_brokers[0]
    batch, compacted, _ = POISON[name]
    topic, rules = _topic(name, compacted)
    verdict = native.validate_batch(batch, topic_partition=f"{topic}-{PARTITION}",
                                    now_ms=int(time.time() * 1000), **rules)
    got = _kafka_answer(kafka, topic, batch)
    assert not verdict.ok
    assert got.error_code == verdict.error_code, name
    assert got.error_message == verdict.response_message
    assert [e.batch_index for e in got.record_errors] == [i for i, _ in verdict.record_errors]
    if verdict.error_code != 32:  # timestamp messages quote the broker's clock
        assert [e.batch_index_error_message for e in got.record_errors] == \
            [m for _, m in verdict.record_errors]
