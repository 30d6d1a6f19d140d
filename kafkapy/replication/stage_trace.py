"""Per-stage timestamps of replication, for the benchmark's stage breakdown.

Off unless the environment variable ``KAFKAPY_STAGE_TRACE`` names a directory when the
module is imported; then each broker process writes ``<dir>/stages-<pid>.tsv``, one
event a line, tab-separated: kind, topic, partition, then integers.  Times are
``time.monotonic_ns()`` (CLOCK_MONOTONIC, one clock for every process of the machine,
so the brokers' files can be joined).  Kinds and their integer fields:

- ``Q``  leader took a Produce request for the partition: ns (when its frame was taken);
- ``A``  leader appended a batch: end offset (last offset + 1), start ns, end ns;
- ``R``  leader read records for a follower: replica id, fetch offset, log end read to, ns;
- ``F``  leader got a follower's fetch: replica id, fetch offset, ns;
- ``H``  leader's high watermark moved: new high watermark, ns;
- ``P``  an acks=all produce was answered: required offset, ns;
- ``S``  follower sent a fetch: own id, fetch offset, ns;
- ``X``  follower applied an answer with records: own id, log end after, received ns,
  appended ns.

``ENABLED`` is a module constant: with tracing off each hook is one global test.
Lines are buffered and appended to the file about once a second (at the first event
after a second has passed; an idle follower still fetches every
replica.fetch.wait.max.ms) and at exit.
"""
from __future__ import annotations

import atexit
import os
import time

_DIR = os.environ.get("KAFKAPY_STAGE_TRACE") or ""
ENABLED = bool(_DIR)
now = time.monotonic_ns
_lines: list[str] = []
_FLUSH_NS = 1_000_000_000
_flushed = [0]


def event(kind: str, topic: str, partition: int, *values: int) -> None:
    """Record one event (callers test ``ENABLED`` first)."""
    _lines.append("\t".join((kind, topic, str(partition), *map(str, values))))
    if now() - _flushed[0] >= _FLUSH_NS:
        flush()


def flush() -> None:
    _flushed[0] = now()
    if not _lines:
        return
    path = os.path.join(_DIR, f"stages-{os.getpid()}.tsv")
    with open(path, "a", encoding="utf-8") as out:
        out.write("\n".join(_lines) + "\n")
    _lines.clear()


if ENABLED:
    os.makedirs(_DIR, exist_ok=True)
    atexit.register(flush)
