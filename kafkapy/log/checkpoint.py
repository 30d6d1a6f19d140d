"""Kafka's text checkpoint files, written atomically.

Format (UTF-8, ``\\n`` line ends)::

    <version>            always 0 here
    <number of entries>
    <entry>              one per line, fields separated by one space

Offset checkpoints (``recovery-point-offset-checkpoint``,
``replication-offset-checkpoint``, ``log-start-offset-checkpoint``,
``cleaner-offset-checkpoint``) have ``<topic> <partition> <offset>`` entries;
``leader-epoch-checkpoint`` (per partition dir) has ``<epoch> <start offset>``.

Writes go to ``<name>.tmp``, which is fsynced, renamed over the original, and
the directory fsynced.  Writes of one path are serialized (a lock per path): a file
may be written from the event loop and from threads (the flusher, cleaner threads),
and two writers sharing the ``.tmp`` name would rename a half-written file into place
or find it gone.  A missing or empty file reads as no entries; a
malformed one (unknown version, bad line, wrong count) raises
``CheckpointError`` naming the file and the problem.
"""
from __future__ import annotations

import os
import threading
import weakref

from kafkapy.protocol.topic_partition import TopicPartition

CURRENT_VERSION = 0

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"


class CheckpointError(Exception):
    """A checkpoint file is malformed."""


def fsync_dir(dir_path: str) -> None:
    try:
        fd = os.open(dir_path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# One lock per path while anyone holds it (weak values: the locks of snapshot paths,
# which are many, go with their last user).
_PATH_LOCKS: weakref.WeakValueDictionary[str, threading.Lock] = weakref.WeakValueDictionary()
_PATH_LOCKS_GUARD = threading.Lock()


def _path_lock(path: str) -> threading.Lock:
    with _PATH_LOCKS_GUARD:
        lock = _PATH_LOCKS.get(path)
        if lock is None:
            lock = _PATH_LOCKS[path] = threading.Lock()
        return lock


def atomic_write(path: str, data: bytes, fsync: bool = True) -> None:
    """Write ``data`` to ``path`` via ``path.tmp`` + fsync + rename + dir fsync
    (one writer of a path at a time)."""
    path = os.path.abspath(path)
    with _path_lock(path):
        _atomic_write(path, data, fsync)


def _atomic_write(path: str, data: bytes, fsync: bool) -> None:
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if fsync:
        fsync_dir(os.path.dirname(os.path.abspath(path)))


def _read_lines(path: str, fields: int) -> list[list[str]]:
    try:
        with open(path, "r", encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return []
    except UnicodeDecodeError as err:
        raise CheckpointError(f"malformed checkpoint {path}: not UTF-8 text ({err.reason} "
                              f"at byte {err.start})") from None
    if not text.strip():
        return []
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    try:
        version = int(lines[0].strip())
    except ValueError:
        raise CheckpointError(f"malformed checkpoint {path}: bad version line {lines[0]!r}")
    if version != CURRENT_VERSION:
        raise CheckpointError(f"unrecognised version {version} in checkpoint {path}")
    if len(lines) < 2:
        raise CheckpointError(f"malformed checkpoint {path}: missing entry count")
    try:
        count = int(lines[1].strip())
    except ValueError:
        raise CheckpointError(f"malformed checkpoint {path}: bad count line {lines[1]!r}")
    entries = []
    for n, line in enumerate(lines[2:], start=3):
        parts = line.split()
        if len(parts) != fields:
            raise CheckpointError(f"malformed checkpoint {path} line {n}: {line!r}")
        entries.append(parts)
    if len(entries) != count:
        raise CheckpointError(
            f"malformed checkpoint {path}: expected {count} entries, found {len(entries)}")
    return entries


def _to_int(path: str, s: str) -> int:
    try:
        return int(s)
    except ValueError:
        raise CheckpointError(f"malformed checkpoint {path}: {s!r} is not an integer")


def _write_lines(path: str, lines: list[str], fsync: bool = True) -> None:
    body = f"{CURRENT_VERSION}\n{len(lines)}\n" + "".join(line + "\n" for line in lines)
    atomic_write(path, body.encode("utf-8"), fsync)


def read_offset_checkpoint(path: str) -> dict[TopicPartition, int]:
    """``{(topic, partition): offset}``; {} for a missing or empty file."""
    out: dict[TopicPartition, int] = {}
    for topic, part, off in _read_lines(path, 3):
        out[(topic, _to_int(path, part))] = _to_int(path, off)
    return out


def write_offset_checkpoint(path: str, offsets: dict[TopicPartition, int],
                            fsync: bool = True) -> None:
    lines = [f"{t} {p} {o}" for (t, p), o in sorted(offsets.items())]
    _write_lines(path, lines, fsync)


def read_leader_epoch_checkpoint(path: str) -> list[tuple[int, int]]:
    """``[(epoch, start_offset), ...]`` in file order; [] for a missing file."""
    return [(_to_int(path, e), _to_int(path, o)) for e, o in _read_lines(path, 2)]


def write_leader_epoch_checkpoint(path: str, entries: list[tuple[int, int]],
                                  fsync: bool = True) -> None:
    _write_lines(path, [f"{e} {o}" for e, o in entries], fsync)
