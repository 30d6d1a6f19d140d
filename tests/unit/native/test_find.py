"""find_timestamp: the first record at or after a timestamp, C and Python walks alike."""
from __future__ import annotations

import random

import pytest

from kafkapy.native import find_timestamp, reference
from kafkapy.native._batchcheck import find_at_or_after
from tests.support.batchcheck_craft import GZIP, LZ4, NONE, TS, plain, record

def _batch(timestamps: list[int], codec: int) -> bytes:
    raw = b"".join(record(i, ts - TS, b"k", b"v") for i, ts in enumerate(timestamps))
    return plain(raw, len(timestamps), codec, max_ts=max(timestamps), base_offset=100)


@pytest.mark.parametrize("codec", [NONE, GZIP, LZ4])
def test_first_record_at_or_after(codec):
    stamps = [TS + 5, TS + 1, TS + 9, TS + 9, TS + 3]
    batch = _batch(stamps, codec)
    assert find_timestamp(batch, TS) == (100, TS + 5)
    assert find_timestamp(batch, TS + 6) == (102, TS + 9)
    assert find_timestamp(batch, TS + 9) == (102, TS + 9)
    assert find_timestamp(batch, TS + 10) is None


def test_c_and_python_agree_on_random_and_damaged_records():
    rng = random.Random(7)
    for _ in range(300):
        n = rng.randint(1, 30)
        raw = bytearray(b"".join(record(i, rng.randint(-5, 50), b"k", b"v") for i in range(n)))
        if rng.random() < 0.3 and raw:
            raw[rng.randrange(len(raw))] = rng.randrange(256)
        target = TS + rng.randint(-5, 55)
        args = (bytes(raw), n, TS, False, TS + 50, target)
        assert find_at_or_after(*args) == reference.find_at_or_after(*args)
