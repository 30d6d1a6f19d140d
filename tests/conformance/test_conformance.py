"""Differential conformance: every advertised API and version, against Kafka 3.9.

Each case sends the same request to Kafka and to kafkapy, decodes both answers with the
same kafka-python schema, normalises them (``compare.NORMALISATIONS``), makes Kafka 4.x's
changes to Kafka's (``known.KAFKA_4``) and fails with every differing field (path, Kafka's
value, ours): ``runner.run_case``.  A connection dropped by one side only is a difference at
path ``<connection>``.  Cases come from ``cases/`` for each (api, version) that kafkapy's
handler registry advertises - the same ranges its ApiVersions answers, which
``test_advertised_ranges_are_what_apiversions_answers`` checks against the live broker; the
cases of APIs Kafka 3.9 serves only in KRaft mode run in ``test_consumer_protocol``; APIs no
Kafka 3.9 serves (``known.KAFKA_4_ONLY_APIS``) have no cases.
"""
from __future__ import annotations

import pytest

from tests.conformance import report
from tests.conformance.cases import GENERATORS, Case
from tests.conformance.catalogue import ADVERTISED, CASES
from tests.conformance.known import KAFKA_4_ONLY_APIS, KNOWN_DIFFERENCES
from tests.conformance.runner import run_case


def _param(case: Case):
    reason = KNOWN_DIFFERENCES.get(case.id)
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(case, id=case.id, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_conformance(case, conformance_brokers):
    differences, kafka_tree = run_case(case, conformance_brokers)
    report.record(case, differences, kafka_tree)
    assert not differences, f"{case.id} differs from Kafka 3.9:\n" + "\n".join(
        f"  {d}" for d in differences)


def test_every_advertised_api_has_cases():
    missing = sorted(k for k in ADVERTISED if k not in GENERATORS and k not in KAFKA_4_ONLY_APIS)
    assert not missing, f"advertised APIs without conformance cases: {missing}"


def test_apis_without_a_reference_are_advertised_and_have_no_cases():
    assert set(KAFKA_4_ONLY_APIS) <= set(ADVERTISED)
    assert not set(KAFKA_4_ONLY_APIS) & set(GENERATORS)


def test_advertised_ranges_are_what_apiversions_answers(conformance_brokers):
    _, ours = conformance_brokers
    response = ours.call(18, 0, {})
    live = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert live == ADVERTISED
