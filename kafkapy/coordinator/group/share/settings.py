"""The share group protocol's broker settings (Kafka 4.2's ``group.share.*`` keys the
group coordinator reads).

``group.share.assignors`` holds exactly one assignor, by Kafka's short name (``simple``)
or class name; ``group.share.initialize.retry.interval.ms`` (internal) is how long a
share partition may stay "initializing" before a heartbeat asks the share coordinator
again, at least ``offsets.commit.timeout.ms`` (Kafka's rule).  Each group's own session
timeout and heartbeat interval (``share.session.timeout.ms``,
``share.heartbeat.interval.ms``) are its group configs (``config.group_configs``).
Whether the protocol is served at all is the handlers' check
(``handlers.share_group_heartbeat.share_protocol_enabled``).
"""
from __future__ import annotations

from dataclasses import dataclass

from kafkapy.coordinator.group.share.assignor import CLASS_NAME, NAME


def assignor_name(configured: str) -> str:
    """Kafka's short name of an assignor named either way."""
    name = configured.strip()
    return NAME if name == CLASS_NAME else name


@dataclass(frozen=True)
class ShareSettings:
    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 5000
    max_size: int = 200
    assignor: str = NAME
    initialize_retry_interval_ms: int = 30000

    @classmethod
    def from_config(cls, config) -> "ShareSettings":
        return cls(
            session_timeout_ms=config["group.share.session.timeout.ms"],
            heartbeat_interval_ms=config["group.share.heartbeat.interval.ms"],
            max_size=config["group.share.max.size"],
            assignor=assignor_name(config["group.share.assignors"][0]),
            initialize_retry_interval_ms=max(config["group.share.initialize.retry.interval.ms"],
                                             config["offsets.commit.timeout.ms"]))
