"""The controller mutation quota on an injected clock: Kafka's TokenBucket (full at the start,
refilled at the bound, capped at the burst), strict against permissive quotas, the throttle
time (Java's rounding, less the time elapsed until the answer), the eight user/client-id
levels taken from ClientQuotaManager, quota entities reaching it through ClientQuotas, and
the admin manager counting created, added and deleted partitions (never validate_only)."""
from __future__ import annotations

import pytest

from kafkapy.clock import MockClock
from kafkapy.config import client_quotas as entities
from kafkapy.metadata.embedded import EmbeddedStore
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.quota.client import DEFAULT, ClientQuotas
from kafkapy.quota.controller_mutation import (UNBOUNDED, ControllerMutationQuotaManager,
                                               TokenBucket)
from tests.support.admin_broker import Broker, um


def _manager(bound: float | None = 10.0, entity=(None, "C"), samples: int = 2,
             window_s: int = 1) -> tuple[ControllerMutationQuotaManager, MockClock]:
    clock = MockClock()
    manager = ControllerMutationQuotaManager(samples, window_s, clock)
    if bound is not None:
        manager.set_quota(entity, bound)
    return manager, clock


def _refused(quota, permits: float) -> bool:
    try:
        quota.record(permits)
    except KafkaError as err:
        assert err.code == ErrorCode.THROTTLING_QUOTA_EXCEEDED and err.message is None
        return True
    return False


def test_token_bucket_is_kafkas():
    bucket = TokenBucket()
    # 0 tokens refilled since time 0: full at any wall-clock time
    assert bucket.measure(5.0, 50.0, 1_700_000_000_000) == 50.0
    bucket.record(60.0, 5.0, 50.0, 1_700_000_000_000)
    assert bucket.tokens == -10.0
    assert bucket.measure(5.0, 50.0, 1_700_000_001_000) == -5.0     # 5 a second
    assert bucket.measure(5.0, 50.0, 1_700_000_100_000) == 50.0     # capped at the burst
    bucket.record(-100.0, 5.0, 50.0, 1_700_000_100_000)             # a record is capped too
    assert bucket.tokens == 50.0


def test_strict_refuses_only_once_exhausted():
    manager, clock = _manager(10.0)            # burst: 2 windows of 1 s at 10/s = 20
    quota = manager.quota_for("U", "C", strict=True)
    assert not _refused(quota, 15)             # 20 -> 5
    assert not _refused(quota, 15)             # not yet exhausted: taken, 5 -> -10
    assert _refused(quota, 1)                  # exhausted: refused, nothing taken
    assert manager.tokens(manager.bucket_sensor("", "C"), clock.time_ms()) == -10
    assert quota.throttle_time_ms() == 1000    # 10 below zero at 10 a second
    clock.advance(400)
    assert quota.throttle_time_ms() == 600     # the time until the answer is deducted
    clock.advance(600)
    assert quota.throttle_time_ms() == 0
    assert not _refused(manager.quota_for("U", "C", strict=True), 1)   # back at zero


def test_permissive_accepts_and_throttles():
    manager, clock = _manager(10.0)
    quota = manager.quota_for("U", "C", strict=False)
    quota.record(15)
    assert quota.throttle_time_ms() == 0
    quota.record(15)
    quota.record(15)                           # 20 - 45: accepted all the same
    assert quota.throttle_time_ms() == 2500
    assert manager.tokens(manager.bucket_sensor("", "C"), clock.time_ms()) == -25


def test_strict_throttle_time_uses_the_last_refusal():
    manager, clock = _manager(10.0)
    quota = manager.quota_for("U", "C", strict=True)
    quota.record(30)                           # 20 -> -10
    assert _refused(quota, 1)
    clock.advance(500)                         # refilled to -5
    assert _refused(quota, 1)
    assert quota.throttle_time_ms() == 500


def test_throttle_time_rounds_as_java():
    manager, clock = _manager(8.0, samples=1)  # burst 8
    quota = manager.quota_for("U", "C", strict=False)
    quota.record(8.5)                          # 0.5 below zero: 62.5 ms, Math.round -> 63
    assert quota.throttle_time_ms() == 63


def test_a_new_request_starts_with_no_throttle_time():
    manager, _ = _manager(10.0)
    manager.quota_for("U", "C", strict=False).record(100)
    assert manager.quota_for("U", "C", strict=True).throttle_time_ms() == 0


def test_no_quota_anywhere_is_unbounded():
    manager, _ = _manager(None)
    assert manager.quota_for("U", "C", strict=True) is UNBOUNDED
    UNBOUNDED.record(10 ** 9)
    assert UNBOUNDED.throttle_time_ms() == 0 and not manager.sensors


def test_a_client_without_quota_is_never_refused():
    manager, _ = _manager(1.0, entity=(None, "other"))
    quota = manager.quota_for("U", "C", strict=True)
    for _ in range(3):
        assert not _refused(quota, 10 ** 12)
    assert quota.throttle_time_ms() == 0


LEVELS = [  # (entity, bound): the most specific first, as Kafka's precedence
    (("U", "C"), 1.0), (("U", DEFAULT), 2.0), (("U", None), 3.0), ((DEFAULT, "C"), 4.0),
    ((DEFAULT, DEFAULT), 5.0), ((DEFAULT, None), 6.0), ((None, "C"), 7.0),
    ((None, DEFAULT), 8.0)]


@pytest.mark.parametrize("first", range(len(LEVELS)), ids=lambda i: f"level{i + 1}")
def test_the_most_specific_level_bounds_the_bucket(first):
    manager, _ = _manager(None, samples=1)
    for entity, bound in LEVELS[first:]:
        manager.set_quota(entity, bound)
    expected = LEVELS[first][1]
    quota = manager.quota_for("U", "C", strict=False)
    quota.record(expected + 1)                 # a bucket of `expected`, one below zero
    assert quota.throttle_time_ms() == round(1000 / expected)


def test_a_user_quota_is_one_bucket_for_all_its_clients():
    manager, _ = _manager(10.0, entity=("U", None))
    assert not _refused(manager.quota_for("U", "a", strict=True), 25)
    assert _refused(manager.quota_for("U", "b", strict=True), 1)
    assert not _refused(manager.quota_for("W", "a", strict=True), 1)   # another user


def test_a_changed_quota_refills_at_the_new_rate():
    manager, clock = _manager(10.0)
    quota = manager.quota_for("U", "C", strict=False)
    quota.record(30)                           # 20 -> -10
    manager.set_quota((None, "C"), 100.0)
    clock.advance(100)                         # -10 + 100 * 0.1 = 0
    assert manager.tokens(manager.bucket_sensor("", "C"), clock.time_ms()) == 0
    assert not _refused(manager.quota_for("U", "C", strict=True), 1)


def test_sensor_values_for_the_metrics():
    manager, _ = _manager(10.0)
    quota = manager.quota_for("U", "C", strict=False)
    quota.record(30)
    assert quota.throttle_time_ms() == 1000
    quota.throttled(1000)                      # the answer carries it
    [(user, client, rate, tokens, throttle)] = list(manager.sensor_values())
    assert (user, client, tokens, throttle) == ("", "C", -10.0, 1000.0)
    assert rate == pytest.approx(30 / 30.0)    # one 30 s window of mutation-rate


def test_entities_reach_it_through_client_quotas(tmp_path):
    store = EmbeddedStore(tmp_path / "meta", fsync=False)
    clock = MockClock()
    manager = ControllerMutationQuotaManager(11, 1, clock)
    quotas = ClientQuotas(store, clock, managers=(manager,))
    entities.alter(store, [({"client-id": "app"}, [("controller_mutation_rate", 5.0)])], False)
    quotas.load()
    assert manager.quota("U", "app") == 5.0 and not quotas.produce.enabled
    entities.alter(store, [({"client-id": "app"}, [("controller_mutation_rate", None)])], False)
    quotas.entity_changed("clients", "app")
    assert not manager.enabled


# -- what the admin manager counts -----------------------------------------------------------
@pytest.fixture
def broker(tmp_path):
    b = Broker(tmp_path)
    yield b
    b.store.close()


def test_admin_counts_partitions_created_added_and_deleted(broker):
    manager, clock = _manager(100.0, samples=1)
    quota = manager.quota_for("U", "C", strict=True)

    def tokens() -> float:
        return manager.tokens(manager.bucket_sensor("", "C"), clock.time_ms())
    broker.admin.create_topic("t", 4, 1, quota=quota)
    assert tokens() == 96
    broker.admin.create_topic("v", 50, 1, validate_only=True, quota=quota)
    broker.admin.create_partitions("t", 10, validate_only=True, quota=quota)
    assert tokens() == 96                      # validate_only is never counted
    broker.admin.create_partitions("t", 7, quota=quota)
    assert tokens() == 93
    # the partitions this broker's cache knows are counted
    broker.cache.apply_update_metadata(um("t", [(i, 0, [0]) for i in range(7)]))
    broker.admin.delete_topic("t", quota)
    assert tokens() == 86


def test_admin_writes_nothing_the_quota_refuses(broker):
    manager, _ = _manager(1.0, samples=1)
    quota = manager.quota_for("U", "C", strict=True)
    broker.admin.create_topic("a", 3, 1, quota=quota)      # 1 -> -2
    with pytest.raises(KafkaError):
        broker.admin.create_topic("b", 1, 1, quota=quota)
    assert broker.store.exists("/brokers/topics/a") and not broker.store.exists(
        "/brokers/topics/b")
    with pytest.raises(KafkaError):
        broker.admin.create_partitions("a", 5, quota=quota)
    assert quota.throttle_time_ms() == 2000


def test_a_quota_of_zero_throttles_one_span_of_windows():
    """A rate of 0 never refills (Kafka divides by it): no ZeroDivisionError; the request
    that empties the bucket is throttled for the quota's windows (2 of 1 s), and a strict
    quota, which lets the first mutation through, refuses the next."""
    manager, _ = _manager(0.0)
    permissive = manager.quota_for("U", "C", strict=False)
    permissive.record(1)
    assert permissive.throttle_time_ms() == 2000
    strict = manager.quota_for("U", "C", strict=True)
    assert _refused(strict, 1)
    assert strict.throttle_time_ms() == 2000
