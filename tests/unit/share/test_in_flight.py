"""InFlightRuns: contiguous runs split, merged, trimmed and advanced."""
from __future__ import annotations

import pytest

from kafkapy.share.in_flight import InFlightRuns, RecordState, Run

AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED = (RecordState.AVAILABLE, RecordState.ACQUIRED,
                                               RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


def spans(runs: InFlightRuns) -> list[tuple[int, int, RecordState]]:
    return [(run.first, run.last, run.state) for run in runs]


def test_append_keeps_runs_contiguous_from_the_start():
    runs = InFlightRuns(10)
    assert (runs.end, runs.next_new_offset) == (10, 10)
    runs.append(Run(10, 14, ACQUIRED, 1))
    assert (runs.end, runs.next_new_offset) == (14, 15)
    with pytest.raises(ValueError):
        runs.append(Run(16, 20, ACQUIRED, 1))


def test_carve_splits_runs_to_the_exact_range_and_clips_it():
    runs = InFlightRuns(0)
    runs.append(Run(0, 9, ACQUIRED, 1, "m"))
    parts = runs.carve(3, 5)
    assert [(p.first, p.last) for p in parts] == [(3, 5)]
    for part in parts:
        part.state = ACKNOWLEDGED
    assert spans(runs) == [(0, 2, ACQUIRED), (3, 5, ACKNOWLEDGED), (6, 9, ACQUIRED)]
    assert [(p.first, p.last) for p in runs.carve(-5, 4)] == [(0, 2), (3, 4)]
    assert runs.carve(20, 30) == []
    assert runs.run_at(8).first == 6


def test_coalesce_merges_only_equal_neighbours():
    runs = InFlightRuns(0)
    runs.append(Run(0, 9, ACQUIRED, 1, "m", deadline=5))
    for part in runs.carve(3, 5):
        part.deadline = 6
    runs.coalesce()
    assert len(runs) == 3
    for part in runs.carve(3, 5):
        part.deadline = 5
    runs.coalesce()
    assert spans(runs) == [(0, 9, ACQUIRED)]


def test_advance_start_passes_complete_runs_but_not_pending_dead_letters():
    runs = InFlightRuns(0)
    runs.append(Run(0, 2, ACKNOWLEDGED, 1))
    runs.append(Run(3, 4, ARCHIVED, 2, dead_letter="rejected"))
    runs.append(Run(5, 6, ARCHIVED, 1))
    assert runs.advance_start()
    assert runs.start == 3 and spans(runs)[0] == (3, 4, ARCHIVED)
    runs.run_at(3).dead_letter = None
    runs.advance_start()
    assert (runs.start, len(runs), runs.end) == (7, 0, 7)
    assert not runs.advance_start()


def test_trim_below_forgets_offsets_and_may_pass_the_end():
    runs = InFlightRuns(0)
    runs.append(Run(0, 9, ACQUIRED, 1))
    runs.trim_below(4)
    assert runs.start == 4 and spans(runs) == [(4, 9, ACQUIRED)]
    runs.trim_below(2)
    assert runs.start == 4
    runs.trim_below(30)
    assert (runs.start, len(runs), runs.next_new_offset) == (30, 0, 30)


def test_acquirable_respects_the_backoff_end():
    run = Run(0, 0, AVAILABLE, 1, available_at=100)
    assert not run.acquirable(99) and run.acquirable(100)
    assert not Run(0, 0, ACQUIRED, 1).acquirable(0)
