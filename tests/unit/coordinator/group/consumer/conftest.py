"""Fixtures of the consumer group tests: Kafka's own assignors
(``tests/support/assignors.py``)."""
from tests.support.assignors import assignor_oracle_classes, kafka39_assignors  # noqa: F401 (fixtures)
