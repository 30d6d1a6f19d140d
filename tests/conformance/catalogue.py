"""The conformance cases of this run: every case generated for the API versions kafkapy
advertises, split by the Kafka that answers them: ``CASES`` go to the suite's Kafka 3.9 in
ZooKeeper mode (``test_conformance``), ``KRAFT_CASES`` to Kafka 3.9 in KRaft mode with the
consumer group protocol's preview (``test_consumer_protocol``)."""
from __future__ import annotations

from kafkapy.handlers import build_registry
from tests.conformance.cases import KRAFT, ZOOKEEPER, all_cases


ADVERTISED = {s.key: (s.min_version, s.max_version) for s in build_registry().values()}


_ALL = all_cases(ADVERTISED)
CASES = [c for c in _ALL if c.reference == ZOOKEEPER]
KRAFT_CASES = [c for c in _ALL if c.reference == KRAFT]
