"""Topic-level configuration keys (Kafka 3.9's LogConfig / TopicConfig) and
their broker synonyms (ServerTopicConfigSynonyms), in Kafka's priority order.

Invariant: each topic key's own default equals Kafka's LogConfig default; the
effective default of a topic on a broker comes from the first synonym the
broker has a value for (see BrokerConfig.topic_defaults). Keys without
synonyms (remote storage flags, throttled replica lists) default to their own
default. ``message.format.version`` is accepted and ignored, as in Kafka 3.x.
"""
from __future__ import annotations

from kafkapy.config.broker_keys import COMPRESSION_TYPES, LONG_MAX
from kafkapy.config.definitions import TOPIC_CONFIGS as D
from kafkapy.config.definitions import Importance, Synonym
from kafkapy.config.types import ConfigType as T
from kafkapy.config.validators import (at_least, between, in_set, list_in, one_of_or, throttled_replicas,
                                       version_string)

M, L = Importance.MEDIUM, Importance.LOW
HOUR_MS = 3600 * 1000
MINUTE_MS = 60 * 1000
WEEK_MS = 7 * 24 * HOUR_MS


def _syn(*names: str | tuple[str, int]) -> dict[str, object]:
    out = tuple(Synonym(n) if isinstance(n, str) else Synonym(*n) for n in names)
    return {"synonyms": out}


def _segments() -> None:
    D.define("segment.bytes", T.INT, 1073741824, at_least(14), M, "Segment file size limit.",
             **_syn("log.segment.bytes"))
    D.define("segment.ms", T.LONG, WEEK_MS, at_least(1), M, "Segment age at which it is rolled.",
             **_syn("log.roll.ms", ("log.roll.hours", HOUR_MS)))
    D.define("segment.jitter.ms", T.LONG, 0, at_least(0), M, "Random jitter subtracted from segment.ms.",
             **_syn("log.roll.jitter.ms", ("log.roll.jitter.hours", HOUR_MS)))
    D.define("segment.index.bytes", T.INT, 10485760, at_least(4), M, "Offset index size limit.",
             **_syn("log.index.size.max.bytes"))
    D.define("index.interval.bytes", T.INT, 4096, at_least(0), M, "Bytes between offset index entries.",
             **_syn("log.index.interval.bytes"))
    D.define("preallocate", T.BOOLEAN, False, None, M, "Preallocate segment files.", **_syn("log.preallocate"))
    D.define("file.delete.delay.ms", T.LONG, 60000, at_least(0), M, "Delay before deleting a .deleted file.",
             **_syn("log.segment.delete.delay.ms"))


def _flush_and_retention() -> None:
    D.define("flush.messages", T.LONG, LONG_MAX, at_least(1), M, "Messages between forced fsyncs.",
             **_syn("log.flush.interval.messages"))
    D.define("flush.ms", T.LONG, LONG_MAX, at_least(0), M, "Time between forced fsyncs.",
             **_syn("log.flush.interval.ms", "log.flush.scheduler.interval.ms"))
    D.define("retention.bytes", T.LONG, -1, None, M, "Partition size kept; -1 means no limit.",
             **_syn("log.retention.bytes"))
    D.define("retention.ms", T.LONG, WEEK_MS, at_least(-1), M, "Time data is kept; -1 means forever.",
             **_syn("log.retention.ms", ("log.retention.minutes", MINUTE_MS), ("log.retention.hours", HOUR_MS)))
    D.define("local.retention.ms", T.LONG, -2, at_least(-2), M, "Local retention with tiered storage.",
             **_syn("log.local.retention.ms"))
    D.define("local.retention.bytes", T.LONG, -2, at_least(-2), M, "Local size retention with tiered storage.",
             **_syn("log.local.retention.bytes"))
    D.define("remote.storage.enable", T.BOOLEAN, False, None, M, "Tiered storage for this topic (unsupported).")
    D.define("remote.log.copy.disable", T.BOOLEAN, False, None, M, "Stop copying to tiered storage.")
    D.define("remote.log.delete.on.disable", T.BOOLEAN, False, None, M, "Delete tiered data when disabling.")


def _cleaning() -> None:
    D.define("cleanup.policy", T.LIST, ["delete"], list_in("compact", "delete"), M, "delete, compact or both.",
             **_syn("log.cleanup.policy"))
    D.define("delete.retention.ms", T.LONG, 86400000, at_least(0), M, "How long tombstones are kept.",
             **_syn("log.cleaner.delete.retention.ms"))
    D.define("min.compaction.lag.ms", T.LONG, 0, at_least(0), M, "Minimum age before compaction.",
             **_syn("log.cleaner.min.compaction.lag.ms"))
    D.define("max.compaction.lag.ms", T.LONG, LONG_MAX, at_least(1), M, "Maximum age before a record is compactable.",
             **_syn("log.cleaner.max.compaction.lag.ms"))
    D.define("min.cleanable.dirty.ratio", T.DOUBLE, 0.5, between(0, 1), M, "Dirty ratio that triggers cleaning.",
             **_syn("log.cleaner.min.cleanable.ratio"))


def _messages() -> None:
    D.define("max.message.bytes", T.INT, 1048588, at_least(0), M, "Largest record batch accepted.",
             **_syn("message.max.bytes"))
    D.define("compression.type", T.STRING, "producer", in_set(*COMPRESSION_TYPES), M, "Codec of stored batches.",
             **_syn("compression.type"))
    D.define("compression.gzip.level", T.INT, -1, one_of_or(-1, 1, 9), M, "gzip level.", **_syn("compression.gzip.level"))
    D.define("compression.lz4.level", T.INT, 9, between(1, 17), M, "lz4 level.", **_syn("compression.lz4.level"))
    D.define("compression.zstd.level", T.INT, 3, between(-131072, 22), M, "zstd level.", **_syn("compression.zstd.level"))
    D.define("message.format.version", T.STRING, "3.0-IV1", version_string, M, "Deprecated; ignored.",
             **_syn("log.message.format.version"))
    D.define("message.timestamp.type", T.STRING, "CreateTime", in_set("CreateTime", "LogAppendTime"), M,
             "CreateTime or LogAppendTime.", **_syn("log.message.timestamp.type"))
    D.define("message.timestamp.difference.max.ms", T.LONG, LONG_MAX, at_least(0), M,
             "Deprecated timestamp skew limit.", **_syn("log.message.timestamp.difference.max.ms"))
    D.define("message.timestamp.before.max.ms", T.LONG, LONG_MAX, at_least(0), M,
             "How far in the past a timestamp may be.", **_syn("log.message.timestamp.before.max.ms"))
    D.define("message.timestamp.after.max.ms", T.LONG, LONG_MAX, at_least(0), M,
             "How far in the future a timestamp may be.", **_syn("log.message.timestamp.after.max.ms"))
    D.define("message.downconversion.enable", T.BOOLEAN, True, None, L, "Down-convert for old fetchers.",
             **_syn("log.message.downconversion.enable"))


def _replication() -> None:
    D.define("min.insync.replicas", T.INT, 1, at_least(1), M, "Fewest in-sync replicas for acks=all.",
             **_syn("min.insync.replicas"))
    D.define("unclean.leader.election.enable", T.BOOLEAN, False, None, M, "Allow out-of-ISR leaders.",
             **_syn("unclean.leader.election.enable"))
    D.define("leader.replication.throttled.replicas", T.LIST, [], throttled_replicas, M,
             "Replicas throttled on the leader side.")
    D.define("follower.replication.throttled.replicas", T.LIST, [], throttled_replicas, M,
             "Replicas throttled on the follower side.")


def _dead_letters() -> None:
    D.define("errors.deadletterqueue.group.enable", T.BOOLEAN, False, None, M,
             "Whether share groups may use this topic as their dead-letter topic (KIP-1191).")


for _section in (_segments, _flush_and_retention, _cleaning, _messages, _replication,
                 _dead_letters):
    _section()
