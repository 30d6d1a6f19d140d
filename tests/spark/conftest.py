"""Fixtures for the Spark tests: a local SparkSession, the harness's Java build.

``spark`` (session): pyspark 4.0.x in local[1] mode with the UI off and one
shuffle partition, shared by every test that needs it (a JVM start costs
seconds). Skipped with the reason when pyspark is not installed (it is the
``spark`` extra: ``pip install -e '.[spark]'``) or no ``java`` is on PATH.

``spark_harness`` (session): scripts/fetch_java_clients.sh (the jars of
kafka-clients 3.9.0, the version Spark 4.0 bundles) and
tests/spark/SparkCallSequence.java compiled against them.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.clients.conftest import FETCH_SCRIPT, JavaClient, java_clients_dir

ROOT = Path(__file__).resolve().parents[2]
HARNESS_SOURCE = Path(__file__).resolve().parent / "SparkCallSequence.java"
SPARK_KAFKA_CLIENTS = "3.9.0"


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
    if reason:
        pytest.skip(reason)
    from pyspark.sql import SparkSession
    warehouse = tmp_path_factory.mktemp("spark-warehouse")
    session = (SparkSession.builder.master("local[1]").appName("kafkapy-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "1")
               .config("spark.default.parallelism", "1")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.warehouse.dir", str(warehouse))
               .config("spark.driver.memory", "512m")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_harness(tmp_path_factory) -> JavaClient:
    missing = [tool for tool in ("java", "javac") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"JDK not installed ({', '.join(missing)} not on PATH)")
    dest = java_clients_dir()
    jars = dest / SPARK_KAFKA_CLIENTS
    if not (jars / ".complete").is_file():
        env = dict(os.environ)
        env.setdefault("PIP", str(ROOT / ".venv" / "bin" / "pip"))
        proc = subprocess.run(["bash", str(FETCH_SCRIPT), str(dest)], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, (
            f"{FETCH_SCRIPT.name} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    assert (jars / f"kafka-clients-{SPARK_KAFKA_CLIENTS}.jar").is_file(), f"no kafka-clients in {jars}"
    classes = tmp_path_factory.mktemp("spark-harness-classes")
    proc = subprocess.run(["javac", "-Xlint:none", "-d", str(classes), "-cp", str(jars / "*"),
                           str(HARNESS_SOURCE)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"javac {HARNESS_SOURCE.name} failed:\n{proc.stdout}\n{proc.stderr}"
    return JavaClient(SPARK_KAFKA_CLIENTS, jars, classes)
