"""Kafka 3.9's Rate and SimpleRate over a WindowedSum (kafkapy.metrics.rate), on explicit
times: the minimum window of each, samples + 1 slots, samples purged by their last event,
negative records."""
from __future__ import annotations

import pytest

from kafkapy.metrics.rate import Rate


def test_rate_window_and_purge():
    rate = Rate(3, 1000)
    rate.record(300, 0)
    assert rate.window_size_ms(0) == 2000 and rate.measure(0) == 150
    rate.record(300, 1000)
    rate.record(300, 2500)
    assert rate.window_size_ms(2500) == 2500
    assert rate.measure(2500) == pytest.approx(900 / 2.5)
    # the first sample (its last event at 0) is reset at 3000
    assert rate.measure(3000) == pytest.approx(600 / 2.0)


def test_the_first_window_counts_as_a_whole_window():
    """SimpleRate: the elapsed time is at least one window (no burst artefact at start)."""
    rate = Rate(11, 1000, simple=True)
    rate.record(500, 0)
    assert rate.measure(0) == 500.0
    assert rate.measure(400) == 500.0
    assert rate.measure(2000) == 250.0


def test_samples_rotate_over_samples_plus_one_slots_and_old_ones_are_purged():
    rate = Rate(11, 1000, simple=True)
    for second in range(20):
        rate.record(100, second * 1000)
    # One slot more than samples (12 slots: 8..19 s); the 8 s one is 11 s old at 19 s
    # and reset, so 9..19 s remain: 1100 B over 10 s.
    assert len(rate._samples) == 12
    assert rate.measure(19_000) == 110.0
    assert rate.measure(19_500) == 1100 / 10.5
    assert rate.measure(20_000) == 100.0         # now the 9 s one is reset too
    # A sample is reset once its last event is samples * window old.
    assert rate.measure(19_000 + 11_000) == 0.0


def test_idle_time_lowers_the_rate_until_every_sample_expires():
    rate = Rate(11, 1000, simple=True)
    rate.record(11_000, 0)
    assert rate.measure(0) == 11_000.0
    assert rate.measure(5_500) == 2_000.0
    assert rate.measure(10_999) == pytest.approx(11_000 / 10.999)
    assert rate.measure(11_000) == 0.0


def test_samples_are_purged_by_their_last_event_not_their_start():
    """Kafka 3.9's SampledStat: a sample that began before the span but has events inside
    it is kept."""
    rate = Rate(3, 1000)
    rate.record(100, 0)
    rate.record(100, 900)           # same sample (started at 0), last event at 900
    assert rate.measure(3000) == pytest.approx(200 / 3.0)
    assert rate.measure(3900) == 0.0


def test_a_negative_record_takes_a_value_back():
    rate = Rate(11, 1000)
    rate.record(5, 0)
    rate.record(-1, 0)
    assert rate.measure(0) == pytest.approx(4 / 10)
    assert rate.window_size_ms(0) == 10_000
