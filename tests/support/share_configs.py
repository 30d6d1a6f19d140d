"""``StaticGroupConfigs``: share group settings a test sets by hand, in place of the broker's
``GroupConfigs`` (which reads them from the metadata store), for tests of the
share-partition leader (``kafkapy.share.manager``)."""
from __future__ import annotations

from dataclasses import replace

from kafkapy.config.group_configs import ShareGroupConfig

LOCK_MS = 30_000


class StaticGroupConfigs:
    """Every group has the same ``settings``; ``set(**changes)`` changes them."""

    def __init__(self, **changes) -> None:
        self.settings = ShareGroupConfig(
            session_timeout_ms=45_000, heartbeat_interval_ms=5_000,
            record_lock_duration_ms=LOCK_MS, delivery_count_limit=5,
            partition_max_record_locks=2000, auto_offset_reset="earliest",
            isolation_level="read_uncommitted", dead_letter_topic=None, backoff_ms=0,
            backoff_max_ms=0)
        self.set(**changes)

    def set(self, **changes) -> None:
        self.settings = replace(self.settings, **changes)

    def share(self, group_id: str) -> ShareGroupConfig:
        return self.settings
