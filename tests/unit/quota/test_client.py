"""Client quotas: Kafka's precedence of the eight levels, shared sensors, the
throttle time, the fetch window cap, and quota entities written by AlterClientQuotas
reaching the managers through ``entity_changed``."""
from __future__ import annotations

import pytest

from kafkapy.clock import MockClock
from kafkapy.config import client_quotas as entities
from kafkapy.metadata.embedded import EmbeddedStore
from kafkapy.quota.client import DEFAULT, ClientQuotaManager, ClientQuotas

LEVELS = [  # (entity, bound): the most specific first, as Kafka's precedence
    (("U", "C"), 1.0), (("U", DEFAULT), 2.0), (("U", None), 3.0), ((DEFAULT, "C"), 4.0),
    ((DEFAULT, DEFAULT), 5.0), ((DEFAULT, None), 6.0), ((None, "C"), 7.0),
    ((None, DEFAULT), 8.0)]


@pytest.mark.parametrize("first", range(len(LEVELS)), ids=lambda i: f"level{i + 1}")
def test_the_most_specific_level_wins(first):
    manager = ClientQuotaManager("producer_byte_rate", 11, 1, MockClock())
    for entity, bound in LEVELS[first:]:
        manager.set_quota(entity, bound)
    assert manager.quota("U", "C") == LEVELS[first][1]


def test_no_quota_is_disabled_and_unbounded():
    manager = ClientQuotaManager("producer_byte_rate", 11, 1, MockClock())
    assert not manager.enabled
    assert manager.record("U", "C", 10 ** 9) == 0
    assert manager.max_value_in_window("U", "C") == float("inf")
    manager.set_quota(("V", None), 10.0)
    assert manager.enabled and manager.quota("U", "C") is None
    manager.set_quota(("V", None), None)
    assert not manager.enabled


def test_a_user_quota_is_shared_by_its_clients_and_a_client_quota_is_not():
    manager = ClientQuotaManager("producer_byte_rate", 11, 1, MockClock())
    manager.set_quota((DEFAULT, None), 100.0)
    assert manager.sensor("U", "a") is manager.sensor("U", "b")
    assert manager.sensor("U", "a") is not manager.sensor("W", "a")
    other = ClientQuotaManager("producer_byte_rate", 11, 1, MockClock())
    other.set_quota((None, DEFAULT), 100.0)
    assert other.sensor("U", "a") is not other.sensor("U", "b")
    assert other.sensor("U", "a") is other.sensor("W", "a")


def test_throttle_time_is_kafkas():
    clock = MockClock()
    manager = ClientQuotaManager("producer_byte_rate", 11, 1, clock)
    manager.set_quota((None, "C"), 1000.0)
    # 10 windows assumed at the start: 10000 bytes is exactly the bound
    assert manager.record("U", "C", 10_000) == 0
    # 20000 over 10 s = 2000 B/s: (2000 - 1000) / 1000 * 10000 ms
    assert manager.record("U", "C", 10_000) == 10_000
    clock.advance(5_000)
    # still 20000 over the 10 s minimum: the same excess
    assert manager.record("U", "C", 0) == 10_000
    clock.advance(10_000)      # past 11 windows: the old sample is reset
    assert manager.record("U", "C", 100) == 0


def test_a_changed_quota_applies_to_a_running_sensor():
    manager = ClientQuotaManager("consumer_byte_rate", 11, 1, MockClock())
    manager.set_quota((None, "C"), 1000.0)
    assert manager.record("U", "C", 15_000) > 0
    manager.set_quota((None, "C"), 2000.0)
    assert manager.record("U", "C", 0) == 0
    assert manager.max_value_in_window("U", "C") == 2000.0 * 10


def test_entities_written_reach_the_managers(tmp_path):
    store = EmbeddedStore(tmp_path / "meta", fsync=False)
    quotas = ClientQuotas(store, MockClock(), samples=5, window_s=2)
    results = entities.alter(store, [
        ({"user": "al ice", "client-id": "app"}, [("producer_byte_rate", 500.0)]),
        ({"client-id": None}, [("consumer_byte_rate", 700.0)])], False)
    assert [r[1] for r in results] == [0, 0]
    quotas.load()
    assert quotas.produce.quota("al%20ice", "app") == 500.0
    assert quotas.fetch.quota("bob", "x") == 700.0
    assert quotas.fetch.max_value_in_window("bob", "x") == 700.0 * 4 * 2
    entities.alter(store, [({"client-id": None}, [("consumer_byte_rate", None)])], False)
    quotas.entity_changed("clients", DEFAULT)
    assert not quotas.fetch.enabled
    entities.alter(store, [({"user": "al ice", "client-id": "app"},
                            [("producer_byte_rate", None)])], False)
    quotas.entity_changed("users", "al%20ice/clients/app")
    assert not quotas.produce.enabled


def test_a_sensor_idle_for_an_hour_is_dropped():
    clock = MockClock()
    manager = ClientQuotaManager("producer_byte_rate", 11, 1, clock)
    manager.set_quota((None, DEFAULT), 1000.0)
    manager.record("U", "old", 10)
    clock.advance(3_599_000)
    manager.record("U", "recent", 10)        # a sweep here: "old" is not an hour idle yet
    clock.advance(60_000)                     # the next sweep, a minute later, drops it
    manager.record("U", "new", 10)
    assert set(manager.sensors) == {("", "recent"), ("", "new")}


def test_a_quota_of_zero_throttles_one_window():
    """A rate of 0 (AlterClientQuotas accepts it; Kafka divides by it): every record over
    it is throttled for the rate's window, never a ZeroDivisionError."""
    manager = ClientQuotaManager("request_percentage", 11, 1, MockClock(),
                                 max_throttle_ms=1000)
    manager.set_quota((None, "C"), 0.0)
    assert manager.record("", "C", 5.0) == 1000
