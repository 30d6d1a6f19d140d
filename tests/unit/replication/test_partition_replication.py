"""Partition leader/follower logic over real logs: leader epochs, follower tracking and the
high watermark on the leader, byte-for-byte follower appends, follower HW and truncation."""
from __future__ import annotations

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkapy.clock import MockClock
from kafkapy.log.log import Log
from kafkapy.metadata.cache import PartitionState
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.records.record import build_batch
from kafkapy.replication.partition import Partition

TS = 1_700_000_000_000


def batch(n=3, producer=(-1, -1, -1), transactional=False, value=b"v" * 50) -> bytes:
    b = DefaultRecordBatchBuilder(2, 0, transactional, producer[0], producer[1], producer[2],
                                  1 << 22)
    for i in range(n):
        b.append(i, timestamp=TS + i, key=b"k%d" % i, value=value, headers=[])
    return bytes(b.build())


def state(leader, epoch, isr, replicas=(0, 1, 2)):
    return PartitionState(0, list(replicas), leader, epoch, list(isr))


@pytest.fixture
def clock():
    return MockClock(TS)


def partition(tmp_path, clock, node_id, st, name="t-0"):
    log = Log.load(str(tmp_path / f"n{node_id}" / name), {}, clock)
    return Partition("t", 0, log, st, node_id)


def produce(p, n=3, **kw):
    result = p.append_as_leader(batch(n, **kw), 9)
    assert result.error_code == 0, result
    return result


def log_bytes(log) -> bytes:
    return log.read_bytes(log.log_start_offset, 1 << 30)


# -- the leader ---------------------------------------------------------------------------

def test_make_leader_starts_its_epoch_at_the_log_end(tmp_path, clock):
    p = partition(tmp_path, clock, 0, state(1, 0, [0, 1]))
    assert p.make_follower(state(1, 0, [0, 1]))
    p.append_as_follower(_leader_log_of(tmp_path, clock, 4))
    assert p.make_leader(state(0, 5, [0, 1])) is True
    assert p.log.leader_epoch_cache.entries[-1] == (5, 4)
    assert p.is_leader and p.leader_epoch == 5
    # Re-elected with a new epoch: not a new leader; the epoch cache gains the new epoch.
    assert p.make_leader(state(0, 6, [0, 1])) is False
    assert p.log.leader_epoch_cache.entries[-1] == (6, 4)


def _leader_log_of(tmp_path, clock, n) -> bytes:
    leader = partition(tmp_path, clock, 9, state(9, 0, [9], replicas=(9,)), name="src-0")
    produce(leader, n)
    return log_bytes(leader.log)


def test_hw_is_the_smallest_log_end_over_the_isr(tmp_path, clock):
    p = partition(tmp_path, clock, 0, state(0, 1, [0, 1, 2]))
    p.make_leader(state(0, 1, [0, 1, 2]))
    produce(p, 5)
    assert p.high_watermark == 0, "followers' log ends are unknown: HW stays"
    assert p.update_follower_fetch(1, 5, TS) is False, "follower 2 is still unknown"
    assert p.high_watermark == 0
    assert p.update_follower_fetch(2, 3, TS) is True
    assert p.high_watermark == 3
    assert p.update_follower_fetch(2, 5, TS) is True
    assert p.high_watermark == 5
    assert p.update_follower_fetch(2, 5, TS) is False


def test_hw_never_moves_back(tmp_path, clock):
    p = partition(tmp_path, clock, 0, state(0, 1, [0, 1]))
    p.make_leader(state(0, 1, [0, 1]))
    produce(p, 4)
    assert p.update_follower_fetch(1, 4, TS)
    assert p.high_watermark == 4
    assert p.update_follower_fetch(1, 2, TS) is False  # (a follower that truncated)
    assert p.high_watermark == 4


def test_replicas_outside_the_isr_do_not_hold_the_hw(tmp_path, clock):
    p = partition(tmp_path, clock, 0, state(0, 1, [0, 1]))
    p.make_leader(state(0, 1, [0, 1]))
    produce(p, 4)
    assert p.update_follower_fetch(2, 0, TS) is False
    assert p.update_follower_fetch(1, 4, TS) is True
    assert p.high_watermark == 4


def test_sole_isr_member_hw_follows_its_log_end(tmp_path, clock):
    p = partition(tmp_path, clock, 0, state(0, 1, [0]))
    p.make_leader(state(0, 1, [0]))
    produce(p, 4)
    assert p.high_watermark == 4


def test_isr_down_to_the_leader_moves_the_hw_up(tmp_path, clock):
    p = partition(tmp_path, clock, 0, state(0, 1, [0, 1]))
    p.make_leader(state(0, 1, [0, 1]))
    produce(p, 4)
    assert p.high_watermark == 0
    p.make_leader(state(0, 2, [0]))   # the controller removed a dead follower
    assert p.high_watermark == 4


def test_new_leader_forgets_followers_re_elected_leader_keeps_them(tmp_path, clock):
    p = partition(tmp_path, clock, 0, state(0, 1, [0, 1, 2]))
    p.make_leader(state(0, 1, [0, 1, 2]))
    produce(p, 4)
    p.update_follower_fetch(1, 4, TS)
    p.update_follower_fetch(2, 2, TS)
    assert p.high_watermark == 2
    p.make_leader(state(0, 2, [0, 1, 2]))  # re-elected: what it knew stays
    assert p.followers[1].log_end_offset == 4
    assert p.update_follower_fetch(2, 4, TS) and p.high_watermark == 4
    produce(p, 2)
    p.make_follower(state(1, 3, [0, 1, 2]))
    assert p.followers == {}
    p.make_leader(state(0, 4, [0, 1, 2]))  # a new leader: the followers' ends are unknown
    assert {r: f.log_end_offset for r, f in p.followers.items()} == {1: -1, 2: -1}
    assert p.update_follower_fetch(1, 6, TS) is False


def test_follower_fetch_is_ignored_on_a_follower_and_for_unknown_replicas(tmp_path, clock):
    p = partition(tmp_path, clock, 0, state(1, 1, [0, 1]))
    p.make_follower(state(1, 1, [0, 1]))
    assert p.update_follower_fetch(1, 0, TS) is False
    p.make_leader(state(0, 2, [0, 1]))
    assert p.update_follower_fetch(7, 0, TS) is False


# -- the follower ---------------------------------------------------------------------------

def test_follower_append_keeps_the_leaders_bytes(tmp_path, clock):
    leader = partition(tmp_path, clock, 0, state(0, 3, [0, 1]))
    leader.make_leader(state(0, 3, [0, 1]))
    produce(leader, 3)
    produce(leader, 2, producer=(1000, 0, 0))
    leader.make_leader(state(0, 4, [0, 1]))
    produce(leader, 4, producer=(1000, 0, 2))
    data = log_bytes(leader.log)

    follower = partition(tmp_path, clock, 1, state(0, 4, [0, 1]))
    follower.make_follower(state(0, 4, [0, 1]))
    clock.advance(5000)  # the follower's clock must not show up in the batches
    assert follower.append_as_follower(data) == 9
    assert log_bytes(follower.log) == data
    assert follower.log.leader_epoch_cache.entries == [(3, 0), (4, 5)]
    entry = follower.log.producer_state.last_entry(1000)
    assert entry is not None and entry.last_seq == 5
    # The leader's HW arrives with the next fetch answer; bounded by the local log end.
    assert follower.update_follower_high_watermark(7) == 7
    assert follower.update_follower_high_watermark(100) == 9


def test_follower_append_drops_a_partial_tail_and_skips_what_it_has(tmp_path, clock):
    leader = partition(tmp_path, clock, 0, state(0, 0, [0]))
    produce(leader, 3)
    produce(leader, 3)
    data = log_bytes(leader.log)
    follower = partition(tmp_path, clock, 1, state(0, 0, [0]))
    follower.make_follower(state(0, 0, [0]))
    first_size = len(data) // 2
    assert follower.append_as_follower(data[:first_size + 20]) == 3
    assert follower.append_as_follower(data) == 6  # the first batch again: skipped
    assert log_bytes(follower.log) == data


def test_follower_append_refuses_a_corrupt_batch(tmp_path, clock):
    leader = partition(tmp_path, clock, 0, state(0, 0, [0]))
    produce(leader, 3)
    data = bytearray(log_bytes(leader.log))
    data[-1] ^= 0xFF
    follower = partition(tmp_path, clock, 1, state(0, 0, [0]))
    follower.make_follower(state(0, 0, [0]))
    with pytest.raises(KafkaError) as err:
        follower.append_as_follower(bytes(data))
    assert err.value.code == ErrorCode.CORRUPT_MESSAGE
    assert follower.log.log_end_offset == 0


@pytest.mark.parametrize("hw_hook", [False, True])
def test_make_follower_truncates_nothing_unless_the_hw_hook_is_set(tmp_path, clock, hw_hook):
    """Kafka 3.9: the fetcher truncates by leader epoch, becoming follower cuts nothing;
    the test hook (pre-KIP-101) truncates to the high watermark."""
    p = partition(tmp_path, clock, 0, state(0, 1, [0, 1]))
    p.truncate_to_hw = hw_hook
    p.make_leader(state(0, 1, [0, 1]))
    produce(p, 3)
    p.update_follower_fetch(1, 3, TS)
    produce(p, 3)   # not replicated: above the HW
    assert (p.high_watermark, p.log.log_end_offset) == (3, 6)
    assert p.make_follower(state(1, 2, [0, 1])) is True
    assert p.log.log_end_offset == (3 if hw_hook else 6)
    if not hw_hook:
        return
    assert not p.is_leader
    # The same leader and epoch again: nothing for the fetcher to restart, nothing cut
    # from under the running fetcher.
    p.append_as_follower(build_batch([(None, b"a", [], TS), (None, b"b", [], TS)],
                                     base_offset=3, partition_leader_epoch=2))
    assert (p.high_watermark, p.log.log_end_offset) == (3, 5)
    assert p.make_follower(state(1, 2, [0, 1])) is False
    assert p.log.log_end_offset == 5


def test_follower_log_start_follows_the_leader_within_its_hw(tmp_path, clock):
    leader = partition(tmp_path, clock, 0, state(0, 0, [0]))
    produce(leader, 3)
    produce(leader, 3)
    follower = partition(tmp_path, clock, 1, state(0, 0, [0]))
    follower.make_follower(state(0, 0, [0]))
    follower.append_as_follower(log_bytes(leader.log))
    follower.update_follower_high_watermark(2, 1)
    assert follower.log.log_start_offset == 1
    follower.update_follower_high_watermark(6, 3)
    assert (follower.high_watermark, follower.log.log_start_offset) == (6, 3)
    follower.update_follower_high_watermark(6, 50)  # beyond what it holds: not taken
    assert follower.log.log_start_offset == 3
