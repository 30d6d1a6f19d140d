"""Fixtures of the Spark tests: ``spark`` and ``spark_harness`` (sessions), defined with the
connector helpers in ``tests/support/spark.py``; ``cluster`` (three kafkapy brokers) and the
session's ``zookeeper_server`` for the Spark standalone test, from ``tests/support/cluster.py``;
``broker``, the module's broker, keeping what it is sent however old."""
import pytest

from tests.support.broker_process import BrokerProcess
from tests.support.cluster import cluster  # noqa: F401 (fixture)
from tests.support.spark import spark, spark_harness  # noqa: F401 (fixtures)
from tests.support.zookeeper_server import zookeeper_server  # noqa: F401 (fixture)

# The pipeline's events carry their event time as the record timestamp, months before the
# run: with the default 7 days of retention the broker's first retention check, 5 minutes
# after it starts, deletes every segment, and a test still reading then finds its offsets
# out of range (the end-to-end test takes 3 to 4 minutes on a loaded machine).
KEEP_EVERYTHING = {"log.retention.ms": "-1"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """A broker shared by the tests of one module, with no time-based retention."""
    with BrokerProcess(tmp_path_factory.mktemp("broker") / "logs",
                       overrides=KEEP_EVERYTHING).start() as b:
        yield b
