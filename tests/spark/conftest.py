"""Fixtures of the Spark tests: ``spark`` and ``spark_harness`` (sessions), defined with the
connector helpers in ``tests/support/spark.py``; ``cluster`` (three kafkapy brokers) and the
session's ``zookeeper_server`` for the Spark standalone test, from ``tests/support/cluster.py``."""
from tests.support.cluster import cluster  # noqa: F401 (fixture)
from tests.support.spark import spark, spark_harness  # noqa: F401 (fixtures)
from tests.support.zookeeper_server import zookeeper_server  # noqa: F401 (fixture)
