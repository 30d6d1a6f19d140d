"""A shared, writable memory mapping of a file that keeps no file descriptor open.

Python's ``mmap.mmap`` duplicates the descriptor it is given and holds the copy until the
mapping is closed (``trackfd=False`` only exists from Python 3.13), so every mapped index
cost the broker a descriptor.  Kafka's indexes cost none once mapped: the kernel keeps the
mapping alive without one.  This maps with libc's ``mmap`` and closes the descriptor at once.

Invariants:
- ``view`` is a writable ``memoryview`` (format ``B``) over exactly ``length`` bytes;
  writes go to the page cache like any shared mapping, ``flush()`` is ``msync``.
- After ``close()`` the memory is unmapped and ``view`` is released; a holder of an older
  slice of ``view`` must not touch it (the index classes keep no slices beyond a call).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long)
_libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
_libc.msync.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
_MAP_FAILED = ctypes.c_void_p(-1).value
_MS_SYNC = 4


class FileMapping:
    """``length`` bytes of the file at ``path`` mapped shared and read-write."""

    __slots__ = ("_addr", "_length", "view")

    def __init__(self, path: str, length: int) -> None:
        fd = os.open(path, os.O_RDWR)
        try:
            addr = _libc.mmap(None, length, mmap.PROT_READ | mmap.PROT_WRITE,
                              mmap.MAP_SHARED, fd, 0)
        finally:
            os.close(fd)
        if addr in (None, _MAP_FAILED):
            err = ctypes.get_errno()
            raise OSError(err, f"mmap of {path}: {os.strerror(err)}")
        self._addr = addr
        self._length = length
        self.view = memoryview((ctypes.c_ubyte * length).from_address(addr)).cast("B")

    def flush(self) -> None:
        if self._addr is not None:
            _libc.msync(self._addr, self._length, _MS_SYNC)

    def close(self) -> None:
        if self._addr is None:
            return
        self.view.release()
        _libc.munmap(self._addr, self._length)
        self._addr = None
