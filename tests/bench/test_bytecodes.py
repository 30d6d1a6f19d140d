"""bench/bytecodes.py: bytecodes counted per function, the same every run, on both sides
of the replication round."""
from __future__ import annotations

import asyncio

from tests.support.bench_scripts import load_bench_script

bc = load_bench_script("bytecodes.py", "bench_bytecodes")


def _inner(n: int) -> int:
    total = 0
    for i in range(n):
        total += i
    return total


async def _step() -> None:
    _inner(10)
    _inner(20)


def _count(rounds: int):
    return asyncio.run(bc.count_rounds(_step, rounds))


def test_own_and_inclusive_counts_and_calls_per_function():
    counts = _count(4)
    inner = next(name for name in counts.own if name.endswith(":_inner"))
    step = next(name for name in counts.own if name.endswith(":_step"))
    assert counts.calls[inner] == 8 and counts.calls[step] == 4
    assert counts.under[inner] == counts.own[inner] > 0, "a leaf runs nothing else"
    assert counts.under[step] == counts.own[step] + counts.own[inner]
    assert counts.total == counts.own[step] + counts.own[inner]
    # a longer loop runs more bytecodes
    assert counts.own[inner] > 8 * 2 * 10


def test_the_same_code_counts_the_same():
    assert _count(3).total * 2 == _count(6).total


def test_the_report_names_functions_per_round():
    text = bc.report(_count(5), 3)
    assert text.splitlines()[0].startswith("bytecodes per round: ")
    assert any(line.rstrip().endswith(":_inner") and " 2.0 " in line
               for line in text.splitlines())


def test_a_follower_round_is_counted_through_the_real_fetcher():
    import uvloop
    counts = uvloop.run(bc.follower(5))
    build = "kafkapy/replication/fetcher.py:_LeaderFetcher._build"
    assert counts.calls[build] == 5
    assert counts.per_round(counts.total) > 1000
    assert counts.under["kafkapy/replication/partition.py:Partition.append_as_follower"] > 0


def test_a_leader_round_is_counted_through_the_fetch_handler():
    import uvloop
    counts = uvloop.run(bc.leader(5))
    assert counts.calls["kafkapy/handlers/fetch.py:handle"] == 2 * 5, "two followers fetch"
    assert counts.calls["kafkapy/replication/replica_manager.py:ReplicaManager.append_records"] == 5


def test_quiet_partitions_in_the_followers_sessions_are_checked_not_read():
    import uvloop
    read_one = "kafkapy/replication/replica_manager.py:_FetchRead._read_one"
    still = "kafkapy/replication/replica_manager.py:_FetchRead._still_at_end"
    alone = uvloop.run(bc.leader(3))
    quiet = uvloop.run(bc.leader(3, idle=3))
    # Two followers, each fetch read when taken in and again when woken: 4 reads a round
    # of the busy partition, with or without three quiet ones beside it, which are only
    # checked, as often.
    assert alone.calls[read_one] == quiet.calls[read_one] == 4 * 3
    assert alone.calls[still] == 0 and quiet.calls[still] == 4 * 3 * 3
    assert quiet.calls["kafkapy/replication/replica_manager.py:ReplicaManager.append_records"] \
        == 3
    assert quiet.per_round(quiet.total) > alone.per_round(alone.total)
