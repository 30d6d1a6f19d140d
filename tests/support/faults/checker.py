"""The checker of a fault run's history: Kafka's anomalies, counted, with examples.

``check(history, replica_logs=None) -> Report``. ``history`` is a ``History`` (or its list of
ops; format in ``history.py``); ``replica_logs`` maps ``(topic, partition)`` to
``{broker_id: [(offset, value), ...]}``, each replica's data records (no control records)
read from its log after the faults healed.

Terms. A write is a send, or one record a transaction produced. It is *acknowledged* (acked)
when its send completed ``ok`` (acks=all, with a partition and offset) or its transaction
completed ``ok`` with intent ``commit``. It *failed* when its send completed ``fail`` (the
client knows it was never appended) or its transaction completed ``fail`` or ``ok`` with intent
``abort``. Writes of ``info`` completions, or with no completion, may or may not have taken
effect: neither their presence nor their absence is a lost write or an aborted read (a
read_committed poll of one before its commit was even called is still an uncommitted read).
``Report.unknown`` counts them, ``Report.failed`` the failed writes. The *final read* of
a partition is its ``read-final`` op of one isolation: every record from offset 0 to the end
(high watermark; last stable offset for read_committed) once the cluster healed. A record is
*visible* to an isolation when the final read of that isolation holds it.

The anomalies (named as Jepsen's Kafka workload checker names them where it has the
anomaly):

- ``lost-write``: an acknowledged write absent from the final read of its partition (the
  read_committed read for transactional writes, read_uncommitted for sends): everything acked
  lies below the final high watermark, so absent means gone. For a partition without a final
  read, Jepsen's rule: an acked write at an offset at or below the highest offset any poll
  returned for the partition, that no poll returned. One per write. A copy (txn ops with
  ``copies``) is acknowledged by the copier group's committed offset: an input record below
  the offset the group committed on its partition at the end (read-offsets) with no copy in
  the read_committed final read of the output is a lost write too (offsets committed
  without their transaction's writes). One per input record. And as Jepsen's rule for
  indefinite writes: a write of unknown outcome that a poll returned (a read_committed
  poll, for a transactional one) took effect, and is lost when absent from the final read.
- ``duplicate``: one value read (polls and final reads) at more than one offset of a topic.
  One per value. And for transactional copies (txn ops with ``copies``): one input record
  whose copies, written by transactions that are not known aborted, are in a read_committed
  final read of the output more than once (exactly-once copying broken). One per input
  record.
- ``inconsistent-offsets``: two different values at one offset of a partition, among every
  observation of it: acknowledged offsets of sends, delivered offsets of transactional
  writes, polls and final reads (over time: an offset acked for one value and later read
  holding another counts). One per (partition, offset).
- ``nonmonotonic-poll``: within one consumer's position epoch (from one assignment or seek
  to the next), a partition's record at an offset at or below the offset of the record it
  returned before for that partition (within a poll or across polls). One per such pair.
- ``poll-skip``: within one consumer's position epoch (from one assignment or seek to the
  next), two consecutive records of a partition (within a poll or across polls) with an
  offset between them that holds a record visible, to that consumer's isolation, in the
  final read. Gaps of transaction markers and aborted records are not skips. One per such
  pair.
- ``aborted-read`` (Jepsen's G1a): a read of a failed write: a failed send read at any
  isolation, or an aborted transaction's record read at read_committed (polls and final
  reads). One per (read op, value).
- ``uncommitted-read`` (Jepsen's precommitted read, at read_committed): a read_committed poll
  that returned a transactional record before its transaction's commit was called (the poll
  completed before the transaction's ``end_time``), or a record of a transaction that never
  ended. One per (poll, value).
- ``commit-backwards``: committed offsets of a group going backwards: an ok commit (or ok
  committed transaction's offsets) of a partition invoked after another ok commit of that
  partition in the same group completed, with a lower offset; the group's committed offsets
  read at the end (read-offsets; -1 for none) count as the last such commit. One per later
  commit and partition.
- ``divergent-replicas``: after healing, two replicas of a partition holding different values
  at one offset, or a replica holding at an offset below the final read's end a value other
  than the final read's. One per (partition, offset).

``Report.longest_unavailability`` maps each f the workloads ran (send, poll, commit, txn) to
the longest time in seconds, within the span of the workload ops (final reads excluded),
without a successful op of that f: an ok completion (for polls, one that returned records;
for txns, an ok commit).
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from dataclasses import dataclass, field

ANOMALIES = (
    "lost-write",
    "duplicate",
    "inconsistent-offsets",
    "nonmonotonic-poll",
    "poll-skip",
    "aborted-read",
    "uncommitted-read",
    "commit-backwards",
    "divergent-replicas",
)
MAX_EXAMPLES = 5
COMMITTED = "read_committed"
UNCOMMITTED = "read_uncommitted"


@dataclass
class Report:
    """What ``check`` found: ``counts`` has every key of ``ANOMALIES``."""

    counts: dict[str, int]
    examples: dict[str, list[dict]]
    acked: int
    ops: int
    longest_unavailability: dict[str, float]
    unknown: int = 0       # writes of info completions (may or may not have happened)
    failed: int = 0        # writes known not to have taken effect
    notes: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not any(self.counts.values())

    def summary(self) -> str:
        found = ", ".join(f"{name}={count}" for name, count in self.counts.items() if count)
        return (f"{self.ops} ops, {self.acked} acked, {self.unknown} unknown, "
                f"{self.failed} failed; anomalies: {found or 'none'}")


class _Found:
    def __init__(self) -> None:
        self.counts = {name: 0 for name in ANOMALIES}
        self.examples: dict[str, list[dict]] = {name: [] for name in ANOMALIES}

    def add(self, name: str, example: dict) -> None:
        self.counts[name] += 1
        if len(self.examples[name]) < MAX_EXAMPLES:
            self.examples[name].append(example)


@dataclass
class _Write:
    topic: str
    value: object
    state: str                  # "acked", "failed", "unknown"
    partition: int | None
    offset: int | None
    transactional: bool
    end_time: float | None      # when the transaction's commit/abort was called
    op: dict


def check(history, replica_logs: dict | None = None) -> Report:
    """Check ``history`` (a History or a list of ops) and the replicas' logs."""
    ops = history.ops if hasattr(history, "ops") else list(history)
    found = _Found()
    writes = _writes(ops)
    finals = _final_reads(ops)
    polls = [op for op in ops if op["f"] == "poll" and op["type"] == "ok"]
    _lost_writes(writes, finals, polls, found)
    _duplicates(polls, finals, found)
    copies, copier_inputs = _copies(ops, finals)
    _duplicate_copies(copies, found)
    _lost_copies(ops, finals, copies, copier_inputs, found)
    _inconsistent_offsets(writes, polls, finals, found)
    _poll_order(polls, finals, found)
    _aborted_and_uncommitted_reads(writes, polls, finals, found)
    _commits_backwards(ops, found)
    _divergent_replicas(replica_logs or {}, finals, found)
    return Report(
        counts=found.counts,
        examples={name: examples for name, examples in found.examples.items() if examples},
        acked=sum(1 for write in writes.values() if write.state == "acked"),
        ops=sum(1 for op in ops if op["type"] != "invoke" and not op["f"].startswith("read-")),
        longest_unavailability=_longest_unavailability(ops),
        unknown=sum(1 for write in writes.values() if write.state == "unknown"),
        failed=sum(1 for write in writes.values() if write.state == "failed"),
        notes=_notes(ops, finals),
    )


def _writes(ops) -> dict[tuple, _Write]:
    """Every write by (topic, value), from completions (invocations only when they never
    completed: those writes are unknown)."""
    writes: dict[tuple, _Write] = {}
    completed = {op["invoke_index"] for op in ops if "invoke_index" in op}
    for op in ops:
        if op["f"] == "send":
            if op["type"] == "invoke" and op["index"] in completed:
                continue
            state = {"ok": "acked", "fail": "failed"}.get(op["type"], "unknown")
            writes[(op["topic"], op["value"])] = _Write(
                op["topic"], op["value"], state, op.get("partition"), op.get("offset"),
                False, None, op)
        elif op["f"] == "txn":
            if op["type"] == "invoke" and op["index"] in completed:
                continue
            state = _txn_state(op)
            for topic, partition, offset, value in op["value"].get("writes", []):
                writes[(topic, value)] = _Write(topic, value, state, partition, offset, True,
                                                op.get("end_time"), op)
    return writes


def _txn_state(op: dict) -> str:
    if op["type"] == "ok":
        return "acked" if op["value"].get("intent") == "commit" else "failed"
    if op["type"] == "fail":
        return "failed"
    return "unknown"


def _final_reads(ops) -> dict[tuple, dict]:
    """(topic, partition, isolation) -> the last final read op of it."""
    finals = {}
    for op in ops:
        if op["f"] == "read-final" and op["type"] in ("ok", "info"):
            finals[(op["topic"], op["partition"], op["isolation"])] = op
    return finals


class _Final:
    """One final read, indexed: ``at`` offset -> value, ``values``, ``reach`` (the offset
    below which it saw everything), ``complete`` (it reached its end)."""

    def __init__(self, op: dict) -> None:
        self.at = {offset: value for offset, value in op["value"]}
        self.values = set(self.at.values())
        self.complete = op["type"] == "ok"
        self.reach = op.get("end", 0) if self.complete else max(
            (offset + 1 for offset in self.at), default=0)
        self.offsets = sorted(self.at)


def _index_finals(finals: dict) -> dict[tuple, _Final]:
    return {key: _Final(op) for key, op in finals.items()}


def _topic_values(indexed: dict, topic: str, isolation: str) -> set | None:
    """Every value of a topic's final reads of one isolation, or None when there are none."""
    found = [final.values for (t, _, iso), final in indexed.items()
             if t == topic and iso == isolation]
    return set().union(*found) if found else None


def _lost_writes(writes, finals, polls, found: _Found) -> None:
    polled = defaultdict(set)                 # (topic, partition) -> values polled
    highest_polled = defaultdict(lambda: -1)  # (topic, partition) -> highest offset polled
    seen = {}        # (topic, value) -> (partition, offset) where a poll returned it
    seen_committed = {}                       # the same, by read_committed polls
    for op in polls:
        for topic, partition, offset, value in op["value"]:
            polled[(topic, partition)].add(value)
            highest_polled[(topic, partition)] = max(highest_polled[(topic, partition)], offset)
            seen[(topic, value)] = (partition, offset)
            if op.get("isolation") == COMMITTED:
                seen_committed[(topic, value)] = (partition, offset)
    indexed = _index_finals(finals)
    topic_values = {}
    for write in writes.values():
        if write.state == "unknown":
            _lost_unknown_write(write, seen_committed if write.transactional else seen,
                                indexed, found)
        if write.state != "acked":
            continue
        isolation = COMMITTED if write.transactional else UNCOMMITTED
        if write.partition is None:
            if (write.topic, isolation) not in topic_values:
                topic_values[(write.topic, isolation)] = _topic_values(indexed, write.topic,
                                                                       isolation)
            in_topic = topic_values[(write.topic, isolation)]
            if in_topic is not None and write.value not in in_topic:
                found.add("lost-write", _write_example(write, "absent from every final read"))
            continue
        key = (write.topic, write.partition)
        final = indexed.get((write.topic, write.partition, isolation))
        if final is not None:
            if write.value not in final.values and (
                    final.complete or write.offset is None or write.offset < final.reach):
                found.add("lost-write", _write_example(
                    write, f"absent from the final read (end {final.reach})"))
        elif (write.offset is not None and write.offset <= highest_polled[key]
              and write.value not in polled[key]):
            found.add("lost-write", _write_example(
                write, f"no poll returned it; polls reached offset {highest_polled[key]}"))


def _lost_unknown_write(write: _Write, seen: dict, indexed: dict, found: _Found) -> None:
    """A write of unknown outcome that a poll returned took effect: it must stay. (A
    transaction that never called commit is not inferred committed: a read_committed poll
    of its record is an uncommitted read, counted as such.)"""
    where = seen.get((write.topic, write.value))
    if where is None or (write.transactional and write.end_time is None):
        return
    partition, offset = where
    isolation = COMMITTED if write.transactional else UNCOMMITTED
    final = indexed.get((write.topic, partition, isolation))
    if final is not None and write.value not in final.values and (
            final.complete or offset < final.reach):
        found.add("lost-write", {**_write_example(write, "outcome unknown, returned by a poll, "
                                                         "absent from the final read"),
                                 "partition": partition, "offset": offset})


def _write_example(write: _Write, why: str) -> dict:
    return {"topic": write.topic, "partition": write.partition, "offset": write.offset,
            "value": write.value, "process": write.op.get("process"), "why": why}


def _reads(polls, finals):
    """Every read record: (op, isolation, topic, partition, offset, value)."""
    for op in polls:
        for topic, partition, offset, value in op["value"]:
            yield op, op.get("isolation", UNCOMMITTED), topic, partition, offset, value
    for (topic, partition, isolation), op in finals.items():
        for offset, value in op["value"]:
            yield op, isolation, topic, partition, offset, value


def _copies(ops, finals) -> tuple[dict, dict]:
    """The copiers' work: input record (topic, partition, offset) -> its copies in the
    read_committed final reads [(output partition, offset, value)], and copier group ->
    {input topic}."""
    source = {}     # (output topic, output value) -> (input topic, partition, offset)
    aborted = set()
    copier_inputs = defaultdict(set)
    for op in ops:
        if op["f"] != "txn":
            continue
        for (topic, _, _, value), (in_topic, in_partition, in_offset, _) in zip(
                op["value"]["writes"], op["value"].get("copies", [])):
            source[(topic, value)] = (in_topic, in_partition, in_offset)
            copier_inputs[op.get("group")].add(in_topic)
            if op["type"] != "invoke" and _txn_state(op) == "failed":
                aborted.add((topic, value))
    for key in aborted:
        del source[key]
    copies = defaultdict(list)
    for (topic, partition, isolation), op in finals.items():
        if isolation != COMMITTED or not source:
            continue
        for offset, value in op["value"]:
            origin = source.get((topic, value))
            if origin is not None:
                copies[origin].append((partition, offset, value))
    return copies, copier_inputs


def _duplicate_copies(copies: dict, found: _Found) -> None:
    for origin, where in sorted(copies.items()):
        if len(where) > 1:
            found.add("duplicate", {"copied": list(origin), "copies": sorted(where)})


def _lost_copies(ops, finals, copies: dict, copier_inputs: dict, found: _Found) -> None:
    for op in ops:
        if op["f"] != "read-offsets" or op["type"] != "ok":
            continue
        if op["topic"] not in copier_inputs.get(op["group"], ()):
            continue
        for partition, committed in op["value"]:
            read = finals.get((op["topic"], partition, COMMITTED))
            if read is None:
                continue
            for offset, value in read["value"]:
                if offset < committed and not copies.get((op["topic"], partition, offset)):
                    found.add("lost-write", {
                        "group": op["group"], "topic": op["topic"], "partition": partition,
                        "offset": offset, "value": value, "committed": committed,
                        "why": "input record below the copier group's committed offset "
                               "without a committed copy"})


def _duplicates(polls, finals, found: _Found) -> None:
    places = defaultdict(set)   # (topic, value) -> {(partition, offset)}
    for _, _, topic, partition, offset, value in _reads(polls, finals):
        places[(topic, value)].add((partition, offset))
    repeated = [(key, where) for key, where in places.items() if len(where) > 1]
    for (topic, value), where in sorted(repeated, key=lambda item: repr(item[0])):
        found.add("duplicate", {"topic": topic, "value": value, "at": sorted(where)})


def _inconsistent_offsets(writes, polls, finals, found: _Found) -> None:
    seen = defaultdict(set)     # (topic, partition, offset) -> {value}
    for write in writes.values():
        if write.partition is not None and write.offset is not None and (
                write.transactional or write.state == "acked"):
            seen[(write.topic, write.partition, write.offset)].add(write.value)
    for _, _, topic, partition, offset, value in _reads(polls, finals):
        seen[(topic, partition, offset)].add(value)
    conflicts = [(key, values) for key, values in seen.items() if len(values) > 1]
    for (topic, partition, offset), values in sorted(conflicts, key=lambda item: item[0]):
        found.add("inconsistent-offsets", {"topic": topic, "partition": partition,
                                           "offset": offset, "values": sorted(values, key=repr)})


def _poll_order(polls, finals, found: _Found) -> None:
    last = {}   # (process, epoch, topic, partition) -> (offset, value, poll index)
    indexed = _index_finals(finals)
    for op in polls:
        isolation = op.get("isolation", UNCOMMITTED)
        for topic, partition, offset, value in op["value"]:
            key = (op["process"], op.get("epoch", 0), topic, partition)
            before = last.get(key)
            last[key] = (offset, value, op["index"])
            if before is None:
                continue
            prior, prior_value, prior_index = before
            pair = {"process": op["process"], "epoch": op.get("epoch", 0), "topic": topic,
                    "partition": partition, "offsets": [prior, offset],
                    "values": [prior_value, value], "polls": [prior_index, op["index"]]}
            if offset <= prior:
                found.add("nonmonotonic-poll", pair)
                continue
            final = indexed.get((topic, partition, isolation))
            if final is None:
                continue
            visible = final.offsets
            skipped = visible[bisect_right(visible, prior):bisect_left(visible, offset)]
            if skipped:
                found.add("poll-skip", {**pair, "skipped": skipped[:10]})


def _aborted_and_uncommitted_reads(writes, polls, finals, found: _Found) -> None:
    for op, isolation, topic, partition, offset, value in _reads(polls, finals):
        write = writes.get((topic, value))
        if write is None:
            continue
        where = {"topic": topic, "partition": partition, "offset": offset, "value": value,
                 "reader": op.get("process"), "read_index": op["index"],
                 "isolation": isolation, "writer": write.op.get("process")}
        if write.state == "failed" and (isolation == COMMITTED or not write.transactional):
            found.add("aborted-read", where)
        elif (write.transactional and isolation == COMMITTED and op["f"] == "poll"
              and write.state != "failed"
              and (write.end_time is None or op["time"] < write.end_time)):
            found.add("uncommitted-read", {**where, "read_time": op["time"],
                                           "end_time": write.end_time})


def _commits_backwards(ops, found: _Found) -> None:
    invoke_time = {op["index"]: op["time"] for op in ops if op["type"] == "invoke"}
    commits = defaultdict(list)   # (group, topic, partition) -> [(invoked, completed, offset, op)]
    for op in ops:
        if op["type"] != "ok":
            continue
        if op["f"] == "commit":
            offsets = op["value"]
        elif op["f"] == "txn" and op["value"].get("intent") == "commit":
            offsets = op["value"].get("offsets", [])
        else:
            continue
        invoked = invoke_time.get(op.get("invoke_index"), op["time"])
        for topic, partition, offset in offsets:
            commits[(op.get("group"), topic, partition)].append(
                (invoked, op["time"], offset, op))
    # The group's committed offsets read at the end are one more (the last) observation.
    for op in ops:
        if op["f"] == "read-offsets" and op["type"] == "ok":
            for partition, offset in op["value"]:
                key = (op["group"], op["topic"], partition)
                if key in commits:
                    commits[key].append((op["time"], op["time"], offset, op))
    for (group, topic, partition), entries in sorted(commits.items(), key=repr):
        by_completion = sorted(entries, key=lambda entry: entry[1])
        done = 0
        highest = None   # (offset, op) of the highest commit completed so far
        for invoked, _, offset, op in sorted(entries, key=lambda entry: entry[0]):
            while done < len(by_completion) and by_completion[done][1] < invoked:
                entry = by_completion[done]
                if highest is None or entry[2] > highest[0]:
                    highest = (entry[2], entry[3])
                done += 1
            if highest is not None and offset < highest[0]:
                found.add("commit-backwards", {
                    "group": group, "topic": topic, "partition": partition,
                    "offsets": [highest[0], offset],
                    "processes": [highest[1].get("process"), op.get("process")]})


def _divergent_replicas(replica_logs: dict, finals, found: _Found) -> None:
    for (topic, partition), replicas in sorted(replica_logs.items(), key=repr):
        at = defaultdict(dict)     # offset -> {broker: value}
        for broker, records in replicas.items():
            for offset, value in records:
                at[offset][broker] = value
        read = finals.get((topic, partition, UNCOMMITTED))
        final = _Final(read).at if read is not None else {}
        reach = _Final(read).reach if read is not None else 0
        for offset in sorted(at):
            values = set(at[offset].values())
            if offset < reach and offset in final:
                values.add(final[offset])
            if len(values) > 1:
                found.add("divergent-replicas", {
                    "topic": topic, "partition": partition, "offset": offset,
                    "replicas": {str(b): v for b, v in sorted(at[offset].items())},
                    "final": final.get(offset)})


def _longest_unavailability(ops) -> dict[str, float]:
    work = [op for op in ops if op["f"] in ("send", "poll", "commit", "txn")]
    if not work:
        return {}
    start = min(op["time"] for op in work)
    end = max(op["time"] for op in work)
    longest = {}
    for f in sorted({op["f"] for op in work}):
        times = sorted(op["time"] for op in work if op["f"] == f and _succeeded(op))
        marks = [start, *times, end]
        longest[f] = round(max(b - a for a, b in zip(marks, marks[1:])), 3)
    return longest


def _succeeded(op: dict) -> bool:
    if op["type"] != "ok":
        return False
    if op["f"] == "poll":
        return bool(op["value"])
    if op["f"] == "txn":
        return op["value"].get("intent") == "commit"
    return True


def _notes(ops, finals) -> list[str]:
    notes = []
    incomplete = sorted(f"{t}/{p} {i}" for (t, p, i), op in finals.items() if op["type"] != "ok")
    if incomplete:
        notes.append("final reads that did not reach the end: " + ", ".join(incomplete))
    # A transaction left open holds the last stable offset back: committed records past it
    # are not readable at read_committed (and count as lost when acknowledged).
    for (topic, partition, isolation), op in sorted(finals.items()):
        other = finals.get((topic, partition, UNCOMMITTED))
        if (isolation == COMMITTED and other is not None and op["type"] == "ok"
                and op.get("end", 0) < other.get("end", 0)
                and any(offset >= op.get("end", 0) for offset, _ in other["value"])):
            notes.append(f"{topic}/{partition}: last stable offset {op.get('end')} below the "
                         f"high watermark {other.get('end')} after healing (an open "
                         f"transaction)")
    return notes
