"""``producer.id.expiration.ms`` (Kafka's ProducerStateManagerConfig).

- the broker config: Kafka's default (1 day), ``at least 1`` refusal, dynamic;
- one ``ProducerStateManagerConfig`` per log manager, shared by every log's producer
  state (new, loaded, and future logs) and read at use time: a changed effective value
  expires producers at the next check of ``producer.id.expiration.check.interval.ms``
  without touching the logs;
- a producer idle past the configured value is not loaded from a snapshot (Kafka's
  loadFromSnapshot skips expired producers), one within it is.
Real logs on disk, a mock clock.
"""
from __future__ import annotations

import pytest

from kafkapy.clock import MockClock
from kafkapy.config.broker import BrokerConfig
from kafkapy.config.errors import ConfigError
from kafkapy.log.manager import LogManager
from kafkapy.log.producer_state import (DEFAULT_PRODUCER_ID_EXPIRATION_MS,
                                        ProducerStateManager, ProducerStateManagerConfig)
from tests.support.producer_state import PID, TS, batch

BASE = {"broker.id": "1", "log.dirs": "/tmp/unused", "zookeeper.connect": "localhost:2181"}


def test_broker_config_key():
    config = BrokerConfig.from_properties(BASE)
    assert config["producer.id.expiration.ms"] == 86_400_000 == DEFAULT_PRODUCER_ID_EXPIRATION_MS
    assert config["producer.id.expiration.check.interval.ms"] == 600_000
    assert BrokerConfig.from_properties(dict(BASE, **{"producer.id.expiration.ms": "5000"}))[
        "producer.id.expiration.ms"] == 5000
    with pytest.raises(ConfigError, match="Invalid value 0 for configuration "
                                          "producer.id.expiration.ms: Value must be at least 1"):
        BrokerConfig.from_properties(dict(BASE, **{"producer.id.expiration.ms": "0"}))


def test_manager_reads_the_config_at_use_time():
    value = {"ms": 1000}
    psm = ProducerStateManager(config=ProducerStateManagerConfig(lambda: value["ms"]))
    _, h = batch(0)
    h.base_offset = 0
    psm.update(h)
    last = TS + 2                                   # the batch's max timestamp
    assert psm.remove_expired(last + 999) == []
    value["ms"] = 5000
    assert psm.remove_expired(last + 1000) == []
    assert psm.remove_expired(last + 5000) == [PID]
    assert ProducerStateManager().producer_id_expiration_ms == DEFAULT_PRODUCER_ID_EXPIRATION_MS
    assert ProducerStateManager(producer_id_expiration_ms=7).producer_id_expiration_ms == 7


def _manager(tmp_path, clock, value: dict) -> LogManager:
    m = LogManager([str(tmp_path / "d")], clock, {},
                   producer_expiration_check_interval_ms=100,
                   producer_state_config=ProducerStateManagerConfig(lambda: value["ms"]))
    m.load("cluster", 1)
    return m


def test_log_manager_shares_one_config_and_expires_at_the_check(tmp_path):
    clock = MockClock(TS + 10)
    value = {"ms": DEFAULT_PRODUCER_ID_EXPIRATION_MS}
    m = _manager(tmp_path, clock, value)
    try:
        logs = [m.get_or_create_log("t", p) for p in range(2)]
        assert {id(log.producer_state.config) for log in logs} == {id(m.producer_state_config)}
        for log in logs:
            log.append_as_leader(*batch(0), 0)
        clock.advance(100)
        m.periodic()
        assert all(log.producer_state.last_entry(PID) for log in logs)
        value["ms"] = 50                                # a dynamic change: nothing else
        clock.advance(100)
        m.periodic()
        assert not any(log.producer_state.last_entry(PID) for log in logs)
    finally:
        m.shutdown()


@pytest.mark.parametrize("expiration_ms, kept", [(DEFAULT_PRODUCER_ID_EXPIRATION_MS, True),
                                                 (1000, False)])
def test_expired_producers_are_not_loaded(tmp_path, expiration_ms, kept):
    clock = MockClock(TS + 10)
    value = {"ms": DEFAULT_PRODUCER_ID_EXPIRATION_MS}
    m = _manager(tmp_path, clock, value)
    m.get_or_create_log("t", 0).append_as_leader(*batch(0), 0)
    m.shutdown()                                        # snapshot at the log end
    clock.advance(60_000)
    value["ms"] = expiration_ms
    m = _manager(tmp_path, clock, value)
    try:
        log = m.get_log("t", 0)
        assert log.producer_state.config is m.producer_state_config
        assert (log.producer_state.last_entry(PID) is not None) is kept
    finally:
        m.shutdown()
