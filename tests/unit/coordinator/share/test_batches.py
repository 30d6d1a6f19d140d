"""Combining state batches as Kafka's PersisterStateBatchCombiner does: the start offset
prunes, same-state neighbours merge, overlaps go to the higher (delivery count, delivery
state), whatever the order of the writes."""
from __future__ import annotations

import pytest

from kafkapy.coordinator.share.batches import combine
from kafkapy.coordinator.share.persister import StateBatch


def b(first: int, last: int, state: int, count: int) -> StateBatch:
    return StateBatch(first, last, state, count)


CASES = {
    # pruning by the start offset
    "stored batch cut at the start offset": ([b(100, 130, 0, 1)], [], 120, [b(120, 130, 0, 1)]),
    "new batch cut at the start offset": ([], [b(100, 130, 0, 1)], 120, [b(120, 130, 0, 1)]),
    "batches below the start offset dropped": ([b(1, 5, 2, 1)], [b(6, 9, 0, 1)], 10, []),
    "nothing at all": ([], [], 120, []),
    "no start offset keeps everything": ([b(1, 5, 2, 1)], [], -1, [b(1, 5, 2, 1)]),
    # same delivery state and count: one batch spanning both
    "same range": ([b(100, 110, 0, 1)], [b(100, 110, 0, 1)], -1, [b(100, 110, 0, 1)]),
    "same start, shorter": ([b(100, 110, 0, 1)], [b(100, 105, 0, 1)], -1, [b(100, 110, 0, 1)]),
    "same start, longer": ([b(100, 110, 0, 1)], [b(100, 115, 0, 1)], -1, [b(100, 115, 0, 1)]),
    "inside": ([b(100, 110, 0, 1)], [b(105, 108, 0, 1)], -1, [b(100, 110, 0, 1)]),
    "overlapping tail": ([b(100, 110, 0, 1)], [b(105, 115, 0, 1)], -1, [b(100, 115, 0, 1)]),
    "contiguous": ([b(100, 110, 0, 1)], [b(111, 115, 0, 1)], -1, [b(100, 115, 0, 1)]),
    "contiguous but different state stay apart": (
        [b(100, 110, 0, 1)], [b(111, 115, 2, 1)], -1, [b(100, 110, 0, 1), b(111, 115, 2, 1)]),
    # different count or state: the higher one keeps the shared offsets
    "same range, higher count wins": ([b(100, 110, 0, 1)], [b(100, 110, 0, 2)], -1,
                                      [b(100, 110, 0, 2)]),
    "same range, a lower count written later loses": ([b(100, 110, 0, 3)], [b(100, 110, 0, 1)],
                                                      -1, [b(100, 110, 0, 3)]),
    "same start, shorter and higher": ([b(100, 110, 0, 1)], [b(100, 105, 0, 2)], -1,
                                       [b(100, 105, 0, 2), b(106, 110, 0, 1)]),
    "same start, shorter and lower": ([b(100, 110, 0, 3)], [b(100, 105, 0, 1)], -1,
                                      [b(100, 110, 0, 3)]),
    "same start, longer and lower": ([b(100, 110, 0, 3)], [b(100, 115, 0, 1)], -1,
                                     [b(100, 110, 0, 3), b(111, 115, 0, 1)]),
    "inside and higher splits the stored batch": (
        [b(100, 115, 0, 1)], [b(105, 110, 2, 1)], -1,
        [b(100, 104, 0, 1), b(105, 110, 2, 1), b(111, 115, 0, 1)]),
    "inside and lower disappears": ([b(100, 115, 2, 1)], [b(105, 110, 0, 1)], -1,
                                    [b(100, 115, 2, 1)]),
    "same end, higher": ([b(100, 110, 0, 1)], [b(105, 110, 0, 2)], -1,
                         [b(100, 104, 0, 1), b(105, 110, 0, 2)]),
    "tail, lower keeps only its own part": ([b(100, 110, 0, 2)], [b(105, 115, 0, 1)], -1,
                                            [b(100, 110, 0, 2), b(111, 115, 0, 1)]),
    "count beats state": ([b(100, 110, 4, 1)], [b(100, 110, 0, 2)], -1, [b(100, 110, 0, 2)]),
    # several batches at once
    "overlapping new batches with the same state merge among themselves": (
        [b(100, 110, 0, 1), b(121, 130, 0, 1)], [b(111, 119, 2, 2), b(116, 123, 2, 2)], -1,
        [b(100, 110, 0, 1), b(111, 123, 2, 2), b(124, 130, 0, 1)]),
    "the highest of several overlapping new batches": (
        [b(100, 110, 0, 1)], [b(101, 105, 1, 2), b(101, 115, 2, 2), b(101, 120, 3, 2)], -1,
        [b(100, 100, 0, 1), b(101, 120, 3, 2)]),
    "pruning and merging together": (
        [b(100, 110, 0, 1), b(121, 130, 0, 1)], [b(111, 119, 2, 2), b(116, 123, 2, 2)], 120,
        [b(120, 123, 2, 2), b(124, 130, 0, 1)]),
    # already combined, or nearly
    "a combined list stays as it is": (
        [], [b(100, 104, 2, 1), b(105, 109, 0, 1), b(110, 110, 4, 2)], -1,
        [b(100, 104, 2, 1), b(105, 109, 0, 1), b(110, 110, 4, 2)]),
    "disjoint batches out of order are sorted": (
        [b(200, 210, 0, 1)], [b(100, 110, 2, 1)], -1, [b(100, 110, 2, 1), b(200, 210, 0, 1)]),
    "duplicates collapse": ([b(100, 110, 2, 1)], [b(100, 110, 2, 1)], 105,
                            [b(105, 110, 2, 1)]),
    "several small updates over one stored batch": (
        [b(111, 120, 0, 1)], [b(111, 113, 0, 2), b(114, 114, 2, 1), b(115, 119, 0, 2)], -1,
        [b(111, 113, 0, 2), b(114, 114, 2, 1), b(115, 119, 0, 2), b(120, 120, 0, 1)]),
}


@pytest.mark.parametrize("so_far,new,start,expected", CASES.values(), ids=CASES.keys())
def test_combined_as_kafka_combines(so_far, new, start, expected):
    assert combine(so_far, new, start) == expected


@pytest.mark.parametrize("so_far,new,start,expected", CASES.values(), ids=CASES.keys())
def test_the_answer_is_sorted_and_disjoint(so_far, new, start, expected):
    out = combine(so_far, new, start)
    assert all(a.last_offset < c.first_offset for a, c in zip(out, out[1:]))
    assert all(x.first_offset <= x.last_offset for x in out)
