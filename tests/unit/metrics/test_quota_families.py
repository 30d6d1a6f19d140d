"""The client quota families of the scrape: the byte-rate quotas' and the controller
mutation quota's sensors, one family per name (the throttle time of both in one), labelled
as the JMX exporter labels Kafka's ``kafka.server<type=..., user=..., client-id=...>``."""
from __future__ import annotations

from kafkapy.clock import MockClock
from kafkapy.metrics.collector import _quota_families
from kafkapy.quota.client import ClientQuotas
from kafkapy.quota.controller_mutation import ControllerMutationQuotaManager


def _samples(families) -> dict:
    return {(s.name, s.labels["resource"], s.labels.get("user", ""), s.labels.get("clientId", "")):
            s.value
            for family in families for s in family.samples}


def test_controller_mutation_sensors_join_the_quota_families():
    clock = MockClock()
    mutations = ControllerMutationQuotaManager(1, 1, clock)
    quotas = ClientQuotas(None, clock, managers=(mutations,))
    quotas.produce.set_quota((None, "p"), 1000.0)
    quotas.produce.record("", "p", 500)
    mutations.set_quota((None, "m"), 4.0)
    quota = mutations.quota_for("", "m", strict=False)
    quota.record(6)                             # a bucket of 4, 2 below zero: 500 ms
    assert quota.throttle_time_ms() == 500
    quota.throttled(500)                        # the answer carries it
    families = _quota_families(quotas, mutations)
    names = [f.name for f in families]
    assert len(names) == len(set(names))
    got = _samples(families)
    assert got[("kafka_server_quota_throttle_time", "ControllerMutation", "", "m")] == 500
    assert got[("kafka_server_quota_tokens", "ControllerMutation", "", "m")] == -2
    assert got[("kafka_server_quota_mutation_rate", "ControllerMutation", "", "m")] == 6 / 30
    assert ("kafka_server_quota_byte_rate", "Produce", "", "p") in got
    assert ("kafka_server_quota_throttle_time", "Produce", "", "p") in got


def test_without_the_mutation_quota_only_the_byte_rate_families():
    quotas = ClientQuotas(None, MockClock())
    quotas.produce.set_quota((None, "p"), 1000.0)
    quotas.produce.record("", "p", 500)
    families = _quota_families(quotas)
    assert [f.name for f in families] == ["kafka_server_quota_byte_rate",
                                          "kafka_server_quota_throttle_time"]
