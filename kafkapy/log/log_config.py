"""Typed view of the topic-level keys the log uses.

Input is a plain dict of topic-level config names to typed values (as
produced by ``kafkapy.config``); missing keys take Kafka's defaults.  The
object is immutable; ``Log.update_config`` swaps in a new one.
"""
from __future__ import annotations

from typing import Any

LONG_MAX = 9223372036854775807

DEFAULTS: dict[str, Any] = {
    "segment.bytes": 1073741824,
    "segment.ms": 604800000,
    "segment.jitter.ms": 0,
    "segment.index.bytes": 10485760,
    "index.interval.bytes": 4096,
    "max.message.bytes": 1048588,
    "message.timestamp.type": "CreateTime",
    "flush.messages": LONG_MAX,
    "flush.ms": LONG_MAX,
    "retention.ms": 604800000,
    "retention.bytes": -1,
    "cleanup.policy": ["delete"],
    "file.delete.delay.ms": 60000,
    "min.insync.replicas": 1,
    "unclean.leader.election.enable": False,
}


class LogConfig:
    __slots__ = ("values", "segment_bytes", "segment_ms", "segment_jitter_ms",
                 "max_index_size", "index_interval_bytes", "max_message_bytes",
                 "log_append_time", "flush_messages", "flush_ms", "retention_ms",
                 "retention_bytes", "cleanup_policy", "file_delete_delay_ms")

    def __init__(self, values: dict[str, Any] | None = None,
                 defaults: dict[str, Any] | None = None) -> None:
        merged = dict(DEFAULTS)
        if defaults:
            merged.update(defaults)
        if values:
            merged.update(values)
        self.values = merged
        self.segment_bytes = int(merged["segment.bytes"])
        self.segment_ms = int(merged["segment.ms"])
        self.segment_jitter_ms = int(merged["segment.jitter.ms"])
        self.max_index_size = int(merged["segment.index.bytes"])
        self.index_interval_bytes = int(merged["index.interval.bytes"])
        self.max_message_bytes = int(merged["max.message.bytes"])
        self.log_append_time = str(merged["message.timestamp.type"]) == "LogAppendTime"
        self.flush_messages = int(merged["flush.messages"])
        self.flush_ms = int(merged["flush.ms"])
        self.retention_ms = int(merged["retention.ms"])
        self.retention_bytes = int(merged["retention.bytes"])
        policy = merged["cleanup.policy"]
        if isinstance(policy, str):
            policy = [p.strip() for p in policy.split(",") if p.strip()]
        self.cleanup_policy = list(policy)
        self.file_delete_delay_ms = int(merged["file.delete.delay.ms"])

    def updated(self, changes: dict[str, Any]) -> "LogConfig":
        v = dict(self.values)
        v.update(changes)
        return LogConfig(v)
