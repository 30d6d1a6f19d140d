"""The bytes a connection has read and not yet cut into frames (int32 size, then that many
bytes): what the broker's connections and the inter-broker client both keep.

Frames are cut as views of the reads (bytes never change), not copies; a frame cut by the
end of a read waits as the reads' pieces, joined once when it is whole.
"""
from __future__ import annotations


class Reads:
    """The reads not yet cut into frames.  ``wanted``: the bytes they need before the next
    frame is whole (0: cut at once, e.g. after a stop for a bound)."""

    __slots__ = ("pieces", "_have", "wanted")

    def __init__(self) -> None:
        self.pieces: list = []
        self._have = 0
        self.wanted = 4

    def __bool__(self) -> bool:
        return bool(self.pieces)

    def add(self, data: bytes) -> bool:
        """Keep one read; True when there is enough to cut the next frame."""
        self.pieces.append(data)
        self._have += len(data)
        return self._have >= self.wanted

    def joined(self) -> memoryview:
        """All the bytes kept, as one view (the pieces are joined once, and stay so)."""
        pieces = self.pieces
        if len(pieces) > 1:
            pieces[:] = [b"".join(pieces)]
        return memoryview(pieces[0])

    def keep(self, view: memoryview, consumed: int, wanted: int) -> None:
        """Keep what follows the frames cut from ``view`` (``joined``); the next frame
        needs ``wanted`` bytes of it."""
        rest = rest_of(view, consumed)
        self.pieces = [rest] if rest else []
        self._have = len(rest)
        self.wanted = wanted


def rest_of(view: memoryview, consumed: int):
    """What follows the frames cut from ``view``: a view of it, or a copy when it is the
    smaller part (a view would keep the whole read alive while the next frame arrives)."""
    rest = view[consumed:]
    return bytes(rest) if 2 * len(rest) < len(view) else rest
