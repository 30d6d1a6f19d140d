"""How a follower's log is truncated: by leader epoch (Kafka 3.9), never by HW alone.

A replica that becomes follower keeps its whole log.  Its fetcher sends the latest
epoch of its leader-epoch cache as ``last_fetched_epoch``; a leader whose log
differs answers ``diverging_epoch`` (the largest epoch <= the follower's and where
it ends) and the follower cuts at ``diverged_offset`` -- Kafka's
AbstractFetcherThread.truncateOnFetchResponse with getOffsetTruncationState.  Where
the follower has epochs the leader never had, the cut first goes to the end of the
follower's largest epoch below the leader's answer; the next fetch (with that
smaller last epoch) asks again, until both logs agree on an epoch and its end.

Before KIP-101 (Kafka < 0.11) a new follower truncated to its high watermark and
fetched without epochs.  The HW lags one fetch round behind the leader's, so that
loses acknowledged records and lets logs diverge (the two anomalies of KIP-101).
``Partition.truncate_to_hw = True`` restores that behaviour for one partition: a
test hook (the anomaly tests), never set by the broker.

Invariants: a truncation never goes past the log end; with epochs, never below what
the leader holds in the same epoch.
"""
from __future__ import annotations

import structlog

_log = structlog.get_logger("kafkapy.replication.truncation")

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


def truncates_to_hw(partition) -> bool:
    """Whether the test hook asks for HW truncation (and no epochs) on ``partition``."""
    return bool(partition.truncate_to_hw)


def last_fetched_epoch(partition) -> int:
    """What a follower's fetch carries as ``last_fetched_epoch``: the latest epoch of its
    leader-epoch cache (-1 with none, or with the HW-truncation hook: no epochs)."""
    if truncates_to_hw(partition):
        return UNDEFINED_EPOCH
    latest = partition.log.leader_epoch_cache.latest_epoch
    return latest if latest is not None else UNDEFINED_EPOCH


def on_become_follower(partition) -> None:
    """What becoming follower cuts: nothing when the log has leader epochs (Kafka 3.9:
    the fetcher truncates by epoch), down to the HW with the hook -- and, as Kafka 3.9
    (a partition without a latest epoch starts its fetcher Truncating, which truncates
    to the HW), when the log holds records but no epoch to fetch with."""
    log = partition.log
    if log.offline:
        return
    no_epochs = log.leader_epoch_cache.latest_epoch is None
    if not (truncates_to_hw(partition) or no_epochs):
        return
    if log.high_watermark < log.log_end_offset:
        end = log.log_end_offset
        log.truncate_to(log.high_watermark)
        _log.info("truncated follower log to its high watermark",
                  reason="pre-KIP-101 hook" if truncates_to_hw(partition) else "no leader epochs",
                  partition=f"{partition.topic}-{partition.index}",
                  high_watermark=log.high_watermark, log_end_offset=end)


def diverged_offset(log, leader_epoch: int, leader_end_offset: int) -> int:
    """Where a follower truncates on the leader's epoch answer (Kafka's
    getOffsetTruncationState).

    - The leader knows no end (-1): the follower's high watermark (Kafka: the initial
      fetch offset, which is the HW for a log without epochs).
    - The leader names no epoch: its end offset, if below the log end.
    - This log has no epoch at or below the leader's: the leader's end.
    - This log's largest epoch at or below the leader's is another one (epochs the
      leader never had): that epoch's end here; the next fetch asks again.
    - Otherwise the smaller of both ends of that epoch.
    Never beyond the log end.
    """
    leo = log.log_end_offset
    if leader_end_offset == UNDEFINED_OFFSET:
        return min(log.high_watermark, leo)
    if leader_epoch == UNDEFINED_EPOCH:
        return min(leader_end_offset, leo)
    epoch, end = log.leader_epoch_cache.end_offset_for(leader_epoch, leo)
    if end == UNDEFINED_OFFSET:
        return min(leader_end_offset, leo)
    if epoch != leader_epoch:
        return min(end, leo)
    return min(end, leader_end_offset, leo)


def truncate_diverged(partition, leader_epoch: int, leader_end_offset: int) -> int:
    """Truncate a follower's log on a diverging-epoch answer; returns the new log end."""
    log = partition.log
    offset = diverged_offset(log, leader_epoch, leader_end_offset)
    if offset < log.high_watermark:
        _log.warning("truncating below the high watermark",
                     partition=f"{partition.topic}-{partition.index}", to=offset,
                     high_watermark=log.high_watermark)
    _log.info("truncating diverged follower log", partition=f"{partition.topic}-{partition.index}",
              to=offset, leader_epoch=leader_epoch, leader_end=leader_end_offset,
              log_end_offset=log.log_end_offset)
    log.truncate_to(offset)
    return log.log_end_offset
