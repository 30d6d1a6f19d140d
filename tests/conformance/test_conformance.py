"""Differential conformance: every advertised API and version, against Kafka 3.9.

Each case sends the same request to Kafka and to kafkapy, decodes both answers with the
same kafka-python schema, normalises them (``compare.NORMALISATIONS``) and fails with every
differing field (path, Kafka's value, ours).  A connection dropped by one side only is a
difference at path ``<connection>``.  Cases come from ``cases/`` for each (api, version)
that kafkapy's handler registry advertises - the same ranges its ApiVersions answers, which
``test_advertised_ranges_are_what_apiversions_answers`` checks against the live broker.
"""
from __future__ import annotations

import os

import pytest

from tests.conformance import report
from tests.conformance.cases import GENERATORS, Case
from tests.conformance.catalogue import ADVERTISED, CASES
from tests.conformance.compare import Difference, diff, to_tree
from tests.conformance.known import KNOWN_DIFFERENCES, drop_not_yet_served


def _param(case: Case):
    reason = KNOWN_DIFFERENCES.get(case.id)
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(case, id=case.id, marks=marks)


def run_case(case: Case, sides) -> tuple[list[Difference], object]:
    for side in sides:
        side.vars = {}
        if case.setup is not None:
            case.setup(side)
    sent = [s.conn.send(case.api_key, case.version, case.build(s)) for s in sides]
    answers = [s.conn.receive(case.api_key, case.version, c, case.timeout)
               for s, c in zip(sides, sent)]
    if case.after is not None:
        for side in sides:
            case.after(side)
    kafka, ours = answers
    if kafka.failure or ours.failure:
        if kafka.failure == ours.failure:
            return [], None
        return [Difference("<connection>", kafka.failure or "answered",
                           ours.failure or "answered")], None
    trees = [to_tree(a.response, case.version, s.id_names()) for a, s in zip(answers, sides)]
    trees[0] = drop_not_yet_served(case.api_key, trees[0])
    if os.environ.get("CONFORMANCE_VERBOSE"):
        print(f"\n{case.id}\n kafka:   {trees[0]}\n kafkapy: {trees[1]}")
    return list(diff(trees[0], trees[1])), trees[0]


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_conformance(case, conformance_brokers):
    differences, kafka_tree = run_case(case, conformance_brokers)
    report.record(case, differences, kafka_tree)
    assert not differences, f"{case.id} differs from Kafka 3.9:\n" + "\n".join(
        f"  {d}" for d in differences)


def test_every_advertised_api_has_cases():
    missing = sorted(k for k in ADVERTISED if k not in GENERATORS)
    assert not missing, f"advertised APIs without conformance cases: {missing}"


def test_advertised_ranges_are_what_apiversions_answers(conformance_brokers):
    _, ours = conformance_brokers
    response = ours.call(18, 0, {})
    live = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert live == ADVERTISED
