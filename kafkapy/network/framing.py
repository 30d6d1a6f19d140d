"""What the broker's connections and the inter-broker client share in cutting frames
(int32 size, then that many bytes) from the bytes they read.

Frames are views of the reads (bytes never change), not copies; a frame cut by the end of
a read waits as the reads' pieces and is joined once when whole.
"""
from __future__ import annotations


def rest_of(view: memoryview, consumed: int):
    """What follows the frames cut from ``view``: a view of it, or a copy when it is the
    smaller part (a view would keep the whole read alive while the next frame arrives)."""
    rest = view[consumed:]
    return bytes(rest) if 2 * len(rest) < len(view) else rest
