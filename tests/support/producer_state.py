"""Producer-state test data: a producer id, a timestamp and batches as the log appends them."""
from __future__ import annotations

from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkapy.records.batch import validate_for_append


TS = 1_700_000_000_000


PID = 4242


def batch(seq, n=3, epoch=0, pid=PID, ts=TS):
    b = DefaultRecordBatchBuilder(2, 0, False, pid, epoch, seq, 1 << 20)
    for i in range(n):
        b.append(i, timestamp=ts + i, key=None, value=b"v%d" % i, headers=[])
    buf = bytearray(b.build())
    [h] = validate_for_append(buf, 1 << 20, 9)
    return buf, h
