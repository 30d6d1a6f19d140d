"""One case against two brokers: the same request to Kafka and to kafkapy, the answers as
normalised trees, and their differences.

``run_case(case, sides)`` runs the case's setup on each side, sends its request to both
(Kafka at ``known.stand_in_version`` when it does not serve the case's version), reads both
answers, builds both trees (``compare.to_tree``), reshapes them with the case's ``shape``
(labels for random member ids, ...), turns Kafka's into what kafkapy should answer
(``known.expected``: APIs kafkapy does not serve dropped, Kafka 4.x's changes made) and
returns the differences and Kafka's tree.  A connection dropped or left unanswered by one
side only is a difference at ``<connection>``.
"""
from __future__ import annotations

import os

from tests.conformance.cases import Case
from tests.conformance.compare import Difference, diff, to_tree
from tests.conformance.known import expected, stand_in_version


def run_case(case: Case, sides) -> tuple[list[Difference], object]:
    for side in sides:
        side.vars = {}
        if case.setup is not None:
            case.setup(side)
    versions = (stand_in_version(case.api_key, case.version), case.version)
    sent = [s.conn.send(case.api_key, v, case.build(s)) for s, v in zip(sides, versions)]
    answers = [s.conn.receive(case.api_key, v, c, case.timeout)
               for s, v, c in zip(sides, versions, sent)]
    if case.after is not None:
        for side in sides:
            case.after(side)
    kafka, ours = answers
    if kafka.failure or ours.failure:
        if kafka.failure == ours.failure:
            return [], None
        return [Difference("<connection>", kafka.failure or "answered",
                           ours.failure or "answered")], None
    trees = [to_tree(a.response, v, s.id_names()) for a, v, s in zip(answers, versions, sides)]
    if case.shape is not None:
        trees = [case.shape(t, s) for t, s in zip(trees, sides)]
    trees[0] = expected(case, trees[0])
    if os.environ.get("CONFORMANCE_VERBOSE"):
        print(f"\n{case.id}\n kafka:   {trees[0]}\n kafkapy: {trees[1]}")
    return list(diff(trees[0], trees[1])), trees[0]
