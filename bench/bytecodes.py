"""Bytecodes per replication round: a count that does not move with the machine's load.

The in-process replication benches (``bench_replica_fetch.py``: the leader's side of a
batch with two followers; ``bench_follower_fetch.py``: one follower's fetch round against
a fake leader) report CPU time, which on a shared machine varies by half with what else
runs, so a change of a few percent cannot be seen in it.  This counts the Python
bytecodes the interpreter runs over their rounds instead (``sys.settrace`` with opcode
events, so about a hundred times slower than the bench itself): the same code counts the
same every run, and a count moves only when the code run does.  What it does not see:
C code (the native batch check, struct, the event loop) and the kernel (system calls).

Reported per round: the total and its part in kafkapy's own code (the leader's round
includes the fake followers' requests, encoded by kafka-python), the functions with the most bytecodes run in their own
body (``self``), and the functions with the most run under them (``inclusive``: from the
call to the return, callees included; a coroutine counts from each resume to its next
suspension), each with its calls per round.

Usage: python bench/bytecodes.py leader|follower [--rounds N] [--top N] [--idle N]
"""
from __future__ import annotations

import argparse
import asyncio
import collections
import importlib.util
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

WARMUP = 50


@dataclass
class Counts:
    """Bytecodes run over ``rounds`` rounds, by function (``path:qualified name``)."""

    rounds: int
    total: int = 0
    own: collections.Counter = field(default_factory=collections.Counter)
    under: collections.Counter = field(default_factory=collections.Counter)
    calls: collections.Counter = field(default_factory=collections.Counter)

    def per_round(self, value: int) -> float:
        return value / self.rounds


class _Tracer:
    """Counts every opcode event, by the code object running it, and per call its span."""

    def __init__(self) -> None:
        self.total = 0
        self.own: collections.Counter = collections.Counter()
        self.under: collections.Counter = collections.Counter()
        self.calls: collections.Counter = collections.Counter()
        self._started: dict[int, int] = {}

    def on_call(self, frame, event, arg):
        if event != "call":
            return None
        frame.f_trace_opcodes = True
        code = frame.f_code
        self.calls[code] += 1
        self._started[id(frame)] = self.total
        return self.on_line

    def on_line(self, frame, event, arg):
        if event == "opcode":
            self.total += 1
            self.own[frame.f_code] += 1
        elif event == "return":
            started = self._started.pop(id(frame), None)
            if started is not None:
                self.under[frame.f_code] += self.total - started
        return self.on_line

    def counts(self, rounds: int) -> Counts:
        out = Counts(rounds, self.total)
        for source, target in ((self.own, out.own), (self.under, out.under),
                               (self.calls, out.calls)):
            for code, value in source.items():
                target[_name(code)] += value
        return out


def _name(code) -> str:
    path = code.co_filename
    for prefix in (str(BENCH.parent) + os.sep, "site-packages" + os.sep):
        if prefix in path:
            path = path.split(prefix, 1)[1]
    return f"{path}:{code.co_qualname}"


async def count_rounds(step, rounds: int) -> Counts:
    """The bytecodes of ``rounds`` awaits of ``step()`` (an async callable: one round)."""
    tracer = _Tracer()
    sys.settrace(tracer.on_call)
    try:
        for _ in range(rounds):
            await step()
    finally:
        sys.settrace(None)
    return tracer.counts(rounds)


async def leader(rounds: int, idle: int = 0) -> Counts:
    """The leader's side: bench_replica_fetch's rounds (an acks=all append of a 64 KiB
    batch, both followers' answers, both followers' next fetches), with ``idle`` quiet
    partitions in both followers' sessions.  The fake followers' requests are encoded by
    kafka-python within the round and counted too (bench_replica_fetch.py's
    ``_Follower.frame``)."""
    bench_replica_fetch = _sibling("bench_replica_fetch")
    loop = asyncio.get_running_loop()
    with tempfile.TemporaryDirectory(prefix="bench-bytecodes-") as root:
        bench = bench_replica_fetch.Bench(Path(root), loop, idle)
        await bench.connect()
        try:
            await bench.open_sessions(None)
            await bench.rounds(WARMUP)
            return await count_rounds(lambda: bench.rounds(1), rounds)
        finally:
            await asyncio.sleep(0.05)
            for follower in bench.followers:
                follower.drain(None)
            bench.close()


async def follower(rounds: int, idle: int = 0) -> Counts:
    """A follower's side: bench_follower_fetch's rounds (build, send, the answer's decode,
    the session, the follower append, the high watermark) against its fake leader (a
    process of its own, not counted), with ``idle`` quiet partitions in its session."""
    bench_follower_fetch = _sibling("bench_follower_fetch")
    with bench_follower_fetch.fake_leader() as port, \
            tempfile.TemporaryDirectory(prefix="bench-bytecodes-") as root:
        manager, partitions = bench_follower_fetch._follower(root, port, idle)
        try:
            for _ in range(WARMUP):
                await manager.fetch_round()
            return await count_rounds(manager.fetch_round, rounds)
        finally:
            await manager.shutdown()
            for partition in partitions.values():
                partition.log.close()


def _sibling(name: str):
    """Another bench script of this dir, as a module (loaded by path: a test that loads
    this script does not keep the dir on ``sys.path``)."""
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return module


def report(counts: Counts, top: int) -> str:
    ours = sum(value for name, value in counts.own.items() if name.startswith("kafkapy/"))
    lines = [f"bytecodes per round: {counts.per_round(counts.total):,.0f} "
             f"({counts.rounds} rounds), of which in kafkapy/: {counts.per_round(ours):,.0f}"]
    for title, table in (("self", counts.own), ("inclusive", counts.under)):
        lines.append(f"-- {title}: bytecodes per round, calls per round, function")
        for name, value in table.most_common(top):
            lines.append(f"{counts.per_round(value):9.1f} {counts.per_round(counts.calls[name]):6.1f}"
                         f"  {name}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("side", choices=("leader", "follower"))
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--idle", type=int, default=0,
                        help="more partitions in the follower's (leader: each follower's) "
                             "fetch session that get nothing")
    args = parser.parse_args()
    import uvloop   # the broker's loop
    if args.side == "leader":
        counts = uvloop.run(leader(args.rounds, args.idle))
    else:
        counts = uvloop.run(follower(args.rounds, args.idle))
    print(report(counts, args.top))


if __name__ == "__main__":
    main()
