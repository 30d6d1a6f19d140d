"""Completing or rolling back an interrupted segment replacement at load (Kafka's LogLoader).

The cleaner replaces segments in three renames (see ``cleaner.replace_segments``):
``<base>.{log,index,timeindex,txnindex}.cleaned`` -> ``.swap`` (log file
first), the old segments -> ``.deleted``, then ``.swap`` -> final names.  A
crash may stop it anywhere; at the next load, before segments are opened:

1. ``.cleaned`` files are deleted, and so is every ``.swap`` file whose base
   offset is >= the smallest ``.cleaned`` base offset (the swap was only
   half done: roll back; the old segments are still intact);
2. for the remaining ``.swap`` log files, [min base offset, max next offset)
   is computed (next offset = one past the last whole batch in the file);
   segment files (not ``.swap``) with a base offset in that range are the
   replaced segments whose rename to ``.deleted`` had not happened: deleted;
3. every remaining ``.swap`` file is renamed to its final name (roll forward).

``.deleted`` files are removed by the caller afterwards, as before.
"""
from __future__ import annotations

import os
import struct

CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
_SEGMENT_EXTS = (".log", ".index", ".timeindex", ".txnindex")
_LEN = struct.Struct(">qi")


def _offset_of(name: str) -> int | None:
    stem = name.split(".", 1)[0]
    return int(stem) if stem.isdigit() else None


def read_next_offset(path: str) -> int | None:
    """One past the last offset of the whole v2 batches in a .log file (None if none)."""
    nxt = None
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        pos = 0
        while pos + 61 <= size:
            f.seek(pos)
            head = f.read(61)
            if len(head) < 61:
                break
            base, length = _LEN.unpack_from(head, 0)
            if length < 49 or pos + 12 + length > size:
                break
            last_delta = struct.unpack_from(">i", head, 23)[0]
            nxt = base + last_delta + 1
            pos += 12 + length
    return nxt


def recover_swap_files(dir_path: str) -> list[str]:
    """Apply Kafka's three passes to ``dir_path``; returns the names renamed from .swap."""
    names = os.listdir(dir_path)
    swaps: list[str] = []
    cleaned: list[str] = []
    min_cleaned = None
    for name in names:
        off = _offset_of(name)
        if name.endswith(CLEANED_SUFFIX):
            cleaned.append(name)
            if off is not None:
                min_cleaned = off if min_cleaned is None else min(min_cleaned, off)
        elif name.endswith(SWAP_SUFFIX):
            swaps.append(name)
    valid = []
    for name in swaps:
        off = _offset_of(name)
        if off is None or (min_cleaned is not None and off >= min_cleaned):
            _unlink(os.path.join(dir_path, name))
        else:
            valid.append(name)
    for name in cleaned:
        _unlink(os.path.join(dir_path, name))
    if not valid:
        return []
    lo = hi = None
    for name in valid:
        if not name[:-len(SWAP_SUFFIX)].endswith(".log"):
            continue
        base = _offset_of(name)
        nxt = read_next_offset(os.path.join(dir_path, name))
        nxt = base if nxt is None else nxt
        lo = base if lo is None else min(lo, base)
        hi = nxt if hi is None else max(hi, nxt)
    if lo is not None:
        for name in os.listdir(dir_path):
            if name.endswith(SWAP_SUFFIX) or not name.endswith(_SEGMENT_EXTS):
                continue
            off = _offset_of(name)
            if off is not None and lo <= off < hi:
                _unlink(os.path.join(dir_path, name))
    renamed = []
    for name in valid:
        final = name[:-len(SWAP_SUFFIX)]
        os.replace(os.path.join(dir_path, name), os.path.join(dir_path, final))
        renamed.append(final)
    return renamed


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
