"""The consumer group protocol's broker settings (Kafka 4.x's ``group.consumer.*`` keys).

``group.consumer.assignors`` names assignors by Kafka's short names (``uniform``,
``range``) or by Kafka's class names; the first is the default.  Whether the protocol is
served at all (``group.coordinator.rebalance.protocols``) is the handlers' check
(``handlers.consumer_group_heartbeat.consumer_protocol_enabled``).
"""
from __future__ import annotations

from dataclasses import dataclass

_CLASS_NAMES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.api.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
    "org.apache.kafka.coordinator.group.api.assignor.RangeAssignor": "range",
}


def assignor_name(configured: str) -> str:
    """Kafka's short name of an assignor named either way."""
    name = configured.strip()
    return _CLASS_NAMES.get(name, name)


@dataclass(frozen=True)
class ConsumerSettings:
    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 5000
    max_size: int = 2**31 - 1
    assignors: tuple[str, ...] = ("uniform", "range")
    migration_policy: str = "bidirectional"

    @classmethod
    def from_config(cls, config) -> "ConsumerSettings":
        return cls(
            session_timeout_ms=config["group.consumer.session.timeout.ms"],
            heartbeat_interval_ms=config["group.consumer.heartbeat.interval.ms"],
            max_size=config["group.consumer.max.size"],
            assignors=tuple(assignor_name(a) for a in config["group.consumer.assignors"]),
            migration_policy=str(config["group.consumer.migration.policy"]).lower())

    @property
    def default_assignor(self) -> str:
        return self.assignors[0]
