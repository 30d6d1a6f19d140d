"""Per-stage latency of one acks=all batch on a kafkapy cluster, from the brokers' traces.

The brokers run with ``KAFKAPY_STAGE_TRACE=<dir>`` (``kafkapy.replication.stage_trace``):
each writes its events to ``<dir>/stages-<pid>.tsv``.  For every batch a leader appended
(``A``: partition, end offset E) the stages are joined on the partition and E, each
being the first event at or after the previous one that covers E:

=================  =========================================================================
stage              from -> to
=================  =========================================================================
leader append      the append starts -> the batch is in the leader's log, or sooner the
                   read for the follower: a parked fetch is woken and read inside the append
to fetch answer    appended -> the leader reads records up to >= E for a follower (its
                   next fetch; 0 when its parked fetch was woken inside the append)
fetch transit      that read -> the follower has the whole answer decoded (the answer's
                   encoding and sending, inside the append when it was woken there, the
                   loopback, the follower's turn)
follower append    decoded -> appended to the follower's log
to next fetch      appended -> the follower's next fetch (offset >= E) leaves
next fetch transit sent -> the leader handles it (its fetch offset recorded)
wait other ISR     the first follower's report -> the last one's (HW = min over the ISR)
HW to answer       the later follower's fetch is handled -> the produce is answered (the
                   high watermark passes E inside it)
total              the append starts -> the produce is answered
answer to next     the produce is answered -> the next append to the partition starts: the
append             producer's side of the cycle (the answer's way to the client, its next
                   request, that request's way in); not part of the total.  In two parts:
answer to next     the answer -> the leader takes the next Produce of the partition (``Q``:
request            its frame is taken from the connection): the answer's way out, the
                   client's turn, the request's way in and the leader's turn to read it
next request to    that request is taken -> its append starts (the leader decodes and
append             checks it)
=================  =========================================================================

Per follower stages are of the follower whose report moved the HW (the slower one).  The
stages but "wait other ISR" follow each other: they add up to the total.

``cycles`` gives the producer's cycle of every acks=all batch answered, replicated or not
(an RF 1 partition's answer is given inside its append): leader append (start -> end),
total (append start -> answer) and the three answer stages above.
Figures: median, p90, p99, max and mean in ms over the batches.  ``python bench/stage_breakdown.py DIR``
prints the table.
"""
from __future__ import annotations

import bisect
import sys
from collections import defaultdict
from pathlib import Path

LEGEND = ("Per batch (partition, end offset E), from the leader's append to its acks=all "
          "answer: leader append (the append, up to the read for the follower when its parked "
          "fetch is woken inside it); to fetch answer (until the leader reads past E for the "
          "follower, when not inside the append); fetch transit (that read -> the follower "
          "has the answer decoded: the answer's encoding and sendfile, done inside the "
          "append as the fetch is woken, the loopback, the follower's turn); "
          "follower append; to next fetch (appended -> the next Fetch leaves); next fetch "
          "transit (-> the leader has recorded its offset); HW to answer (that fetch, which "
          "moves the high watermark past E -> the produce is answered). Follower stages are "
          "the later follower's (the one whose fetch moved the HW); wait other ISR = its "
          "report minus the other follower's (not part of the sum); the other stages add up "
          "to total = append start -> answer. Answer to next append: the answer -> the next "
          "append to the partition (the producer's side of the cycle: with one request in "
          "flight per partition, total + this is the time per batch), in two parts: answer to "
          "next request (-> the leader takes the partition's next Produce off the connection: "
          "the answer's way out, the client's turn, the request's way in, the leader's turn) "
          "and next request to append (the leader decodes and checks it). RF 1 flat out: the "
          "same producers on the RF 1 topic (leader append; total = append start -> answer, "
          "given inside the append). Times are CLOCK_MONOTONIC stamps in each broker (one "
          "clock for all processes).")
STAGES = ["leader append", "to fetch answer", "fetch transit", "follower append",
          "to next fetch", "next fetch transit", "wait other ISR", "HW to answer", "total",
          "answer to next append", "answer to next request", "next request to append"]


class _Series:
    """Events of one kind on one (partition, replica), ordered by time; ``first(e, t)``
    finds the first at or after ns ``t`` whose offset is >= e."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, int, tuple]] = []   # (ns, offset, extra)

    def add(self, ns: int, offset: int, extra: tuple = ()) -> None:
        self.rows.append((ns, offset, extra))

    def done(self) -> None:
        self.rows.sort()
        self._ns = [r[0] for r in self.rows]

    def first(self, offset: int, after: int):
        i = bisect.bisect_left(self._ns, after)
        for row in self.rows[i:i + 2000]:
            if row[1] >= offset:
                return row
        return None


def load(trace_dir: Path) -> dict:
    series: dict = defaultdict(_Series)
    appends = []
    for path in sorted(Path(trace_dir).glob("stages-*.tsv")):
        for line in path.read_text().splitlines():
            f = line.split("\t")
            kind, key, v = f[0], (f[1], int(f[2])), [int(x) for x in f[3:]]
            if kind == "A":
                appends.append((key, v[0], v[1], v[2]))
            elif kind == "R":
                series[("R", key, v[0])].add(v[3], v[2])
            elif kind == "F":
                series[("F", key, v[0])].add(v[2], v[1])
            elif kind == "H":
                series[("H", key, None)].add(v[1], v[0])
            elif kind == "Q":
                series[("Q", key, None)].add(v[0], 0)
            elif kind == "P":
                series[("P", key, None)].add(v[1], v[0])
            elif kind == "S":
                series[("S", key, v[0])].add(v[2], v[1])
            elif kind == "X":
                series[("X", key, v[0])].add(v[3], v[1], (v[2],))
    for s in series.values():
        s.done()
    return {"series": series, "appends": appends}


def batches(data: dict, t_from: float | None = None, t_to: float | None = None) -> list[dict]:
    """Stage durations (ns) of every batch whose whole path was traced (appended between
    ``t_from`` and ``t_to``, ``time.monotonic()`` seconds, when given)."""
    lo = -1 if t_from is None else int(t_from * 1e9)
    hi = 1 << 62 if t_to is None else int(t_to * 1e9)
    series = data["series"]
    followers: dict = defaultdict(set)
    for kind, key, replica in series:
        if kind == "F":
            followers[key].add(replica)
    out = []
    empty = _Series()
    empty.done()
    starts = _starts(data)
    for key, end, t0, t1 in data["appends"]:
        if not lo <= t0 <= hi:
            continue
        per = {}
        for r in followers.get(key, ()):
            # t0: a fetch parked on the leader is woken inside the append itself.
            read = series.get(("R", key, r), empty).first(end, t0)
            if read is None:
                continue
            applied = series.get(("X", key, r), empty).first(end, read[0])
            if applied is None:
                continue
            sent = series.get(("S", key, r), empty).first(end, applied[0])
            if sent is None:
                continue
            got = series.get(("F", key, r), empty).first(end, sent[0])
            if got is None:
                continue
            per[r] = (read[0], applied[2][0], applied[0], sent[0], got[0])
        if len(per) < 2:
            continue
        hw = series.get(("H", key, None), empty).first(end, t1)
        p = _answer(series, key, end, hw[0]) if hw is not None else None
        if p is None:
            continue
        reports = sorted(per.values(), key=lambda v: v[4])
        read, received, applied, sent, got = reports[-1]
        # A parked fetch is woken, read and answered inside the append: the append stage
        # then ends at that read, and the answer's sending is part of the fetch transit.
        out.append({"leader append": min(read, t1) - t0, "to fetch answer": max(0, read - t1),
                    "fetch transit": received - read, "follower append": applied - received,
                    "to next fetch": sent - applied, "next fetch transit": got - sent,
                    "wait other ISR": got - reports[0][4], "HW to answer": p[0] - got,
                    "total": p[0] - t0})
        out[-1].update(_next_cycle(series, key, p[0], starts[key]))
    return out


def cycles(data: dict, t_from: float | None = None, t_to: float | None = None) -> list[dict]:
    """The producer's cycle (ns) of every batch appended between ``t_from`` and ``t_to``
    and answered: leader append, total (append start -> answer) and the answer stages."""
    lo = -1 if t_from is None else int(t_from * 1e9)
    hi = 1 << 62 if t_to is None else int(t_to * 1e9)
    series = data["series"]
    starts = _starts(data)
    out = []
    for key, end, t0, t1 in data["appends"]:
        p = _answer(series, key, end, t1) if lo <= t0 <= hi else None
        if p is None:
            continue
        row = {"leader append": t1 - t0, "total": p[0] - t0}
        row.update(_next_cycle(series, key, p[0], starts[key]))
        out.append(row)
    return out


def _answer(series: dict, key, end: int, after: int):
    """The acks=all answer (``P``) of the partition's batch ending at ``end``, the first at
    or after ns ``after``; None when none was traced."""
    answers = series.get(("P", key, None))
    if answers is None:
        return None
    i = bisect.bisect_left(answers._ns, after)
    return next((row for row in answers.rows[i:i + 200] if row[1] == end), None)


def _starts(data: dict) -> dict:
    """{partition: sorted start ns of its appends}."""
    starts: dict = defaultdict(list)
    for key, _, t0, _ in data["appends"]:
        starts[key].append(t0)
    for values in starts.values():
        values.sort()
    return starts


def _next_cycle(series: dict, key, answered: int, following: list[int]) -> dict:
    """The answer stages after the answer at ns ``answered``: to the partition's next
    append, and its two parts when the leader took that request in between."""
    i = bisect.bisect_right(following, answered)
    if i == len(following):
        return {}
    append = following[i]
    stages = {"answer to next append": append - answered}
    taken = series.get(("Q", key, None))
    request = taken.first(0, answered) if taken is not None else None
    if request is not None and request[0] <= append:
        stages["answer to next request"] = request[0] - answered
        stages["next request to append"] = append - request[0]
    return stages


def summary(trace_dir: Path, t_from: float | None = None, t_to: float | None = None,
            replicated: bool = True) -> dict:
    """{"batches": n, "stages": {stage: {"p50_ms", "p90_ms", "p99_ms", "max_ms", "mean_ms"}}}
    of the batches appended in [t_from, t_to] (``time.monotonic()`` seconds; None: no
    bound): their whole replicated path (``batches``), or with ``replicated`` false only
    the producer's cycle (``cycles``: an RF 1 phase).  One slow batch delays every record
    queued behind it, so a paced run's record p99 follows the batches' p99 and max, not
    their p90."""
    rows = (batches if replicated else cycles)(load(trace_dir), t_from, t_to)
    stages = {}
    for name in STAGES:
        vals = sorted(r[name] for r in rows if name in r)
        if not vals:
            continue
        stages[name] = {"p50_ms": _ms(vals, 0.5), "p90_ms": _ms(vals, 0.9),
                        "p99_ms": _ms(vals, 0.99), "max_ms": round(vals[-1] / 1e6, 3),
                        "mean_ms": round(sum(vals) / len(vals) / 1e6, 3)}
    return {"batches": len(rows), "stages": stages}


def _ms(ordered: list[int], q: float) -> float:
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * q))] / 1e6, 3)


def lines(result: dict) -> list[str]:
    out = [f"Stage breakdown of {result['batches']:,} traced batches (ms):", "",
           "| stage | p50 | p90 | p99 | max | mean |", "|---|---:|---:|---:|---:|---:|"]
    for name in STAGES:
        s = result["stages"].get(name)
        if s:
            out.append(f"| {name} | {s['p50_ms']:.2f} | {s['p90_ms']:.2f} | {s['p99_ms']:.2f} "
                       f"| {s['max_ms']:.2f} | {s['mean_ms']:.2f} |")
    return out


if __name__ == "__main__":
    print("\n".join(lines(summary(Path(sys.argv[1])))))
