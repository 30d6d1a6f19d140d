"""Fixtures of the Spark tests: ``spark`` and ``spark_harness`` (sessions), defined with the
connector helpers in ``tests/support/spark.py``."""
from tests.support.spark import spark, spark_harness  # noqa: F401 (fixtures)
