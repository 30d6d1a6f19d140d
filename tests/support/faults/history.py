"""The record of every client operation of a fault run, and its JSON-lines file.

An operation (op) is a plain dict with at least:

- ``process`` (str): the client that ran it, e.g. ``"producer-0"``, ``"consumer-1"``;
- ``type``: ``"invoke"`` (the call began), ``"ok"`` (it took effect), ``"fail"`` (it
  definitely did not), ``"info"`` (unknown: it may or may not have taken effect, e.g. a
  timeout);
- ``f``: ``"send"``, ``"poll"``, ``"commit"``, ``"txn"``, ``"read-final"`` or
  ``"read-offsets"``;
- ``value``: what ``f`` carries (below);
- ``time``: ``time.monotonic()`` seconds when it was recorded;
- ``index``: its position in the history (set by ``append``).

A completion (``ok``/``fail``/``info``) repeats the ``process`` and ``f`` of its invocation
and carries ``invoke_index``, the index of that invocation. The f-specific fields:

- send: ``topic``; ``value`` the unique string written (``"<process>-<seq>"``); an ok
  completion adds ``partition`` and ``offset``; fail/info add ``error``.
- poll: no invocation is recorded, and a poll that returned nothing is not recorded; an ok
  completion has ``value`` = ``[[topic, partition, offset, value], ...]`` in the order the
  consumer returned them, ``group``, ``isolation`` (``"read_committed"`` or
  ``"read_uncommitted"``) and ``epoch``, the consumer's position epoch (incremented by every
  assignment the group gives it and every seek the consumer makes: within one epoch its
  positions only move forward).
- commit: ``group``; ``value`` = ``[[topic, partition, offset], ...]`` (the next offset to
  consume, as Kafka stores it); fail/info add ``error``.
- txn: ``value`` = ``{"writes": [[topic, partition, offset, value], ...], "offsets":
  [[topic, partition, offset], ...], "intent": "commit" | "abort"}``, and for a copy
  ``"copies": [[topic, partition, offset, value], ...]``, the input record each write copies
  (same order as ``writes``); ``group`` (whose offsets the transaction commits). ``ok``
  means the intended commit or abort returned; ``fail`` means the transaction definitely
  ended aborted; ``info`` means its outcome is unknown. Writes whose delivery was never
  confirmed carry offset ``None``.
- read-final: one ok (or info, when it did not reach the end in time) per topic, partition and
  isolation after the faults healed: ``topic``, ``partition``, ``isolation``, ``end`` (the
  high watermark, or last stable offset for read_committed, the read went to), ``value`` =
  ``[[offset, value], ...]``.
- read-offsets: after the final reads of a topic, one per group that committed offsets on it
  (ok, or fail when the coordinator did not answer in time): ``topic``, ``group``, ``value``
  = ``[[partition, offset], ...]``, the group's committed offsets.

The file format (``dump``/``load``) is one JSON object per line, in history order.
"""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path

OP_TYPES = ("invoke", "ok", "fail", "info")
FS = ("send", "poll", "commit", "txn", "read-final", "read-offsets")


class History:
    """An append-only, thread-safe list of ops."""

    def __init__(self, ops: list[dict] | None = None) -> None:
        self._lock = threading.Lock()
        self._ops: list[dict] = []
        for op in ops or []:
            self.append(op)

    def append(self, op: dict) -> dict:
        """Add ``op`` (stamping ``time`` when missing, and ``index``); return it."""
        if op.get("type") not in OP_TYPES:
            raise ValueError(f"op type must be one of {OP_TYPES}: {op!r}")
        with self._lock:
            op.setdefault("time", time.monotonic())
            op["index"] = len(self._ops)
            self._ops.append(op)
        return op

    def invoke(self, process: str, f: str, value=None, **fields) -> dict:
        """Record the start of an operation."""
        return self.append({"process": process, "type": "invoke", "f": f, "value": value,
                            **fields})

    def complete(self, invocation: dict, type: str, value=None, **fields) -> dict:
        """Record the outcome of ``invocation``: its fields, then ``value`` (the invocation's
        when None) and ``fields``."""
        op = {key: val for key, val in invocation.items() if key not in ("index", "time")}
        op.update(type=type, invoke_index=invocation["index"], **fields)
        if value is not None:
            op["value"] = value
        return self.append(op)

    def record(self, process: str, type: str, f: str, value=None, **fields) -> dict:
        """Record a completion without an invocation (polls, final reads)."""
        return self.append({"process": process, "type": type, "f": f, "value": value, **fields})

    @property
    def ops(self) -> list[dict]:
        """A snapshot of the ops, in order."""
        with self._lock:
            return list(self._ops)

    def __len__(self) -> int:
        with self._lock:
            return len(self._ops)

    def dump(self, path) -> None:
        """Write the history as JSON lines."""
        with open(Path(path), "w", encoding="utf-8") as out:
            for op in self.ops:
                out.write(json.dumps(op, separators=(",", ":")) + "\n")

    @classmethod
    def load(cls, path) -> "History":
        """Read a history written by ``dump`` (indexes are kept as written)."""
        history = cls()
        with open(Path(path), encoding="utf-8") as source:
            for line in source:
                if line.strip():
                    op = json.loads(line)
                    history._ops.append(op)
        return history
