"""Fixtures for the Spark tests (registered in tests/spark/conftest.py): a local SparkSession,
the connector jars, the harness's Java build.

``spark`` (session): pyspark 4.0.x in local[1] mode with the UI off and one
shuffle partition, shared by every test that needs it (a JVM start costs
seconds), bound to 127.0.0.1, with Spark's Kafka connector on its class path
when ``CONNECTOR_JARS`` found it. Skipped with the reason when pyspark is not
installed (it is the ``spark`` extra: ``pip install -e '.[spark]'``) or no
``java`` is on PATH; under CI (``CI=true``) that fails instead.

``CONNECTOR_JARS``: ``KAFKAPY_SPARK_JARS`` when set, else the jars in
``<repo>/../shared/spark-jars`` (as ``kafkapy-pipeline`` finds them).
``require_connector()`` skips a test that needs them when they are missing,
except under CI (``CI=true``), where a missing connector fails the test: the
Kafka pipeline tests must run there.

``spark_harness`` (session): scripts/fetch_java_clients.sh (the jars of
kafka-clients 3.9.0, the version Spark 4.0 bundles) and
tests/spark/SparkCallSequence.java compiled against them.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.support.java_clients import JavaClient, client_jars, compiled

ROOT = Path(__file__).resolve().parents[2]
HARNESS_SOURCE = ROOT / "tests" / "spark" / "SparkCallSequence.java"
SPARK_KAFKA_CLIENTS = "3.9.0"
SHARED_JARS = ROOT.parent / "shared" / "spark-jars"


def _jars(entry: str) -> list[str]:
    path = Path(entry)
    return sorted(str(p) for p in path.glob("*.jar")) if path.is_dir() else [entry]


def connector_jars() -> tuple[str, ...]:
    named = os.environ.get("KAFKAPY_SPARK_JARS", "").strip()
    entries = [p.strip() for p in named.split(",") if p.strip()] if named else [str(SHARED_JARS)]
    return tuple(j for entry in entries for j in _jars(entry))


CONNECTOR_JARS = connector_jars()


def connector_skip_reason() -> str | None:
    reason = pyspark_skip_reason()
    if reason:
        return reason
    if not CONNECTOR_JARS:
        return (f"no Spark Kafka connector jars: {SHARED_JARS} does not exist and "
                "KAFKAPY_SPARK_JARS is not set (spark-sql-kafka-0-10, "
                "spark-token-provider-kafka-0-10, commons-pool2, kafka-clients)")
    missing = [j for j in CONNECTOR_JARS if not os.path.isfile(j)]
    return f"connector jars not found: {', '.join(missing)}" if missing else None


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require_connector() -> None:
    """Skip (fail under CI) when Spark and its Kafka connector are not all here."""
    reason = connector_skip_reason()
    if reason is None:
        return
    if in_ci():
        pytest.fail(f"CI must run the Spark Kafka tests: {reason}", pytrace=False)
    pytest.skip(reason)


def pyspark_skip_reason() -> str | None:
    try:
        import pyspark
    except ImportError:
        return ("pyspark is not installed (install the 'spark' extra: "
                ".venv/bin/pip install -e '.[spark]')")
    if not pyspark.__version__.startswith("4.0."):
        return f"pyspark {pyspark.__version__} installed; these tests need 4.0.x"
    if shutil.which("java") is None:
        return "java is not on PATH (pyspark needs a JDK 17)"
    return None


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    reason = pyspark_skip_reason()
    if reason and in_ci():
        pytest.fail(f"CI must run the Spark tests: {reason}", pytrace=False)
    if reason:
        pytest.skip(reason)
    from pyspark.sql import SparkSession
    # Spark would otherwise pick the host's non-loopback address for its driver.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    warehouse = tmp_path_factory.mktemp("spark-warehouse")
    builder = (SparkSession.builder.master("local[1]").appName("kafkapy-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "1")
               .config("spark.default.parallelism", "1")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.warehouse.dir", str(warehouse))
               .config("spark.driver.memory", "512m")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1"))
    if connector_skip_reason() is None:
        builder = builder.config("spark.jars", ",".join(CONNECTOR_JARS))
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_harness(tmp_path_factory) -> JavaClient:
    client_jars([SPARK_KAFKA_CLIENTS])
    return compiled(SPARK_KAFKA_CLIENTS, [HARNESS_SOURCE],
                    tmp_path_factory.mktemp("spark-harness-classes"))
