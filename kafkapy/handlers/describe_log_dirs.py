"""DescribeLogDirs (key 35): this broker's log dirs and the partitions in each.

Versions 0-4 (Kafka 3.9).  ``topics`` null means
every partition; otherwise only the named partitions that live here (others
are left out, as Kafka does).  Per partition: size in bytes (sum of segment
sizes), offset lag (Kafka's getLogEndOffsetLag: max(HW - LEO, 0) for a current
replica; for a future replica, one being moved here by AlterReplicaLogDirs, the
current log end minus its own, -1 when the current replica is offline) and
is_future (a partition being moved shows in both dirs).  v3+ carries a
top-level error code; v4 each dir's total and usable bytes (statvfs).  A dir
that is offline after an I/O error, or cannot be stat'ed, answers
KAFKA_STORAGE_ERROR (an offline one with no partitions, as Kafka does).
"""
from __future__ import annotations

import os

from kafkapy.security import authz
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES

API_KEY = 35
MIN_VERSION = 0
MAX_VERSION = 4

_R = RESPONSES[API_KEY]
_Result = _R.DescribeLogDirsResult
_Topic = _Result.DescribeLogDirsTopic
_Partition = _Topic.DescribeLogDirsPartition


def handle(ctx, request):
    if not authz.cluster(ctx, authz.DESCRIBE):
        # Kafka: no directories, and from v3 the error.
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, results=[])
    manager = ctx.services.log_manager
    wanted = None
    if request.topics is not None:
        wanted = {(t.topic, p) for t in request.topics for p in t.partitions}
    by_dir: dict[str, dict[str, list]] = {d: {} for d in manager.log_dirs}
    for (topic, index), log in sorted(manager.logs.items()):
        if wanted is not None and (topic, index) not in wanted:
            continue
        d = manager.log_dir_of(topic, index)
        lag = max(log.high_watermark - log.log_end_offset, 0)
        by_dir.setdefault(d, {}).setdefault(topic, []).append(
            _Partition(partition_index=index, partition_size=log.size, offset_lag=lag,
                       is_future_key=False))
    mover = ctx.services.alter_log_dirs
    for (topic, index), log in sorted(manager.future_logs.items()):
        if wanted is not None and (topic, index) not in wanted:
            continue
        d = manager.future_log_dir_of(topic, index)
        lag = mover.offset_lag((topic, index))
        by_dir.setdefault(d, {}).setdefault(topic, []).append(
            _Partition(partition_index=index, partition_size=log.size, offset_lag=lag,
                       is_future_key=True))
    results = []
    for d, topics in by_dir.items():
        total = usable = -1
        code = 0
        if d in manager.offline_dirs:
            results.append(_Result(error_code=ErrorCode.KAFKA_STORAGE_ERROR, log_dir=d, topics=[],
                                   total_bytes=-1, usable_bytes=-1))
            continue
        try:
            st = os.statvfs(d)
            total, usable = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
        except OSError:
            code = ErrorCode.KAFKA_STORAGE_ERROR
        results.append(_Result(
            error_code=code, log_dir=d,
            topics=[_Topic(name=t, partitions=ps) for t, ps in sorted(topics.items())],
            total_bytes=total, usable_bytes=usable))
    return ctx.response(throttle_time_ms=0, error_code=0, results=results)
