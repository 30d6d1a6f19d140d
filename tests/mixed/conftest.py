"""Fixtures of the mixed Kafka/kafkapy tests: ``mixed_factory`` and the session's
``zookeeper_server``.  ``Mixed`` and the helpers the tests import live in
``tests/support/mixed.py``."""
from tests.support.mixed import mixed_factory  # noqa: F401 (fixture)
from tests.support.zookeeper_server import zookeeper_server  # noqa: F401 (fixture)
